//! The `runtime.v1` RuntimeService and ImageService methods on the fake's [`State`]:
//! each call is decoded with the project's prost types, recorded, checked against the
//! scripted faults, carried out, and answered with a real encoded response.

use super::objects::{Call, FakeContainer, FakeImage, FakeSandbox};
use super::script::code;
use super::state::{now_ns, Halt, State, Status};
use prost::Message;
use std::sync::Mutex;
use std::time::Duration;
use tinylet::cri::pb;

/// When and what to answer.
pub struct Plan {
    /// The call's index in the record.
    pub call: usize,
    /// The call counts in flight as a heavy one until answered.
    pub heavy: bool,
    pub reply: Result<Vec<u8>, Status>,
    /// Answer after this long; `None`: never (wait for the client to give up).
    pub after: Option<Duration>,
}

/// Serves one call of `path` with request message `msg`.
pub fn plan(state: &Mutex<State>, path: &str, msg: &[u8]) -> Plan {
    let mut st = state.lock().unwrap();
    st.settle(now_ns());
    let method = path.rsplit('/').next().unwrap_or_default();
    let before = st.recorded();
    let mut call = Call::new(method);
    let step = dispatch(&mut st, method, msg, &mut call);
    // Recorded by `begin`, which counted a heavy call in flight.
    let heavy = st.recorded() != before && State::is_heavy(method);
    if st.recorded() == before {
        // Failed before it was recorded (a request that does not decode).
        st.record(call);
    }
    let (reply, after) = match step {
        Ok(Step::Answer(reply, after)) => (reply, Some(after)),
        Ok(Step::Halted(Halt::Hang)) => (Err(Status::new(code::UNKNOWN, "hung")), None),
        Ok(Step::Halted(Halt::Fail(s))) | Err(s) => (Err(s), Some(Duration::ZERO)),
    };
    Plan {
        call: before,
        heavy,
        reply,
        after,
    }
}

/// A call answered (after a delay) or stopped by a fault.
enum Step {
    Answer(Result<Vec<u8>, Status>, Duration),
    Halted(Halt),
}

fn decode<M: Message + Default>(msg: &[u8]) -> Result<M, Status> {
    M::decode(msg).map_err(|e| Status::new(code::INVALID_ARGUMENT, format!("decode: {e}")))
}

/// Records `call` and applies its fault; `Err(step)` when the fault stops it.
fn gate(st: &mut State, call: &Call) -> Result<Duration, Step> {
    match st.begin(call.clone()) {
        Ok(late) => Ok(late.unwrap_or_default()),
        Err(h) => Err(Step::Halted(h)),
    }
}

macro_rules! gate {
    ($st:expr, $call:expr) => {
        match gate($st, $call) {
            Ok(late) => late,
            Err(step) => return Ok(step),
        }
    };
}

fn done(m: impl Message, after: Duration) -> Result<Step, Status> {
    Ok(Step::Answer(Ok(m.encode_to_vec()), after))
}

fn container_name(st: &State, id: &str) -> String {
    st.containers
        .get(id)
        .map(|c| c.name().to_string())
        .unwrap_or_default()
}

fn pod_name(st: &State, id: &str) -> String {
    st.sandboxes
        .get(id)
        .map(|s| s.pod_name().to_string())
        .unwrap_or_default()
}

/// Sets the id a creating call made on its record.
fn made(st: &mut State, id: &str) {
    if let Some(c) = st.calls.last_mut() {
        c.id = id.to_string();
    }
}

