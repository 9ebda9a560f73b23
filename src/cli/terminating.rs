//! Pods being deleted, for `get pods` and `get pod NS/NAME`: deleted from the store but
//! still holding containers. The agent removes a pod's status file only once its
//! containers are gone (`agent::worker::terminate`), so a status file without a desired
//! pod file is a pod that is still terminating; kubectl shows such a pod as
//! `Terminating` until it is gone. A desired file that is there but damaged is not a
//! deletion (see [`super::damaged`]).
//!
//! When the agent began stopping the pod it recorded the pod as it was, with
//! `metadata.deletionTimestamp` (`store::deletion`): `-o json|yaml` shows that, as
//! kubectl shows a pod being deleted. In the moment between the delete and the agent
//! noticing it, only the name and the last status are known.

use super::damaged::Damaged;
use super::output::age;
use super::pod_summary::status_columns;
use crate::model::{Pod, PodStatus};
use crate::store::{Entry, Store};
use std::time::SystemTime;

/// A pod whose containers are still being stopped.
pub struct Terminating {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The last status the agent wrote.
    pub status: PodStatus,
    /// The pod as it was when its deletion began, once the agent recorded it.
    pub pod: Option<Pod>,
}

/// The terminating pods in `namespace` (all with `None`): those `shown` (listed from
/// the store) or `damaged` (a desired file is there) left out.
pub fn list(
    store: &Store,
    namespace: Option<&str>,
    shown: &[Entry],
    damaged: &[Damaged],
) -> Vec<Terminating> {
    let names = store.status_names().unwrap_or_default();
    names
        .into_iter()
        .filter(|(ns, _)| namespace.is_none_or(|n| n == ns))
        .filter(|(ns, name)| {
            !shown
                .iter()
                .any(|e| e.object.namespace() == ns && e.object.name() == name)
                && !damaged
                    .iter()
                    .any(|d| &d.file.namespace == ns && &d.file.name == name)
        })
        .filter_map(|(namespace, name)| find(store, &namespace, &name))
        .collect()
}

/// Pod `ns/name` as terminating, when it has a status file; the caller has found no
/// desired pod of that name.
pub fn find(store: &Store, ns: &str, name: &str) -> Option<Terminating> {
    let status = store.read_status(ns, name)?;
    Some(Terminating {
        namespace: ns.to_string(),
        name: name.to_string(),
        status,
        pod: store.deleted_pod(ns, name),
    })
}

impl Terminating {
    /// READY, STATUS, RESTARTS and AGE from the last status.
    pub fn columns(&self, now: SystemTime) -> [String; 4] {
        let created = self
            .pod
            .as_ref()
            .and_then(|p| p.metadata.creation_timestamp.as_deref())
            .or(self.status.start_time.as_deref());
        let [ready, restarts] = status_columns(Some(&self.status));
        [ready, "Terminating".into(), restarts, age(created, now)]
    }

    /// The pod for `-o json|yaml`: the recorded one (with its deletionTimestamp), else
    /// its name alone; with the last status either way.
    pub fn to_pod(&self) -> Pod {
        let mut pod = self.pod.clone().unwrap_or_else(|| {
            let mut p = Pod {
                kind: "Pod".into(),
                api_version: "v1".into(),
                ..Pod::default()
            };
            p.metadata.namespace = self.namespace.clone();
            p.metadata.name = self.name.clone();
            p
        });
        pod.status = Some(self.status.clone());
        pod
    }
}
