//! Service-account tokens for the cluster's pods: every projected `serviceAccountToken`
//! source of a cached cluster pod (the `kube-api-access-*` volume the ServiceAccount
//! admission gives every pod of a current cluster) gets a token from the TokenRequest
//! API, bound to the pod, refreshed as kubelet does ([`super::tokens_refresh`], one task
//! per token).
//!
//! Tokens are held in memory only ([`Tokens`], in the agent's context: `crate::agent::tokens`) and written
//! nowhere but the pod's projected volume, a tmpfs: an hourly refresh per pod must cost
//! the flash nothing. What that means when the agent or the device restarts (the
//! volume keeps its token, or starts with an empty file) is in
//! [`crate::kuberuntime::projected`] and docs/cluster.md, "Join a cluster".
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
pub use crate::agent::tokens::{key, Held, Key, TokenWant, Tokens};
use crate::model::Pod;
use smol::Task;
use std::rc::Rc;

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

    /// Makes the refreshed set `wanted`: starts the new ones, stops the others. `held`
    /// (which has every `wanted` one) are the tokens the cached pods need: those not
    /// wanted yet (the node has not admitted their pod) wait as asked for, without a
    /// request; the tokens of pods no longer cached are dropped.
    pub fn set(&mut self, wanted: &[TokenWant], held: &[TokenWant]) {
        let tokens = &self.up.ctx.tokens;
        self.tasks.retain(|(w, _)| wanted.contains(w));
        tokens.retain(|k| held.iter().any(|w| w.key() == *k));
        for w in held {
            tokens.want(w.key());
        }
        for w in wanted {
            if !self.tasks.iter().any(|(t, _)| t == w) {
                let task = crate::rt::spawn(super::tokens_refresh::run(self.up.clone(), w.clone()));
                self.tasks.push((w.clone(), task));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kuberuntime::env::NoToken;
    use crate::model::parse_pod;
    use crate::model::projected::ServiceAccountTokenProjection;
    use std::collections::BTreeSet;

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
