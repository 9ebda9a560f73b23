//! What the runtime says about one pod, in the shape the agent reasons with: its
//! sandboxes and containers with the facts kubelet reads from CRI statuses (state, exit
//! code, times, spec hash and restart count from our annotations).
//!
//! Built from `PodSandboxStatus`/`ContainerStatus` answers; every field tolerates a
//! runtime that leaves things out (missing metadata, unknown enum numbers, bad numbers in
//! annotations) without panicking.

use super::labels;
use crate::cri::pb;

/// The runtime's view of one sandbox.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObservedSandbox {
    /// Its runtime id.
    pub id: String,
    /// It is ready (not stopped).
    pub ready: bool,
    /// Its attempt number.
    pub attempt: u32,
    /// Nanoseconds since the epoch.
    pub created_at: i64,
    /// Our sandbox-spec hash annotation ("" on sandboxes made by something else).
    pub hash: String,
    /// Its IP ("" for hostNetwork or when not known).
    pub ip: String,
}

/// A container's state, as CRI reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Made, not started.
    Created,
    /// Running.
    Running,
    /// Exited.
    Exited,
    /// The runtime does not know.
    Unknown,
}

/// The runtime's view of one container.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedContainer {
    /// Its runtime id.
    pub id: String,
    /// The sandbox it runs in.
    pub sandbox_id: String,
    /// The container's name in the pod spec.
    pub name: String,
    /// Its state.
    pub state: State,
    /// Its exit code (when exited).
    pub exit_code: i32,
    /// The runtime's reason (when exited; "" when it gave none).
    pub reason: String,
    /// The runtime's message, then the termination message.
    pub message: String,
    /// Nanoseconds since the epoch (0 = not yet).
    pub created_at: i64,
    /// Nanoseconds since the epoch (0 = not yet).
    pub started_at: i64,
    /// Nanoseconds since the epoch (0 = not yet).
    pub finished_at: i64,
    /// Our container-spec hash annotation.
    pub hash: String,
    /// Its restart count (the CRI attempt).
    pub restart_count: u32,
    /// The image as the spec names it.
    pub image: String,
    /// The image id it runs.
    pub image_ref: String,
}

/// The runtime's view of one pod, newest first in both lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObservedPod {
    /// The pod's sandboxes, newest first.
    pub sandboxes: Vec<ObservedSandbox>,
    /// The pod's containers, newest first.
    pub containers: Vec<ObservedContainer>,
}

impl ObservedPod {
    /// Builds the view, sorting sandboxes and containers newest first.
    pub fn new(
        mut sandboxes: Vec<ObservedSandbox>,
        mut containers: Vec<ObservedContainer>,
    ) -> Self {
        sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        containers.sort_by_key(|c| std::cmp::Reverse(c.created_at));
        ObservedPod {
            sandboxes,
            containers,
        }
    }

    /// The newest sandbox, the one the pod runs in.
    pub fn latest_sandbox(&self) -> Option<&ObservedSandbox> {
        self.sandboxes.first()
    }

    /// The newest container instance with this spec name.
    pub fn latest(&self, name: &str) -> Option<&ObservedContainer> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// The instance before the newest one (what `lastState` and `--previous` show).
    pub fn previous(&self, name: &str) -> Option<&ObservedContainer> {
        self.containers.iter().filter(|c| c.name == name).nth(1)
    }
}

impl From<&pb::PodSandboxStatus> for ObservedSandbox {
    fn from(s: &pb::PodSandboxStatus) -> Self {
        ObservedSandbox {
            id: s.id.clone(),
            ready: s.state == pb::PodSandboxState::SandboxReady as i32,
            attempt: s.metadata.as_ref().map_or(0, |m| m.attempt),
            created_at: s.created_at,
            hash: s
                .annotations
                .get(labels::SANDBOX_HASH)
                .cloned()
                .unwrap_or_default(),
            ip: s.network.as_ref().map(|n| n.ip.clone()).unwrap_or_default(),
        }
    }
}

impl From<&pb::ContainerStatus> for ObservedContainer {
    fn from(c: &pb::ContainerStatus) -> Self {
        let state = match pb::ContainerState::try_from(c.state) {
            Ok(pb::ContainerState::ContainerCreated) => State::Created,
            Ok(pb::ContainerState::ContainerRunning) => State::Running,
            Ok(pb::ContainerState::ContainerExited) => State::Exited,
            _ => State::Unknown,
        };
        let annotation = |k: &str| c.annotations.get(k).cloned().unwrap_or_default();
        ObservedContainer {
            id: c.id.clone(),
            sandbox_id: String::new(),
            name: c
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default(),
            state,
            exit_code: c.exit_code,
            reason: c.reason.clone(),
            message: c.message.clone(),
            created_at: c.created_at,
            started_at: c.started_at,
            finished_at: c.finished_at,
            hash: annotation(labels::CONTAINER_HASH),
            restart_count: annotation(labels::CONTAINER_RESTART_COUNT)
                .parse()
                .unwrap_or(0),
            image: c
                .image
                .as_ref()
                .map(|i| i.image.clone())
                .unwrap_or_default(),
            image_ref: c.image_ref.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_container_status_reads_annotations_and_tolerates_garbage() {
        let st = pb::ContainerStatus {
            id: "c1".into(),
            state: 2,
            exit_code: 3,
            annotations: [
                (labels::CONTAINER_HASH.to_string(), "abc".to_string()),
                (
                    labels::CONTAINER_RESTART_COUNT.to_string(),
                    "x7".to_string(),
                ),
            ]
            .into(),
            ..Default::default()
        };
        let c = ObservedContainer::from(&st);
        assert_eq!(
            (c.state, c.exit_code, c.hash.as_str(), c.restart_count),
            (State::Exited, 3, "abc", 0)
        );
        assert_eq!(c.name, "");
        let weird = pb::ContainerStatus {
            state: 42,
            ..Default::default()
        };
        assert_eq!(ObservedContainer::from(&weird).state, State::Unknown);
    }

    #[test]
    fn newest_first() {
        let sb = |id: &str, t| ObservedSandbox {
            id: id.into(),
            created_at: t,
            ..Default::default()
        };
        let c = |id: &str, t| ObservedContainer {
            id: id.into(),
            name: "a".into(),
            created_at: t,
            ..ObservedContainer::from(&pb::ContainerStatus::default())
        };
        let p = ObservedPod::new(
            vec![sb("old", 1), sb("new", 5)],
            vec![c("c1", 1), c("c3", 3), c("c2", 2)],
        );
        assert_eq!(p.latest_sandbox().map(|s| s.id.as_str()), Some("new"));
        assert_eq!(p.latest("a").map(|c| c.id.as_str()), Some("c3"));
        assert_eq!(p.previous("a").map(|c| c.id.as_str()), Some("c2"));
        assert!(p.latest("b").is_none());
    }
}
