//! kubelet's kuberuntime, reduced: pods to CRI sandbox/container configs, status back.
pub mod agent_mark;
pub mod dns;
pub mod downward_api;
pub mod env;
pub mod etc_hosts;
pub mod expand;
pub mod hash;
#[cfg(test)]
mod inotify_changes;
pub mod labels;
pub mod non_root;
pub mod observed;
pub mod runtime_handler;
pub mod sandbox;
pub mod security;
pub mod service_env;

use crate::model::Reason;

/// Why a pod or container could not be set up, in kubelet's terms: `reason` is what the
/// container's waiting state shows (`CreateContainerConfigError`, `ErrImagePull`, ...),
/// `message` the detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncError {
    /// What the container's waiting state shows.
    pub reason: Reason,
    /// The detail, naming what failed.
    pub message: String,
}

impl SyncError {
    /// An error with `reason` and `message`.
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        SyncError {
            reason,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

impl std::error::Error for SyncError {}
pub mod atomic_writer;
pub mod beneath;
pub mod bind;
pub mod container;
pub mod mountinfo;
pub mod ownership;
pub mod pod_dir;
pub mod projected;
pub mod resources;
pub mod status;
pub mod teardown;
pub mod termination;
pub mod time;
pub mod tmpfs;
pub mod volumes;
