//! How the API's copy of a bound pod's status stands to what the node would send: a
//! list sends again only the statuses the API does not show, and a watch event showing
//! another writer's status (the node lifecycle controller's) is answered once.

use super::PodSource;
use crate::model::Object;
use crate::store::notify::PodName;
use crate::store::Kind;
use crate::uplink::status_patch::{shows_status, status_patch};
use serde_json::Value;
use std::hash::{Hash, Hasher};

/// How the API's copy of a pod's status stands to the node's.
enum Shown {
    /// It shows what the node would send.
    Latest,
    /// It does not; the hash of what the node would send.
    Lags(u64),
    /// Not a status the node's status file says (see [`PodSource::shown`]).
    Unsure,
}

impl PodSource {
    /// Whether the API's `status` of cached pod `name` is what the node would send: the
    /// pod runs as an ordinary cluster pod (not being deleted, no local pod of its name)
    /// and its status file says what the API shows.
    pub(super) fn shows_latest(&self, name: &PodName, status: &Value) -> bool {
        matches!(self.shown(name, status), Shown::Latest)
    }

    /// How the API's `status` of pod `name` stands to the node's: only an ordinary
    /// cached pod's can be compared (a refused, terminating or shadowed pod's status is
    /// not the status file's, and a pod not run yet has none).
    fn shown(&self, name: &PodName, status: &Value) -> Shown {
        let known = self.bound.get(name).unwrap_or_default();
        let mut store = self.up.ctx.store.borrow_mut();
        let (ns, pod) = (&name.0, &name.1);
        let Some(Object::Pod(cached)) = store.cluster_get(Kind::Pod, ns, pod) else {
            return Shown::Unsure;
        };
        if known.refusal.is_some()
            || cached.terminating()
            || store.cluster_pod_shadowed(ns, pod)
            || store.local_pod_exists(ns, pod)
        {
            return Shown::Unsure;
        }
        let Some(st) = store.read_status(ns, pod) else {
            return Shown::Unsure;
        };
        let patch = status_patch(&cached.metadata.uid, &st, &known.api_ips);
        if shows_status(status, &patch) {
            return Shown::Latest;
        }
        let mut h = std::hash::DefaultHasher::new();
        patch.to_string().hash(&mut h);
        Shown::Lags(h.finish())
    }

    /// A watch event's pod whose status another writer changed (the node lifecycle
    /// controller marks a node's pods not Ready while it thinks the node is gone, and
    /// the node may have listed before it did): the node's status is sent again. Once
    /// per difference: a status the API never shows as sent must not become a loop of
    /// patches and events.
    pub(super) fn answer_other_writers(&self, name: &PodName, status: &Value) {
        match self.shown(name, status) {
            Shown::Latest => self.bound.update(name, |k| k.resent = None),
            Shown::Lags(hash) => {
                if self
                    .bound
                    .update(name, |k| k.resent.replace(hash) != Some(hash))
                {
                    log::info!(
                        "uplink: pod {}/{}: the API shows a status the node did not send; \
                         sending the node's again",
                        name.0,
                        name.1
                    );
                    let mut store = self.up.ctx.store.borrow_mut();
                    store.mark_pod_dirty(&name.0, &name.1);
                }
            }
            Shown::Unsure => {}
        }
    }
}
