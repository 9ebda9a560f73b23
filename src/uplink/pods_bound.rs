//! What the node knows of each pod bound to it, shared by the pod source (which writes
//! it) and the status task (which reads it): whether the pod is cached (run here), what
//! it references and which service-account tokens it needs, whether it is refused and
//! what the API is still to be told, and the pod IPs the API shows (`podIPs` merge by
//! `ip` in a strategic merge patch, so a pod whose IP changed must name the one to
//! delete, or the API would hold two IPs of one family and refuse the patch). One map
//! for all of it: each map type costs code.
//! The node's mirror pods ([`super::mirror`]) are bound pods too: their entries say
//! what the API shows of them, and they are never cached.

use super::objects::ObjectRef;
use super::tokens::TokenWant;
use crate::store::notify::PodName;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

/// Why a bound pod is not run, and what the API is to show for it: admission's one
/// refusal type (the uplink's own refusals, a name a local pod has, are of its shape).
pub use crate::node::admit::Refusal;

/// One bound pod.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// The pod's uid.
    pub uid: String,
    /// In the store's cluster tree: the node runs it.
    pub cached: bool,
    /// Cached when the agent started: what it references is kept (and watched) while
    /// the node judges it again.
    pub kept: bool,
    /// The configMaps and secrets the cached pod references (sorted, no duplicates).
    pub refs: Vec<ObjectRef>,
    /// The tokens the cached pod's projected volumes need (sorted, no duplicates).
    pub tokens: Vec<TokenWant>,
    /// The PersistentVolumeClaims the cached pod's volumes name (in its namespace).
    pub claims: Vec<String>,
    /// Refused, and not yet reported so.
    pub refusal: Option<Refusal>,
    /// The pod IPs in the API's last copy.
    pub api_ips: Vec<String>,
    /// A mirror pod (annotation `kubernetes.io/config.mirror`): what the API shows.
    pub mirror: Option<MirrorSeen>,
    /// The node's status (a hash of its patch) sent again because the API showed
    /// another writer's; cleared when the API shows the node's.
    pub resent: Option<u64>,
}

/// What the API shows of one of this node's mirror pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorSeen {
    /// The mirror annotation: the hash of the local pod it was made from.
    pub hash: String,
    /// `deletionTimestamp` set (someone deleted it with a grace period).
    pub deleting: bool,
}

/// The bound pods by namespace and name.
#[derive(Default)]
pub struct Bound {
    pods: RefCell<BTreeMap<PodName, Known>>,
    /// Lists of the node's pods done (0: the API's pods are not known yet).
    lists: Cell<u32>,
}

impl Bound {
    /// The entry of `name`, if any.
    pub fn get(&self, name: &PodName) -> Option<Known> {
        self.pods.borrow().get(name).cloned()
    }

    /// Changes (or makes) the entry of `name`; returns what `f` returns.
    pub fn update<T>(&self, name: &PodName, f: impl FnOnce(&mut Known) -> T) -> T {
        f(self.pods.borrow_mut().entry(name.clone()).or_default())
    }

    /// Forgets `name`; returns its entry.
    pub fn remove(&self, name: &PodName) -> Option<Known> {
        self.pods.borrow_mut().remove(name)
    }

    /// A list of the node's pods was taken in.
    pub fn listed(&self) {
        self.lists.set(self.lists.get().wrapping_add(1).max(1));
    }

    /// How many lists were taken in (0: none yet; then changes with each).
    pub fn lists(&self) -> u32 {
        self.lists.get()
    }