fn dispatch(st: &mut State, method: &str, msg: &[u8], call: &mut Call) -> Result<Step, Status> {
    match method {
        "Version" => {
            let late = gate!(st, call);
            done(
                pb::VersionResponse {
                    version: "0.1.0".into(),
                    runtime_name: "fake-cri".into(),
                    runtime_version: "0.1".into(),
                    runtime_api_version: "v1".into(),
                },
                late,
            )
        }
        "Status" => {
            let late = gate!(st, call);
            let cond = |t: &str| pb::RuntimeCondition {
                r#type: t.into(),
                status: true,
                ..Default::default()
            };
            done(
                pb::StatusResponse {
                    status: Some(pb::RuntimeStatus {
                        conditions: vec![cond("RuntimeReady"), cond("NetworkReady")],
                    }),
                },
                late,
            )
        }
        "RunPodSandbox" => {
            let r: pb::RunPodSandboxRequest = decode(msg)?;
            let config = r.config.unwrap_or_default();
            call.name = config
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default();
            let late = gate!(st, call);
            let id = st.run_pod_sandbox(config, r.runtime_handler)?;
            made(st, &id);
            done(pb::RunPodSandboxResponse { pod_sandbox_id: id }, late)
        }
        "StopPodSandbox" => {
            let r: pb::StopPodSandboxRequest = decode(msg)?;
            call.id = r.pod_sandbox_id.clone();
            call.name = pod_name(st, &call.id);
            let late = gate!(st, call);
            st.stop_pod_sandbox(&r.pod_sandbox_id)?;
            done(pb::StopPodSandboxResponse {}, late)
        }
        "RemovePodSandbox" => {
            let r: pb::RemovePodSandboxRequest = decode(msg)?;
            call.id = r.pod_sandbox_id.clone();
            call.name = pod_name(st, &call.id);
            let late = gate!(st, call);
            st.remove_pod_sandbox(&r.pod_sandbox_id);
            done(pb::RemovePodSandboxResponse {}, late)
        }
        "PodSandboxStatus" => {
            let r: pb::PodSandboxStatusRequest = decode(msg)?;
            call.id = r.pod_sandbox_id.clone();
            call.name = pod_name(st, &call.id);
            let late = gate!(st, call);
            let status = sandbox_status(st.sandbox(&r.pod_sandbox_id)?);
            done(
                pb::PodSandboxStatusResponse {
                    status: Some(status),
                },
                late,
            )
        }
        "ListPodSandbox" => {
            let r: pb::ListPodSandboxRequest = decode(msg)?;
            let late = gate!(st, call);
            let f = r.filter.unwrap_or_default();
            let items = st
                .sandboxes
                .values()
                .filter(|s| sandbox_matches(s, &f))
                .map(sandbox_item)
                .collect();
            done(pb::ListPodSandboxResponse { items }, late)
        }
        "CreateContainer" => {
            let r: pb::CreateContainerRequest = decode(msg)?;
            let config = r.config.unwrap_or_default();
            call.name = config
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .unwrap_or_default();
            let late = gate!(st, call);
            let id = st.create_container(&r.pod_sandbox_id, config)?;
            made(st, &id);
            done(pb::CreateContainerResponse { container_id: id }, late)
        }
        "StartContainer" => {
            let r: pb::StartContainerRequest = decode(msg)?;
            call.id = r.container_id.clone();
            call.name = container_name(st, &call.id);
            let late = gate!(st, call);
            st.start_container(&r.container_id)?;
            done(pb::StartContainerResponse {}, late)
        }
        "StopContainer" => {
            let r: pb::StopContainerRequest = decode(msg)?;
            call.id = r.container_id.clone();
            call.name = container_name(st, &call.id);
            call.timeout = r.timeout;
            let late = gate!(st, call);
            let takes = st.stop_container(&r.container_id, r.timeout)?;
            done(pb::StopContainerResponse {}, late.max(takes))
        }
        "RemoveContainer" => {
            let r: pb::RemoveContainerRequest = decode(msg)?;
            call.id = r.container_id.clone();
            call.name = container_name(st, &call.id);
            let late = gate!(st, call);
            st.remove_container(&r.container_id);
            done(pb::RemoveContainerResponse {}, late)
        }
        "ListContainers" => {
            let r: pb::ListContainersRequest = decode(msg)?;
            let late = gate!(st, call);
            let f = r.filter.unwrap_or_default();
            let containers = st
                .containers
                .values()
                .filter(|c| container_matches(c, &f))
                .map(container_item)
                .collect();
            done(pb::ListContainersResponse { containers }, late)
        }
        "ContainerStatus" => {
            let r: pb::ContainerStatusRequest = decode(msg)?;
            call.id = r.container_id.clone();
            call.name = container_name(st, &call.id);
            let late = gate!(st, call);
            let status = container_status(st.container(&r.container_id)?);
            done(
                pb::ContainerStatusResponse {
                    status: Some(status),
                },
                late,
            )
        }
        "ReopenContainerLog" => {
            let r: pb::ReopenContainerLogRequest = decode(msg)?;
            call.id = r.container_id.clone();
            call.name = container_name(st, &call.id);
            let late = gate!(st, call);
            if !st.container(&r.container_id)?.running() {
                return Err(Status::new(
                    code::FAILED_PRECONDITION,
                    "container is not running",
                ));
            }
            done(pb::ReopenContainerLogResponse {}, late)
        }
        "ExecSync" => {
            let r: pb::ExecSyncRequest = decode(msg)?;
            call.id = r.container_id.clone();
            call.name = container_name(st, &call.id);
            call.timeout = r.timeout;
            call.cmd = r.cmd.clone();
            let late = gate!(st, call);
            let reply = st.exec(&r.container_id)?;
            let limit = Duration::from_secs(r.timeout.max(0) as u64);
            if r.timeout > 0 && reply.takes > limit {
                // Answered when the limit runs out, with containerd's error.
                let e = Status::new(
                    code::DEADLINE_EXCEEDED,
                    format!("timeout {}s exceeded: context deadline exceeded", r.timeout),
                );
                return Ok(Step::Answer(Err(e), limit));
            }
            done(
                pb::ExecSyncResponse {
                    stdout: reply.stdout.into_bytes(),
                    stderr: reply.stderr.into_bytes(),
                    exit_code: reply.exit_code,
                },
                late.max(reply.takes),
            )
        }
        "ListContainerStats" => {
            let late = gate!(st, call);
            done(pb::ListContainerStatsResponse { stats: Vec::new() }, late)
        }
        "ListImages" => {
            let late = gate!(st, call);
            let images = st.images.iter().map(image).collect();
            done(pb::ListImagesResponse { images }, late)
        }
        "ImageStatus" => {
            let r: pb::ImageStatusRequest = decode(msg)?;
            call.name = r.image.map(|i| i.image).unwrap_or_default();
            let late = gate!(st, call);
            let found = st.image(&call.name).map(image);
            done(pb::ImageStatusResponse { image: found }, late)
        }
        "PullImage" => {
            let r: pb::PullImageRequest = decode(msg)?;
            call.name = r.image.map(|i| i.image).unwrap_or_default();
            let late = gate!(st, call);
            let image_ref = st.add_image(&call.name);
            done(pb::PullImageResponse { image_ref }, late)
        }
        "RemoveImage" => {
            let r: pb::RemoveImageRequest = decode(msg)?;
            call.name = r.image.map(|i| i.image).unwrap_or_default();
            let late = gate!(st, call);
            st.remove_image(&call.name);
            done(pb::RemoveImageResponse {}, late)
        }
        "ImageFsInfo" => {
            let late = gate!(st, call);
            let used: u64 = st.images.iter().map(|i| i.size).sum();
            let fs = pb::FilesystemUsage {
                timestamp: now_ns(),
                fs_id: Some(pb::FilesystemIdentifier {
                    mountpoint: st.imagefs.display().to_string(),
                }),
                used_bytes: Some(pb::UInt64Value { value: used }),
                inodes_used: Some(pb::UInt64Value {
                    value: st.images.len() as u64,
                }),
            };
            done(
                pb::ImageFsInfoResponse {
                    image_filesystems: vec![fs],
                    container_filesystems: Vec::new(),
                },
                late,
            )
        }
        _ => {
            gate!(st, call);
            Err(Status::new(
                code::UNIMPLEMENTED,
                format!("unknown method {method}"),
            ))
        }
    }
}

