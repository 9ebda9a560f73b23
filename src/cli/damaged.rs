//! Pods whose desired file is there but cannot be read (torn, bit-flipped, edited
//! wrong), for `get pods`: the store leaves them out of its list, yet the pod still
//! exists (its file is its only record, and its containers keep running; see the
//! docs/operations.md, "State directory"). Such a pod is listed with STATUS `DesiredFileDamaged`
//! (kubectl shows a pod's status reason in that column), never as `Terminating`: it was
//! not deleted. The agent restores the file when it holds the pod's last good spec, so
//! this is mostly seen while the agent is stopped or started with the file damaged.

use super::output::age;
use super::pod_summary::status_columns;
use crate::model::{PodStatus, Reason};
use crate::store::{DamagedPod, Store};
use std::time::SystemTime;

/// A damaged pod and its last status.
pub struct Damaged {
    /// The file and why it cannot be used.
    pub file: DamagedPod,
    /// The last status the agent wrote, if any.
    pub status: Option<PodStatus>,
}

/// The damaged pods in `namespace` (all with `None`).
pub fn list(store: &Store, namespace: Option<&str>) -> Vec<Damaged> {
    store
        .damaged_local_pods()
        .into_iter()
        .filter(|d| namespace.is_none_or(|n| n == d.namespace))
        .map(|file| Damaged {
            status: store.read_status(&file.namespace, &file.name),
            file,
        })
        .collect()
}

impl Damaged {
    /// READY, STATUS, RESTARTS and AGE (from the last status: the spec is unreadable).
    pub fn columns(&self, now: SystemTime) -> [String; 4] {
        let started = self.status.as_ref().and_then(|s| s.start_time.as_deref());
        let [ready, restarts] = status_columns(self.status.as_ref());
        let word = Reason::DesiredFileDamaged.as_str().to_string();
        [ready, word, restarts, age(started, now)]
    }

    /// The error for `get pod NS/NAME` of this pod: what is wrong and how to fix it.
    pub fn message(&self) -> String {
        let f = &self.file;
        format!(
            "pod {}/{}: its desired file {} cannot be read: {}; fix it with `tinylet apply`, \
             or remove the pod with `tinylet delete pod {}/{}`",
            f.namespace,
            f.name,
            f.path.display(),
            f.reason,
            f.namespace,
            f.name
        )
    }
}
