//! What the uplink's mirror pods are made from (feature `uplink`): each time the agent
//! reads the local pods, a digest of each is handed to [`super::notify`], which marks
//! those added, changed or removed. A local-only build has no mirror pods and carries
//! none of this.

use super::digest::fnv1a128;
use super::layout;
use super::notify::PodName;
use super::state_files::Damaged;
use super::{Entry, Store};
use crate::model::{Object, Pod};
use std::collections::BTreeMap;

/// The digest of a pod as JSON (fields in declaration order, maps sorted): the same pod
/// gives the same digest on every read, a pod changed in any way another one.
pub fn pod_digest(pod: &Pod) -> u128 {
    fnv1a128(&serde_json::to_vec(pod).unwrap_or_default())
}

/// A digest as the mirror pods carry it (`kubernetes.io/config.hash`, 32 hex digits
/// as kubelet's), so the uplink and the kubelet API compare the same text.
pub fn hash_text(digest: u128) -> String {
    format!("{digest:032x}")
}

impl Store {
    /// Tells [`super::notify`] the local pods the agent just read (a digest of each),
    /// when someone listens; `damaged` state files keep their pod's last digest.
    pub(super) fn note_local_pods(&mut self, local: &[Entry], damaged: &[Damaged]) {
        if !self.notify.is_subscribed() {
            return;
        }
        let now = local
            .iter()
            .filter_map(|e| match &e.object {
                Object::Pod(p) => {
                    let m = &p.metadata;
                    Some(((m.namespace.clone(), m.name.clone()), pod_digest(p)))
                }
                _ => None,
            })
            .collect();
        let damaged: Vec<PodName> = damaged
            .iter()
            .filter_map(|d| layout::parse_file_name(&d.file))
            .map(|(ns, name)| (ns.to_string(), name.to_string()))
            .collect();
        self.notify.set_local(now, &damaged);
    }

    /// The local pods as the agent last read them, each with a digest of its content
    /// (changes when the pod does); `None` before the agent's first read, or when
    /// nobody subscribed to [`Store::subscribe_status`].
    pub fn local_pod_digests(&self) -> Option<&BTreeMap<PodName, u128>> {
        self.notify.local()
    }
}
