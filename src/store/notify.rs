//! What the store tells the uplink without being polled: which pods' status files were
//! written or removed since it last asked (a set of dirty pods, not a queue: the uplink
//! reads each pod's latest status when it sends, so a pod whose status changed ten times
//! while the API server was away costs one request), which cluster pods have finished
//! terminating, which cluster pods are shadowed by a local pod of the same name, and
//! which local pods were added, changed or removed (a digest of each as the agent last
//! read them: the uplink shows local pods in the cluster as mirror pods).
//!
//! Nothing is kept until someone subscribes ([`Notify::subscribe`]): a local-only agent
//! pays nothing. The subscriber is woken through a channel of capacity one, so any
//! number of changes between two looks cost one wake-up.

use smol::channel::{Receiver, Sender};
#[cfg(feature = "uplink")]
use std::collections::BTreeMap;
use std::collections::BTreeSet;

/// A pod by namespace and name (status files are per name, whatever the source).
pub type PodName = (String, String);

/// What pods the other parts of the agent told the store about: terminated ones, and names
/// shadowed by local pods.
#[derive(Default)]
pub struct Notify {
    wake: Option<Sender<()>>,
    dirty: BTreeSet<PodName>,
    /// Uids of cluster pods whose worker stopped and removed everything of them.
    terminated: BTreeSet<String>,
    /// Cluster pods not run because a local pod has their namespace and name.
    shadowed: BTreeSet<PodName>,
    /// The local pods as the agent last read them, by digest of their content; `None`
    /// before the first read.
    #[cfg(feature = "uplink")]
    local: Option<BTreeMap<PodName, u128>>,
}

impl Notify {
    /// Starts keeping the dirty set; the receiver is woken after each change.
    pub fn subscribe(&mut self) -> Receiver<()> {
        let (tx, rx) = smol::channel::bounded(1);
        self.wake = Some(tx);
        rx
    }

    /// Pod `ns/name` needs its status sent again.
    pub fn mark(&mut self, ns: &str, name: &str) {
        let Some(wake) = &self.wake else { return };
        if self.dirty.insert((ns.to_string(), name.to_string())) {
            let _ = wake.try_send(());
        }
    }

    /// The dirty pods since the last call (the set is emptied).
    pub fn take(&mut self) -> BTreeSet<PodName> {
        std::mem::take(&mut self.dirty)
    }

    /// A cluster pod's termination finished (nothing of it is left on the runtime).
    pub fn terminated(&mut self, ns: &str, name: &str, uid: &str) {
        self.terminated.insert(uid.to_string());
        self.mark(ns, name);
    }

    /// Whether the pod `uid` was marked terminated.
    pub fn is_terminated(&self, uid: &str) -> bool {
        self.terminated.contains(uid)
    }

    /// Forgets uids that are no longer in the cache (`keep` says which are).
    pub fn retain_terminated(&mut self, keep: impl Fn(&str) -> bool) {
        self.terminated.retain(|u| keep(u));
    }

    /// The cluster pods shadowed now; those whose state changed are marked dirty.
    pub fn set_shadowed(&mut self, now: BTreeSet<PodName>) {
        let changed: Vec<PodName> = self.shadowed.symmetric_difference(&now).cloned().collect();
        self.shadowed = now;
        for (ns, name) in changed {
            self.mark(&ns, &name);
        }
    }

    /// Whether the name `ns/name` is taken by a local pod.
    pub fn is_shadowed(&self, ns: &str, name: &str) -> bool {
        self.shadowed.contains(&(ns.to_string(), name.to_string()))
    }
}

/// The local pods' digests ([`super::local_pods`]).
#[cfg(feature = "uplink")]
impl Notify {
    /// Whether anyone listens (else [`Notify::set_local`]'s digests need not be made).
    pub fn is_subscribed(&self) -> bool {
        self.wake.is_some()
    }