fn labels_match(
    have: &std::collections::BTreeMap<String, String>,
    want: &std::collections::BTreeMap<String, String>,
) -> bool {
    want.iter().all(|(k, v)| have.get(k) == Some(v))
}

fn sandbox_state(s: &FakeSandbox) -> i32 {
    if s.ready {
        pb::PodSandboxState::SandboxReady as i32
    } else {
        pb::PodSandboxState::SandboxNotready as i32
    }
}

fn sandbox_matches(s: &FakeSandbox, f: &pb::PodSandboxFilter) -> bool {
    s.id.starts_with(&f.id)
        && f.state.as_ref().is_none_or(|v| v.state == sandbox_state(s))
        && labels_match(&s.config.labels, &f.label_selector)
}

fn sandbox_item(s: &FakeSandbox) -> pb::PodSandbox {
    pb::PodSandbox {
        id: s.id.clone(),
        metadata: s.config.metadata.clone(),
        state: sandbox_state(s),
        created_at: s.created_at,
        labels: s.config.labels.clone(),
        annotations: s.config.annotations.clone(),
        runtime_handler: s.runtime_handler.clone(),
    }
}

fn sandbox_status(s: &FakeSandbox) -> pb::PodSandboxStatus {
    let namespaces = s
        .config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .and_then(|c| c.namespace_options.clone());
    pb::PodSandboxStatus {
        id: s.id.clone(),
        metadata: s.config.metadata.clone(),
        state: sandbox_state(s),
        created_at: s.created_at,
        network: Some(pb::PodSandboxNetworkStatus {
            ip: s.ip.clone(),
            additional_ips: Vec::new(),
        }),
        linux: Some(pb::LinuxPodSandboxStatus {
            namespaces: Some(pb::Namespace {
                options: namespaces,
            }),
        }),
        labels: s.config.labels.clone(),
        annotations: s.config.annotations.clone(),
        runtime_handler: s.runtime_handler.clone(),
    }
}