    /// The names of the mirror pods.
    pub fn mirrors(&self) -> Vec<PodName> {
        let map = self.pods.borrow();
        map.iter()
            .filter(|(_, k)| k.mirror.is_some())
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// The refusal of `name` was sent for `uid`: forget it (unless the pod changed).
    pub fn refusal_sent(&self, name: &PodName, uid: &str) {
        let mut map = self.pods.borrow_mut();
        if let Some(k) = map.get_mut(name).filter(|k| k.uid == uid) {
            k.refusal = None;
        }
    }

    /// The names of every entry.
    pub fn names(&self) -> Vec<PodName> {
        self.pods.borrow().keys().cloned().collect()
    }

    /// The names of the cached pods.
    pub fn cached(&self) -> Vec<PodName> {
        let map = self.pods.borrow();
        map.iter()
            .filter(|(_, k)| k.cached)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Everything the fetched pods reference, sorted, without duplicates.
    pub fn references(&self, verdict: impl Fn(&str) -> Option<bool>) -> Vec<ObjectRef> {
        let map = self.pods.borrow();
        let mut all: Vec<ObjectRef> = map
            .values()
            .filter(|k| fetched(k, &verdict))
            .flat_map(|k| k.refs.iter().cloned())
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// Every claim the fetched pods name, as (namespace, claim), sorted, no duplicates.
    pub fn claims(&self, verdict: impl Fn(&str) -> Option<bool>) -> Vec<(String, String)> {
        let map = self.pods.borrow();
        let mut all: Vec<(String, String)> = map
            .iter()
            .filter(|(_, k)| fetched(k, &verdict))
            .flat_map(|(n, k)| k.claims.iter().map(|c| (n.0.clone(), c.clone())))
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// Every token the fetched pods need, sorted.
    pub fn tokens(&self, verdict: impl Fn(&str) -> Option<bool>) -> Vec<TokenWant> {
        let map = self.pods.borrow();
        let mut all: Vec<TokenWant> = map
            .values()
            .filter(|k| fetched(k, &verdict))
            .flat_map(|k| k.tokens.iter().cloned())
            .collect();
        all.sort();
        all
    }

    /// Whether a pod of `uid` is bound.
    pub fn has_uid(&self, uid: &str) -> bool {
        self.pods.borrow().values().any(|k| k.uid == uid)
    }
}

/// Whether what `k` references is fetched, by the node's `verdict` on its uid: for a
/// cached pod the node admitted, or one kept from before the start that the node has
/// not judged again yet; never for a pod the node refused, nor for a new pod before the
/// node has judged it.
fn fetched(k: &Known, verdict: impl Fn(&str) -> Option<bool>) -> bool {
    k.cached && verdict(&k.uid).unwrap_or(k.kept)
}

/// A verdict for every pod: admitted (what the cached pods would need, judged or not).
pub fn all_admitted(_: &str) -> Option<bool> {
    Some(true)
}

/// The pod IPs in an API object's `status`.
pub fn api_ips(status: &Value) -> Vec<String> {
    status["podIPs"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| i["ip"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Kind;
    use serde_json::json;

    fn name(n: &str) -> PodName {
        ("d".to_string(), n.to_string())
    }

    fn cm(n: &str) -> ObjectRef {
        ObjectRef {
            kind: Kind::ConfigMap,
            namespace: "d".into(),
            name: n.into(),
        }
    }

    #[test]
    fn references_of_cached_pods_only_once_each() {
        let b = Bound::default();
        b.update(&name("a"), |k| {
            k.cached = true;
            k.refs = vec![cm("x"), cm("y")];
        });
        b.update(&name("b"), |k| {
            k.cached = true;
            k.refs = vec![cm("y")];
        });
        b.update(&name("refused"), |k| k.refs = vec![cm("z")]);
        assert_eq!(b.references(all_admitted), [cm("x"), cm("y")]);
        assert_eq!(b.cached(), [name("a"), name("b")]);
        assert_eq!(b.names().len(), 3);
    }

    #[test]
    fn only_pods_the_node_admitted_or_kept_from_before_are_fetched_for() {
        let b = Bound::default();
        let pod = |n: &str, kept: bool, r: &str| {
            b.update(&name(n), |k| {
                k.uid = n.into();
                k.cached = true;
                k.kept = kept;
                k.refs = vec![cm(r)];
                k.claims = vec![r.into()];
            })
        };
        pod("new", false, "a");
        pod("admitted", false, "b");
        pod("refused", false, "c");
        pod("kept", true, "d");
        pod("kept-refused", true, "e");
        let verdict = |uid: &str| match uid {
            "admitted" => Some(true),
            "refused" | "kept-refused" => Some(false),
            _ => None,
        };
        assert_eq!(b.references(verdict), [cm("b"), cm("d")]);
        let claims: Vec<String> = b.claims(verdict).into_iter().map(|c| c.1).collect();
        assert_eq!(claims, ["b", "d"]);
        assert!(b.has_uid("new") && !b.has_uid("other"));
    }

    #[test]
    fn a_refusal_is_kept_until_sent_for_its_uid() {
        let b = Bound::default();
        b.update(&name("p"), |k| {
            k.uid = "u1".into();
            k.refusal = Some(Refusal {
                reason: "R",
                message: "m".into(),
            });
        });
        b.refusal_sent(&name("p"), "u0");
        assert!(
            b.get(&name("p")).unwrap().refusal.is_some(),
            "another uid's answer"
        );
        b.refusal_sent(&name("p"), "u1");
        assert!(b.get(&name("p")).unwrap().refusal.is_none());
    }

    #[test]
    fn pod_ips_from_the_api_status() {
        assert_eq!(
            api_ips(&json!({"podIPs": [{"ip": "10.0.0.1"}]})),
            ["10.0.0.1"]
        );
        assert!(api_ips(&json!({"phase": "Pending"})).is_empty());
    }
}
