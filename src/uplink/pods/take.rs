//! What the pod source does with one pod the API shows: caches it when the model
//! accepts it (the sync loop then runs it), reports it refused when not, records it
//! when it is one of this node's mirror pods, leaves it out when the API shows it
//! finished before the node ran it, and forgets it when it is deleted.

use super::{refusal, PodSource};
use crate::model::{parse_pod, Pod};
use crate::store::notify::PodName;
use crate::store::Kind;
use crate::uplink::mirror;
use crate::uplink::objects::references;
use crate::uplink::objects_projection::{finished_phase, meta_str, project, to_bytes};
use crate::uplink::pods_bound::{api_ips, Refusal};
use crate::uplink::status_patch::shows_refusal;
use crate::uplink::{claims, tokens};
use serde_json::Value;

impl PodSource {
    /// Takes one pod from the API: cached when the model accepts it, refused when not,
    /// left out when the API shows it finished. Returns its name.
    pub(super) fn upsert(&mut self, obj: &Value) -> Option<PodName> {
        let (ns, name, uid) = (
            meta_str(obj, "namespace"),
            meta_str(obj, "name"),
            meta_str(obj, "uid"),
        );
        if ns.is_empty() || name.is_empty() {
            return None;
        }
        let key: PodName = (ns.to_string(), name.to_string());
        if obj["spec"]["nodeName"].as_str() != Some(self.up.node_name.as_str()) {
            // Not for this node (the selector says it cannot happen).
            self.forget(&key);
            self.bound.remove(&key);
            return None;
        }
        if mirror::seen(&self.up, &self.bound, &key, obj) {
            // One of this node's mirror pods: shown for a local pod, never run here.
            self.forget(&key);
            return Some(key);
        }
        // Not (or no longer) a mirror: a mirror seen earlier under this name is gone,
        // and the name is not a local pod's (for the kubelet API, nor for the mirror
        // task, which would otherwise delete this pod as a stale mirror).
        self.bound.update(&key, |k| k.mirror = None);
        let ips = api_ips(&obj["status"]);
        self.bound.update(&key, |k| k.api_ips = ips);
        let ran_here = self
            .bound
            .get(&key)
            .is_some_and(|k| k.cached && k.uid == uid);
        if finished_phase(obj).is_some() && !ran_here {
            // Finished before this node cached it (or another pod of the name): kubelet
            // never starts a finished pod, and there is nothing of it here to keep.
            self.forget(&key);
            self.bound.update(&key, |k| k.refusal = None);
            return Some(key);
        }
        let bytes = to_bytes(&project(Kind::Pod, obj));
        let source = format!("pod {ns}/{name}");
        match parse_pod(&source, &bytes) {
            Ok(pod) => self.cache(&key, &pod, &bytes),
            Err(e) => {
                let refusal = refusal::unsupported(&self.up.node_name, &source, e.messages, obj);
                self.refuse(&key, uid, refusal, &obj["status"]);
            }
        }
        Some(key)
    }

    /// Caches a pod the model accepted.
    fn cache(&mut self, key: &PodName, pod: &Pod, bytes: &[u8]) {
        let (ns, name, uid) = (&key.0, &key.1, &pod.metadata.uid);
        let before = self.bound.get(key).filter(|k| k.cached);
        let mut store = self.up.ctx.store.borrow_mut();
        let known = before.as_ref().is_some_and(|k| k.uid == *uid);
        if known
            && pod.metadata.deletion_timestamp.is_some()
            && !store.cluster_exists(Kind::Pod, ns, name)
        {
            // Stopped and deleted by the status task; the API's last words on it (our
            // own gracePeriodSeconds 0) must not bring it back.
            return;
        }
        match store.put_cluster(Kind::Pod, ns, name, bytes) {
            Ok(true) => {
                let what = match before {
                    None => "bound to this node",
                    Some(_) if pod.metadata.deletion_timestamp.is_some() => "being deleted",
                    Some(_) if pod.finished().is_some() => "finished (kept until deleted)",
                    Some(_) => "changed",
                };
                log::info!("uplink: pod {ns}/{name} {what} (uid {uid})");
                store.mark_pod_dirty(ns, name);
            }
            Ok(false) => {}
            Err(e) => {
                log::error!("uplink: pod {ns}/{name}: cannot cache it: {e}");
                return;
            }
        }
        drop(store);
        let (refs, wants) = (references(pod), tokens::wants(pod));
        let named = claims::named(pod);
        self.bound.update(key, |k| {
            // Another pod of the name is a new pod: judged before anything is fetched.
            k.kept &= k.uid == *uid;
            k.uid = uid.clone();
            k.cached = true;
            k.refs = refs;
            k.tokens = wants;
            k.claims = named;
            k.refusal = None;
        });
    }

    /// Reports a pod this node does not run (unless the API already shows exactly
    /// that); a cached copy is removed.
    fn refuse(&mut self, key: &PodName, uid: &str, refusal: Refusal, status: &Value) {
        self.forget(key);
        let said = shows_refusal(status, refusal.reason, &refusal.message);
        let message = refusal.message.clone();
        let new = self.bound.update(key, |k| {
            let new = k.uid != uid || k.refusal.as_ref() != Some(&refusal);
            k.uid = uid.to_string();
            k.refusal = (!said).then_some(refusal);
            new && !said
        });
        if new {
            log::warn!("uplink: pod {}/{} refused: {message}", key.0, key.1);
            self.up
                .ctx
                .store
                .borrow_mut()
                .mark_pod_dirty(&key.0, &key.1);
        }
    }

    /// A DELETED event: the pod is forgotten (when it is the uid known).
    pub(super) fn remove(&mut self, obj: &Value) {
        let key: PodName = (
            meta_str(obj, "namespace").to_string(),
            meta_str(obj, "name").to_string(),
        );
        let uid = meta_str(obj, "uid");
        let Some(known) = self.bound.get(&key).filter(|k| k.uid == uid) else {
            return;
        };
        if known.cached {
            log::info!("uplink: pod {}/{} deleted from the API", key.0, key.1);
        }
        self.forget(&key);
        self.bound.remove(&key);
        if known.mirror.is_some() {
            mirror::mark(&self.up, &key);
        }
        self.sync_objects(false);
    }

    /// Removes a pod from the cache, if it is there (its worker then stops it).
    pub(super) fn forget(&mut self, key: &PodName) {
        let cached = self.bound.update(key, |k| std::mem::take(&mut k.cached));
        if !cached {
            return;
        }
        let mut store = self.up.ctx.store.borrow_mut();
        if let Err(e) = store.remove_cluster(Kind::Pod, &key.0, &key.1) {
            log::error!(
                "uplink: pod {}/{}: cannot remove it from the cache: {e}",
                key.0,
                key.1
            );
        }
    }
}
