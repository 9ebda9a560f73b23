//! Service-account tokens for the cluster's pods: every projected `serviceAccountToken`
//! source of a cached cluster pod (the `kube-api-access-*` volume the ServiceAccount
//! admission gives every pod of a current cluster) gets a token from the TokenRequest
//! API, bound to the pod, refreshed as kubelet does ([`super::tokens_refresh`], one task
//! per token).
//!
//! Tokens are held in memory only ([`Tokens`], in the agent's context) and written
//! nowhere but the pod's projected volume, a tmpfs: an hourly refresh per pod must cost
//! the flash nothing. What that means when the agent or the device restarts (the
//! volume keeps its token, or starts with an empty file) is in
//! [`crate::kuberuntime::projected`] and the README's "Join a cluster".
//!
//! [`TokenRequests::set`] is told the wanted tokens whenever the cached pods change
//! (with the configMap and secret references): new ones get a task, the tokens of pods
//! that are gone are dropped. A token that arrives or changes state wakes the pod's
//! worker ([`Tokens::take_changed`], [`Tokens::changed`]), and the volume is updated in
//! place, the containers left running.
//!
//! Like kubelet's token cache, one token serves every source of a pod that asks for
//! the same audience and lifetime. Tokens never reach a log line.

use super::agent::Uplink;
use crate::kuberuntime::env::{no_token, NoToken};
use crate::model::pod::Source;
use crate::model::projected::ServiceAccountTokenProjection;
use crate::model::Pod;
use smol::channel::{Receiver, Sender};
use smol::Task;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

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

/// A held token: the pod's uid, the audience, the lifetime asked for.
pub type Key = (String, String, i64);

impl TokenWant {
    /// The key its token is held under.
    pub fn key(&self) -> Key {
        key(&self.uid, &self.audience, self.expiration_seconds)
    }
}

fn key(uid: &str, audience: &str, expiration_seconds: i64) -> Key {
    (uid.to_string(), audience.to_string(), expiration_seconds)
}

/// The tokens `pod` needs, sorted, one per audience and lifetime.
pub fn wants(pod: &Pod) -> Vec<TokenWant> {
    let m = &pod.metadata;
    let sa = service_account(pod);
    let mut out: Vec<TokenWant> = pod
        .spec
        .volumes
        .iter()
        .filter_map(|v| v.projected.as_ref())
        .flat_map(|p| &p.sources)
        .filter_map(|s| s.service_account_token.as_ref())
        .map(|t| TokenWant {
            namespace: m.namespace.clone(),
            pod: m.name.clone(),
            uid: m.uid.clone(),
            service_account: sa.to_string(),
            audience: t.audience.clone(),
            expiration_seconds: t.expiration(),
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The pod's service account (`default` when the spec names none, as the
/// ServiceAccount admission would set it).
fn service_account(pod: &Pod) -> &str {
    match pod.spec.service_account_name.as_str() {
        "" => "default",
        sa => sa,
    }
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
    fn want(&self, k: Key) {
        self.held.borrow_mut().entry(k).or_insert(Held::Asked);
    }

    /// Drops every token whose key `keep` refuses (their pods are gone).
    fn retain(&self, keep: impl Fn(&Key) -> bool) {
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

/// One refresh task per wanted token.
pub struct TokenRequests {
    up: Rc<Uplink>,
    tasks: Vec<(TokenWant, Task<()>)>,
}

impl TokenRequests {
    /// No tasks yet; [`TokenRequests::set`] starts them.
    pub fn new(up: Rc<Uplink>) -> TokenRequests {
        TokenRequests {
            up,
            tasks: Vec::new(),
        }
    }

    /// Makes the refreshed set `wanted`: starts the new ones, stops the others and
    /// drops their tokens.
    pub fn set(&mut self, wanted: &[TokenWant]) {
        let tokens = &self.up.ctx.tokens;
        self.tasks.retain(|(w, _)| wanted.contains(w));
        tokens.retain(|k| wanted.iter().any(|w| w.key() == *k));
        for w in wanted {
            if !self.tasks.iter().any(|(t, _)| t == w) {
                tokens.want(w.key());
                let task = crate::rt::spawn(super::tokens_refresh::run(self.up.clone(), w.clone()));
                self.tasks.push((w.clone(), task));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse_pod;

    fn pod() -> Pod {
        let text = br#"{"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "0b9c2e1a-5d6f-4c0e",
                         "annotations": {"kubernetes.io/config.source": "api"}},
            "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "i"}],
              "volumes": [
                {"name": "a", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                    {"configMap": {"name": "kube-root-ca.crt"}}]}},
                {"name": "b", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "t1", "audience": "vault"}},
                    {"serviceAccountToken": {"path": "t2", "expirationSeconds": 3607}}]}}]}}"#;
        parse_pod("t", text).unwrap()
    }

    #[test]
    fn one_token_per_audience_and_lifetime() {
        let got = wants(&pod());
        let brief: Vec<(&str, &str, i64)> = got
            .iter()
            .map(|w| {
                (
                    w.service_account.as_str(),
                    w.audience.as_str(),
                    w.expiration_seconds,
                )
            })
            .collect();
        assert_eq!(brief, [("robot", "", 3607), ("robot", "vault", 3600)]);
        assert_eq!(got[0].uid, "0b9c2e1a-5d6f-4c0e");
        assert_eq!(
            got[0].to_string(),
            "token of service account \"robot\" for pod ns/p"
        );
    }

    #[test]
    fn held_tokens_are_kept_through_failures_and_dropped_with_their_pod() {
        let p = pod();
        let source = |aud: &str, exp: i64| ServiceAccountTokenProjection {
            audience: aud.into(),
            expiration_seconds: Some(exp),
            path: "token".into(),
        };
        let t = Tokens::default();
        let k = key(&p.metadata.uid, "", 3607);
        assert_eq!(
            t.lookup(&p, &source("", 3607)),
            Err(NoToken::Later),
            "unknown"
        );
        t.set(&k, Held::Away);
        assert!(t.take_changed().is_empty(), "not wanted: not held");
        t.want(k.clone());
        assert_eq!(t.lookup(&p, &source("", 3607)), Err(NoToken::Asked));
        t.set(&k, Held::Refused("403".into()));
        assert_eq!(
            t.lookup(&p, &source("", 3607)),
            Err(NoToken::Refused("403".into()))
        );
        t.set(&k, Held::Issued(b"jwt".to_vec()));
        assert_eq!(t.take_changed(), BTreeSet::from([p.metadata.uid.clone()]));
        for after in [Held::Away, Held::Refused("x".into()), Held::Asked] {
            t.set(&k, after);
        }
        assert_eq!(t.lookup(&p, &source("", 3607)), Ok(b"jwt".to_vec()));
        assert!(
            t.take_changed().is_empty(),
            "a failure after a token changes nothing"
        );
        assert_eq!(t.lookup(&p, &source("vault", 3607)), Err(NoToken::Later));
        t.retain(|_| false);
        assert_eq!(
            t.lookup(&p, &source("", 3607)),
            Err(NoToken::Later),
            "pod gone"
        );
        let mut local = pod();
        local.metadata.annotations.clear();
        let e = t.lookup(&local, &source("", 3607)).unwrap_err();
        assert!(matches!(e, NoToken::Refused(m) if m.starts_with("no token")));
    }
}
