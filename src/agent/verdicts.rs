//! The node's admission verdicts on its pods, by uid, for the uplink: it fetches what a
//! cluster pod references (configMaps, secrets, service-account tokens, claims) only
//! for pods the node admitted, never for one it refused. A refusal is recorded where
//! admission refuses ([`super::admission::refused`]), an admission where a pod's worker
//! starts (only an admitted pod gets one). The uplink waits on [`Verdicts::changed`].
//! Here so the agent needs nothing of the uplink.

use smol::channel::{Receiver, Sender};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// Admitted (`true`) or refused (`false`), by pod uid.
pub struct Verdicts {
    judged: RefCell<BTreeMap<String, bool>>,
    wake: (Sender<()>, Receiver<()>),
}

impl Default for Verdicts {
    fn default() -> Verdicts {
        Verdicts {
            judged: RefCell::default(),
            wake: smol::channel::bounded(1),
        }
    }
}

impl Verdicts {
    /// Records the node's word on pod `uid`; the uplink is woken when it changed.
    pub fn set(&self, uid: &str, admitted: bool) {
        let before = self.judged.borrow_mut().insert(uid.to_string(), admitted);
        if before != Some(admitted) {
            let _ = self.wake.0.try_send(());
        }
    }

    /// The node's word on pod `uid`: `None` while it has not judged it.
    pub fn get(&self, uid: &str) -> Option<bool> {
        self.judged.borrow().get(uid).copied()
    }

    /// Forgets the pods `keep` refuses (gone from the node).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.judged.borrow_mut().retain(|uid, _| keep(uid));
    }

    /// Returns once a verdict changed since the last call.
    pub async fn changed(&self) {
        let _ = self.wake.1.recv().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_verdict_wakes_once() {
        let v = Verdicts::default();
        assert_eq!(v.get("u1"), None);
        v.set("u1", false);
        v.set("u1", false);
        assert_eq!(v.get("u1"), Some(false));
        crate::rt::block_on(v.changed());
        assert!(v.wake.1.is_empty(), "the same word twice wakes once");
        v.set("u1", true);
        assert_eq!(v.get("u1"), Some(true));
        assert!(!v.wake.1.is_empty());
        v.retain(|u| u != "u1");
        assert_eq!(v.get("u1"), None);
    }
}
