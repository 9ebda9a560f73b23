//! Pods being deleted, for `get pods`: deleted from the store but still holding
//! containers. The agent removes a pod's status file only once its containers are gone
//! (`agent::worker::terminate`), so a status file without a desired pod is a pod that
//! is still terminating; kubectl shows such a pod as `Terminating` until it is gone.

use super::output::age;
use crate::model::PodStatus;
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
}

/// The terminating pods in `namespace` (all with `None`), those `shown` left out.
pub fn list(store: &Store, namespace: Option<&str>, shown: &[Entry]) -> Vec<Terminating> {
    let names = store.status_names().unwrap_or_default();
    names
        .into_iter()
        .filter(|(ns, _)| namespace.is_none_or(|n| n == ns))
        .filter(|(ns, name)| {
            !shown
                .iter()
                .any(|e| e.object.namespace() == ns && e.object.name() == name)
        })
        .filter_map(|(namespace, name)| {
            let status = store.read_status(&namespace, &name)?;
            Some(Terminating {
                namespace,
                name,
                status,
            })
        })
        .collect()
}

impl Terminating {
    /// READY, STATUS, RESTARTS and AGE from the last status (the spec is gone).
    pub fn columns(&self, now: SystemTime) -> [String; 4] {
        let c = &self.status.container_statuses;
        let ready = c.iter().filter(|s| s.ready).count();
        let restarts: i64 = c.iter().map(|s| i64::from(s.restart_count)).sum();
        [
            format!("{ready}/{}", c.len()),
            "Terminating".into(),
            restarts.to_string(),
            age(self.status.start_time.as_deref(), now),
        ]
    }
}
