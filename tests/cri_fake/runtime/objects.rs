//! What the fake runtime holds and records: sandboxes, containers and images with what
//! a CRI runtime keeps of them (configs, labels, annotations, state, timestamps, exit
//! codes), and each call as the runtime saw it. Timestamps are wall-clock nanoseconds.

use std::time::SystemTime;
use tinylet::cri::pb;

#[derive(Clone, Debug)]
pub struct FakeSandbox {
    pub id: String,
    pub config: pb::PodSandboxConfig,
    pub runtime_handler: String,
    pub ready: bool,
    pub created_at: i64,
    pub ip: String,
}

impl FakeSandbox {
    /// The pod name of its metadata.
    pub fn pod_name(&self) -> &str {
        self.config
            .metadata
            .as_ref()
            .map_or("", |m| m.name.as_str())
    }

    pub fn attempt(&self) -> u32 {
        self.config.metadata.as_ref().map_or(0, |m| m.attempt)
    }

    pub fn label(&self, key: &str) -> &str {
        self.config.labels.get(key).map_or("", String::as_str)
    }
}

/// A scripted exit not yet happened: (real time, code, time the runtime reports).
#[derive(Clone, Copy, Debug)]
pub struct PendingExit {
    pub at: i64,
    pub code: i32,
    pub reported: i64,
}

#[derive(Clone, Debug)]
pub struct FakeContainer {
    pub id: String,
    pub sandbox_id: String,
    pub config: pb::ContainerConfig,
    /// The image id it was created from.
    pub image_ref: String,
    pub state: pb::ContainerState,
    pub created_at: i64,
    pub started_at: i64,
    pub finished_at: i64,
    pub exit_code: i32,
    pub reason: String,
    /// Absolute: the sandbox's log directory joined with the config's log path.
    pub log_path: String,
    pub(super) exit: Option<PendingExit>,
}

impl FakeContainer {
    /// Its name in the pod spec (metadata).
    pub fn name(&self) -> &str {
        self.config
            .metadata
            .as_ref()
            .map_or("", |m| m.name.as_str())
    }

    pub fn attempt(&self) -> u32 {
        self.config.metadata.as_ref().map_or(0, |m| m.attempt)
    }

    pub fn label(&self, key: &str) -> &str {
        self.config.labels.get(key).map_or("", String::as_str)
    }

    pub fn annotation(&self, key: &str) -> &str {
        self.config.annotations.get(key).map_or("", String::as_str)
    }

    pub fn running(&self) -> bool {
        self.state == pb::ContainerState::ContainerRunning
    }

    pub fn exited(&self) -> bool {
        self.state == pb::ContainerState::ContainerExited
    }

    /// Ends it now (or as `exit` says) with `code`.
    pub(super) fn finish(&mut self, exit_code: i32, reported: i64) {
        self.state = pb::ContainerState::ContainerExited;
        self.exit_code = exit_code;
        self.finished_at = reported;
        self.started_at = self.started_at.min(reported);
        self.reason = if exit_code == 0 { "Completed" } else { "Error" }.into();
        self.exit = None;
    }
}

#[derive(Clone, Debug)]
pub struct FakeImage {
    pub id: String,
    pub tags: Vec<String>,
    pub size: u64,
}

/// How a recorded call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Not answered yet (a hung or late call still waiting).
    Pending,
    Ok,
    /// An error answer with this gRPC code.
    Err(i32),
    /// The client reset the stream before the answer (its deadline ran out).
    ClientGaveUp,
}

/// One call as the runtime saw it.
#[derive(Clone, Debug)]
pub struct Call {
    /// The method's name without its service ("CreateContainer").
    pub method: String,
    /// The container or sandbox it is about; for RunPodSandbox and CreateContainer the
    /// id made (empty when nothing was).
    pub id: String,
    /// Its subject: container name, pod name or image.
    pub name: String,
    /// StopContainer's and ExecSync's `timeout` (seconds).
    pub timeout: i64,
    /// ExecSync's command.
    pub cmd: Vec<String>,
    pub at: SystemTime,
    pub answered: Option<SystemTime>,
    pub outcome: Outcome,
}

impl Call {
    pub fn new(method: &str) -> Call {
        Call {
            method: method.into(),
            id: String::new(),
            name: String::new(),
            timeout: 0,
            cmd: Vec::new(),
            at: SystemTime::now(),
            answered: None,
            outcome: Outcome::Pending,
        }
    }
}