    /// The local pods now, by digest; those added, changed or removed since the last
    /// call are marked. `damaged` names keep their last digest: a pod whose file is
    /// damaged keeps running, it has not changed.
    pub fn set_local(&mut self, mut now: BTreeMap<PodName, u128>, damaged: &[PodName]) {
        if self.wake.is_none() {
            return;
        }
        let before = self.local.take().unwrap_or_default();
        for name in damaged {
            if let Some(d) = before.get(name) {
                now.insert(name.clone(), *d);
            }
        }
        let changed: Vec<PodName> = before
            .keys()
            .chain(now.keys())
            .filter(|n| before.get(*n) != now.get(*n))
            .cloned()
            .collect();
        self.local = Some(now);
        for (ns, name) in changed {
            self.mark(&ns, &name);
        }
    }

    /// The digests of the local pods, `None` before the agent's first read.
    pub fn local(&self) -> Option<&BTreeMap<PodName, u128>> {
        self.local.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> PodName {
        ("default".to_string(), n.to_string())
    }

    #[test]
    fn nothing_is_kept_without_a_subscriber() {
        let mut n = Notify::default();
        n.mark("default", "a");
        assert!(n.take().is_empty());
    }

    #[test]
    fn a_set_not_a_queue_and_one_wake_for_many_changes() {
        let mut n = Notify::default();
        let rx = n.subscribe();
        for _ in 0..10 {
            n.mark("default", "a");
            n.mark("default", "b");
        }
        assert_eq!(rx.len(), 1, "one wake-up pending");
        assert!(rx.try_recv().is_ok());
        assert_eq!(n.take(), BTreeSet::from([name("a"), name("b")]));
        assert!(n.take().is_empty());
        n.mark("default", "a");
        assert_eq!(rx.len(), 1, "woken again after the set was taken");
    }

    #[test]
    fn termination_marks_and_is_remembered_until_forgotten() {
        let mut n = Notify::default();
        let _rx = n.subscribe();
        n.terminated("default", "a", "uid-a");
        assert!(n.is_terminated("uid-a"));
        assert_eq!(n.take(), BTreeSet::from([name("a")]));
        n.retain_terminated(|u| u != "uid-a");
        assert!(!n.is_terminated("uid-a"));
    }

    #[test]
    fn shadowing_changes_mark_the_pods_concerned() {
        let mut n = Notify::default();
        let _rx = n.subscribe();
        n.set_shadowed(BTreeSet::from([name("a")]));
        assert!(n.is_shadowed("default", "a"));
        assert_eq!(n.take(), BTreeSet::from([name("a")]));
        n.set_shadowed(BTreeSet::from([name("a")]));
        assert!(n.take().is_empty(), "no change, nothing to send");
        n.set_shadowed(BTreeSet::from([name("b")]));
        assert_eq!(n.take(), BTreeSet::from([name("a"), name("b")]));
    }

    #[cfg(feature = "uplink")]
    #[test]
    fn local_pods_added_changed_or_removed_are_marked_damaged_ones_kept() {
        let mut n = Notify::default();
        n.set_local(BTreeMap::from([(name("a"), 1)]), &[]);
        assert!(n.local().is_none(), "nothing kept without a subscriber");
        let _rx = n.subscribe();
        n.set_local(BTreeMap::from([(name("a"), 1), (name("b"), 2)]), &[]);
        assert_eq!(n.take(), BTreeSet::from([name("a"), name("b")]));
        n.set_local(BTreeMap::from([(name("a"), 1), (name("b"), 2)]), &[]);
        assert!(n.take().is_empty(), "unchanged");
        n.set_local(BTreeMap::from([(name("a"), 3)]), &[]);
        assert_eq!(n.take(), BTreeSet::from([name("a"), name("b")]));
        n.set_local(BTreeMap::new(), &[name("a")]);
        assert!(n.take().is_empty(), "a damaged file is no change");
        assert_eq!(n.local().unwrap().get(&name("a")), Some(&3));
    }
}