fn container_matches(c: &FakeContainer, f: &pb::ContainerFilter) -> bool {
    c.id.starts_with(&f.id)
        && f.state.as_ref().is_none_or(|v| v.state == c.state as i32)
        && (f.pod_sandbox_id.is_empty() || c.sandbox_id == f.pod_sandbox_id)
        && labels_match(&c.config.labels, &f.label_selector)
}

fn container_item(c: &FakeContainer) -> pb::Container {
    pb::Container {
        id: c.id.clone(),
        pod_sandbox_id: c.sandbox_id.clone(),
        metadata: c.config.metadata.clone(),
        image: c.config.image.clone(),
        image_ref: c.image_ref.clone(),
        state: c.state as i32,
        created_at: c.created_at,
        labels: c.config.labels.clone(),
        annotations: c.config.annotations.clone(),
    }
}

fn container_status(c: &FakeContainer) -> pb::ContainerStatus {
    pb::ContainerStatus {
        id: c.id.clone(),
        metadata: c.config.metadata.clone(),
        state: c.state as i32,
        created_at: c.created_at,
        started_at: c.started_at,
        finished_at: c.finished_at,
        exit_code: c.exit_code,
        image: c.config.image.clone(),
        image_ref: c.image_ref.clone(),
        reason: c.reason.clone(),
        message: String::new(),
        labels: c.config.labels.clone(),
        annotations: c.config.annotations.clone(),
        mounts: c.config.mounts.clone(),
        log_path: c.log_path.clone(),
    }
}

fn image(i: &FakeImage) -> pb::Image {
    pb::Image {
        id: i.id.clone(),
        repo_tags: i.tags.clone(),
        repo_digests: Vec::new(),
        size: i.size,
        uid: None,
        username: String::new(),
        pinned: false,
    }
}
