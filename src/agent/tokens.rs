//! The service-account tokens the uplink got for the cluster's pods, held in memory
//! only, in the agent's context: the pods' workers read them when they write projected
//! volumes ([`Tokens::lookup`]), the uplink's refresh tasks
//! (`crate::uplink::tokens`) fill them. Here so the agent needs nothing of the uplink.

use crate::kuberuntime::env::{no_token, NoToken};
use crate::model::pod::Source;
use crate::model::projected::ServiceAccountTokenProjection;
use crate::model::Pod;
use smol::channel::{Receiver, Sender};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// One token a cached pod needs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TokenWant {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The pod's uid (the token is bound to it).
    pub uid: String,
    /// The pod's service account, whose token it is.
    pub service_account: String,
    /// Empty: the API server's own audience.
    pub audience: String,
    /// The lifetime asked for (the source's `expirationSeconds`).
    pub expiration_seconds: i64,
}

impl std::fmt::Display for TokenWant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "token of service account {:?} for pod {}/{}",
            self.service_account, self.namespace, self.pod
        )?;
        if !self.audience.is_empty() {
            write!(f, " (audience {:?})", self.audience)?;
        }
        Ok(())
    }
}

impl TokenWant {
    /// The key its token is held under.
    pub fn key(&self) -> Key {
        key(&self.uid, &self.audience, self.expiration_seconds)
    }
}

/// A held token: the pod's uid, the audience, the lifetime asked for.
pub type Key = (String, String, i64);

/// The key of the token of pod `uid` for `audience` and `expiration_seconds`.
pub fn key(uid: &str, audience: &str, expiration_seconds: i64) -> Key {
    (uid.to_string(), audience.to_string(), expiration_seconds)
}

/// Where one wanted token stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// Asked for; no answer yet, and the short hold of a new pod is not over.
    Asked,
    /// None: the API server is away, or did not answer within the hold.
    Away,
    /// The API server refused it (the message says why) and never issued one.
    Refused(String),
    /// The latest token issued; kept through later failures (the pod runs on with it).
    Issued(Vec<u8>),
}

/// The tokens the uplink holds for the cluster's pods, in memory only (at most
/// [`crate::kuberuntime::projected::MAX_TOKEN`] each, a few per pod), and the pods
/// whose tokens changed since the sync loop last looked.
pub struct Tokens {
    held: RefCell<BTreeMap<Key, Held>>,
    changed: RefCell<BTreeSet<String>>,
    wake: (Sender<()>, Receiver<()>),
}

impl Default for Tokens {
    fn default() -> Tokens {
        Tokens {
            held: RefCell::default(),
            changed: RefCell::default(),
            wake: smol::channel::bounded(1),
        }
    }
}

impl Tokens {
    /// What a projected `source` of `pod` shows now (see [`NoToken`]). A pod the uplink
    /// does not know (yet) is told [`NoToken::Later`]: it runs, its token comes later.
    pub fn lookup(
        &self,
        pod: &Pod,
        source: &ServiceAccountTokenProjection,
    ) -> Result<Vec<u8>, NoToken> {
        if pod.source() != Source::Api {
            return Err(NoToken::Refused(no_token(pod)));
        }
        let k = key(&pod.metadata.uid, &source.audience, source.expiration());
        match self.held.borrow().get(&k) {
            Some(Held::Issued(t)) => Ok(t.clone()),
            Some(Held::Asked) => Err(NoToken::Asked),
            Some(Held::Refused(msg)) => Err(NoToken::Refused(msg.clone())),
            Some(Held::Away) | None => Err(NoToken::Later),
        }
    }

    /// Records where `k` stands. An issued token is replaced only by a newer one, and
    /// a token no longer wanted is not brought back. The pod is woken on a change.
    pub fn set(&self, k: &Key, now: Held) {
        let mut held = self.held.borrow_mut();
        let Some(slot) = held.get_mut(k) else { return };
        let keep = matches!(slot, Held::Issued(_)) && !matches!(now, Held::Issued(_));
        if keep || *slot == now {
            return;
        }
        *slot = now;
        self.changed.borrow_mut().insert(k.0.clone());
        let _ = self.wake.0.try_send(());
    }

    /// Ends the short wait of a new pod: `k` becomes `now` unless it is past
    /// [`Held::Asked`] already.
    pub fn hold_over(&self, k: &Key, now: Held) {
        if self.held.borrow().get(k) == Some(&Held::Asked) {
            self.set(k, now);
        }
    }

    /// Starts holding `k` (as [`Held::Asked`]) unless it is held already.
    pub fn want(&self, k: Key) {
        self.held.borrow_mut().entry(k).or_insert(Held::Asked);
    }

    /// Drops every token whose key `keep` refuses (their pods are gone).
    pub fn retain(&self, keep: impl Fn(&Key) -> bool) {
        self.held.borrow_mut().retain(|k, _| keep(k));
    }

    /// The uids of the pods whose tokens changed since the last call.
    pub fn take_changed(&self) -> BTreeSet<String> {
        std::mem::take(&mut self.changed.borrow_mut())
    }

    /// Returns once a token changed (then [`Tokens::take_changed`] says whose).
    pub async fn changed(&self) {
        let _ = self.wake.1.recv().await;
    }
}
