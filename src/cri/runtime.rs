//! [`RuntimeClient`]: one typed async method per CRI `RuntimeService` call the agent
//! makes (sandboxes, containers, exec, streaming URLs, logs, stats, runtime status).
//!
//! Each call carries a deadline, as kubelet's remote runtime does: the configured
//! `runtimeRequestTimeout` for most calls, twice that for RunPodSandbox (it sets up the
//! network), that plus the grace period for StopContainer, and that plus the command's
//! own limit for ExecSync. Errors are [`CriError`]s naming the method.

use super::{list_items, pb};
use super::{Channel, Code, CriError, Limit};
use bytes::Bytes;
use std::rc::Rc;
use std::time::Duration;

/// The API version kubelet announces in VersionRequest.
const KUBE_RUNTIME_API_VERSION: &str = "0.1.0";

const VERSION: &str = "/runtime.v1.RuntimeService/Version";
const STATUS: &str = "/runtime.v1.RuntimeService/Status";
const RUN_POD_SANDBOX: &str = "/runtime.v1.RuntimeService/RunPodSandbox";
const STOP_POD_SANDBOX: &str = "/runtime.v1.RuntimeService/StopPodSandbox";
const REMOVE_POD_SANDBOX: &str = "/runtime.v1.RuntimeService/RemovePodSandbox";
const POD_SANDBOX_STATUS: &str = "/runtime.v1.RuntimeService/PodSandboxStatus";
const LIST_POD_SANDBOX: &str = "/runtime.v1.RuntimeService/ListPodSandbox";
const CREATE_CONTAINER: &str = "/runtime.v1.RuntimeService/CreateContainer";
const START_CONTAINER: &str = "/runtime.v1.RuntimeService/StartContainer";
const STOP_CONTAINER: &str = "/runtime.v1.RuntimeService/StopContainer";
const REMOVE_CONTAINER: &str = "/runtime.v1.RuntimeService/RemoveContainer";
const LIST_CONTAINERS: &str = "/runtime.v1.RuntimeService/ListContainers";
const CONTAINER_STATUS: &str = "/runtime.v1.RuntimeService/ContainerStatus";
const REOPEN_CONTAINER_LOG: &str = "/runtime.v1.RuntimeService/ReopenContainerLog";
const EXEC_SYNC: &str = "/runtime.v1.RuntimeService/ExecSync";
const EXEC: &str = "/runtime.v1.RuntimeService/Exec";
const ATTACH: &str = "/runtime.v1.RuntimeService/Attach";
const PORT_FORWARD: &str = "/runtime.v1.RuntimeService/PortForward";
const LIST_CONTAINER_STATS: &str = "/runtime.v1.RuntimeService/ListContainerStats";

/// The runtime service of one CRI endpoint. Cheap to clone (the channel is shared).
#[derive(Clone, Debug)]
pub struct RuntimeClient {
    channel: Channel,
    timeout: Duration,
    heavy: Rc<Limit>,
}

impl RuntimeClient {
    /// A client on `channel` whose calls time out after `timeout` (kubelet's
    /// `runtimeRequestTimeout`, 2 minutes by default).
    pub fn new(channel: Channel, timeout: Duration) -> RuntimeClient {
        RuntimeClient {
            channel,
            timeout,
            heavy: Limit::unbounded(),
        }
    }

    /// This client with its heavy calls (RunPodSandbox, CreateContainer,
    /// StartContainer) under `heavy` (see [`Limit`]).
    pub fn limited(self, heavy: Rc<Limit>) -> RuntimeClient {
        RuntimeClient { heavy, ..self }
    }

    /// The channel the calls go through.
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// Runtime name and versions.
    pub async fn version(&self) -> Result<pb::VersionResponse, CriError> {
        let req = pb::VersionRequest {
            version: KUBE_RUNTIME_API_VERSION.into(),
        };
        self.channel.unary(VERSION, &req, Some(self.timeout)).await
    }

    /// The runtime's conditions (RuntimeReady, NetworkReady, ...).
    pub async fn status(&self) -> Result<pb::RuntimeStatus, CriError> {
        let resp: pb::StatusResponse = self
            .channel
            .unary(STATUS, &pb::StatusRequest {}, Some(self.timeout))
            .await?;
        resp.status.ok_or_else(|| missing(STATUS, "status"))
    }

    /// Creates and starts a sandbox; returns its id. `runtime_handler` selects a
    /// RuntimeClass handler ("" for the default).
    pub async fn run_pod_sandbox(
        &self,
        config: pb::PodSandboxConfig,
        runtime_handler: &str,
    ) -> Result<String, CriError> {
        let req = pb::RunPodSandboxRequest {
            config: Some(config),
            runtime_handler: runtime_handler.into(),
        };
        let _turn = self.heavy.acquire().await;
        let resp: pb::RunPodSandboxResponse = self
            .channel
            .unary(RUN_POD_SANDBOX, &req, Some(self.timeout * 2))
            .await?;
        non_empty(RUN_POD_SANDBOX, "pod_sandbox_id", resp.pod_sandbox_id)
    }

    /// Stops every process of the sandbox and frees its network. Idempotent.
    pub async fn stop_pod_sandbox(&self, id: &str) -> Result<(), CriError> {
        let req = pb::StopPodSandboxRequest {
            pod_sandbox_id: id.into(),
        };
        let _: pb::StopPodSandboxResponse = self
            .channel
            .unary(STOP_POD_SANDBOX, &req, Some(self.timeout))
            .await?;
        Ok(())
    }

    /// Removes the sandbox and its containers. Idempotent.
    pub async fn remove_pod_sandbox(&self, id: &str) -> Result<(), CriError> {
        let req = pb::RemovePodSandboxRequest {
            pod_sandbox_id: id.into(),
        };
        let _: pb::RemovePodSandboxResponse = self
            .channel
            .unary(REMOVE_POD_SANDBOX, &req, Some(self.timeout))
            .await?;
        Ok(())
    }

    /// The sandbox's status; `NotFound` when it does not exist.
    pub async fn pod_sandbox_status(&self, id: &str) -> Result<pb::PodSandboxStatus, CriError> {
        let req = pb::PodSandboxStatusRequest {
            pod_sandbox_id: id.into(),
        };
        let resp: pb::PodSandboxStatusResponse = self
            .channel
            .unary(POD_SANDBOX_STATUS, &req, Some(self.timeout))
            .await?;
        resp.status
            .ok_or_else(|| missing(POD_SANDBOX_STATUS, "status"))
    }

    /// The sandboxes matching `filter` (all of them for `None`).
    pub async fn list_pod_sandbox(
        &self,
        filter: Option<pb::PodSandboxFilter>,
    ) -> Result<Vec<pb::PodSandbox>, CriError> {
        let req = pb::ListPodSandboxRequest { filter };
        let resp: pb::ListPodSandboxResponse = self
            .channel
            .unary(LIST_POD_SANDBOX, &req, Some(self.timeout))
            .await?;
        Ok(resp.items)
    }

    /// Every sandbox, undecoded: the encoded `PodSandbox` of each (see [`list_items`]).
    pub async fn list_pod_sandbox_items(&self) -> Result<Vec<Bytes>, CriError> {
        let req = pb::ListPodSandboxRequest { filter: None };
        let message = self
            .channel
            .unary_bytes(LIST_POD_SANDBOX, &req, Some(self.timeout))
            .await?;
        list_items::items(&message)
            .map_err(|e| CriError::new(Code::Internal, LIST_POD_SANDBOX, e.to_string()))
    }

    /// Creates a container in sandbox `pod_sandbox_id`; returns its id.
    /// `sandbox_config` is the config the sandbox was created with.
    pub async fn create_container(
        &self,
        pod_sandbox_id: &str,
        config: pb::ContainerConfig,
        sandbox_config: pb::PodSandboxConfig,
    ) -> Result<String, CriError> {
        let req = pb::CreateContainerRequest {
            pod_sandbox_id: pod_sandbox_id.into(),
            config: Some(config),
            sandbox_config: Some(sandbox_config),
        };
        let _turn = self.heavy.acquire().await;
        let resp: pb::CreateContainerResponse = self
            .channel
            .unary(CREATE_CONTAINER, &req, Some(self.timeout))
            .await?;
        non_empty(CREATE_CONTAINER, "container_id", resp.container_id)
    }

    /// Starts a created container.
    pub async fn start_container(&self, id: &str) -> Result<(), CriError> {
        let req = pb::StartContainerRequest {
            container_id: id.into(),
        };
        let _turn = self.heavy.acquire().await;
        let _: pb::StartContainerResponse = self
            .channel
            .unary(START_CONTAINER, &req, Some(self.timeout))
            .await?;
        Ok(())
    }

    /// Stops a container: SIGTERM (or the image's stop signal), then SIGKILL after
    /// `grace`, in whole seconds rounded up: the rest of a grace period is a whole
    /// number less a few microseconds, and rounding down would turn 1 s into an
    /// immediate SIGKILL (kubelet subtracts only whole seconds). The deadline is the
    /// request timeout plus that. Idempotent.
    pub async fn stop_container(&self, id: &str, grace: Duration) -> Result<(), CriError> {
        let secs = grace.as_secs() + u64::from(grace.subsec_nanos() > 0);
        let req = pb::StopContainerRequest {
            container_id: id.into(),
            timeout: i64::try_from(secs).unwrap_or(i64::MAX),
        };
        let deadline = self.timeout.saturating_add(Duration::from_secs(secs));
        let _: pb::StopContainerResponse = self
            .channel
            .unary(STOP_CONTAINER, &req, Some(deadline))
            .await?;
        Ok(())
    }

    /// Removes a container (killing it first if it runs). Idempotent.
    pub async fn remove_container(&self, id: &str) -> Result<(), CriError> {
        let req = pb::RemoveContainerRequest {
            container_id: id.into(),
        };
        let _: pb::RemoveContainerResponse = self
            .channel
            .unary(REMOVE_CONTAINER, &req, Some(self.timeout))
            .await?;
        Ok(())
    }

    /// The containers matching `filter` (all of them, in any state, for `None`).
    pub async fn list_containers(
        &self,
        filter: Option<pb::ContainerFilter>,
    ) -> Result<Vec<pb::Container>, CriError> {
        let req = pb::ListContainersRequest { filter };
        let resp: pb::ListContainersResponse = self
            .channel
            .unary(LIST_CONTAINERS, &req, Some(self.timeout))
            .await?;
        Ok(resp.containers)
    }

    /// Every container, undecoded: the encoded `Container` of each (see [`list_items`]).
    pub async fn list_containers_items(&self) -> Result<Vec<Bytes>, CriError> {
        let req = pb::ListContainersRequest { filter: None };
        let message = self
            .channel
            .unary_bytes(LIST_CONTAINERS, &req, Some(self.timeout))
            .await?;
        list_items::items(&message)
            .map_err(|e| CriError::new(Code::Internal, LIST_CONTAINERS, e.to_string()))
    }

    /// The container's status; `NotFound` when it does not exist.
    pub async fn container_status(&self, id: &str) -> Result<pb::ContainerStatus, CriError> {
        let req = pb::ContainerStatusRequest {
            container_id: id.into(),
        };
        let resp: pb::ContainerStatusResponse = self
            .channel
            .unary(CONTAINER_STATUS, &req, Some(self.timeout))
            .await?;
        resp.status
            .ok_or_else(|| missing(CONTAINER_STATUS, "status"))
    }

    /// Asks the runtime to reopen the container's log file (after a rotation).
    pub async fn reopen_container_log(&self, id: &str) -> Result<(), CriError> {
        let req = pb::ReopenContainerLogRequest {
            container_id: id.into(),
        };
        let _: pb::ReopenContainerLogResponse = self
            .channel
            .unary(REOPEN_CONTAINER_LOG, &req, Some(self.timeout))
            .await?;
        Ok(())
    }

    /// Runs `cmd` in the container and waits for it. With `limit`, the runtime kills the
    /// command after it (whole seconds, rounded up) and the call's deadline is the request
    /// timeout on top, so the runtime has time to clean up; without, no deadline, as
    /// kubelet. A non-zero exit is not an error: read `exit_code`.
    pub async fn exec_sync(
        &self,
        id: &str,
        cmd: Vec<String>,
        limit: Option<Duration>,
    ) -> Result<pb::ExecSyncResponse, CriError> {
        let secs = limit.map_or(0, |d| d.as_secs() + u64::from(d.subsec_nanos() > 0));
        let req = pb::ExecSyncRequest {
            container_id: id.into(),
            cmd,
            timeout: i64::try_from(secs).unwrap_or(i64::MAX),
        };
        let deadline = limit.map(|d| self.timeout.saturating_add(d));
        self.channel.unary(EXEC_SYNC, &req, deadline).await
    }

    /// A URL on the runtime's streaming server that runs `req.cmd` in the container
    /// with the streams `req` asks for (one of stdin, stdout, stderr must be set).
    pub async fn exec(&self, req: pb::ExecRequest) -> Result<String, CriError> {
        let resp: pb::ExecResponse = self.channel.unary(EXEC, &req, Some(self.timeout)).await?;
        non_empty(EXEC, "url", resp.url)
    }

    /// A URL on the runtime's streaming server attached to the container's own
    /// process.
    pub async fn attach(&self, req: pb::AttachRequest) -> Result<String, CriError> {
        let resp: pb::AttachResponse = self.channel.unary(ATTACH, &req, Some(self.timeout)).await?;
        non_empty(ATTACH, "url", resp.url)
    }

    /// A URL on the runtime's streaming server that forwards to `ports` inside the
    /// sandbox's network namespace (the client names the port per stream; an empty
    /// list allows any).
    pub async fn port_forward(
        &self,
        sandbox_id: &str,
        ports: Vec<i32>,
    ) -> Result<String, CriError> {
        let req = pb::PortForwardRequest {
            pod_sandbox_id: sandbox_id.into(),
            port: ports,
        };
        let resp: pb::PortForwardResponse = self
            .channel
            .unary(PORT_FORWARD, &req, Some(self.timeout))
            .await?;
        non_empty(PORT_FORWARD, "url", resp.url)
    }

    /// CPU, memory and writable-layer usage of the containers matching `filter`.
    pub async fn list_container_stats(
        &self,
        filter: Option<pb::ContainerStatsFilter>,
    ) -> Result<Vec<pb::ContainerStats>, CriError> {
        let req = pb::ListContainerStatsRequest { filter };
        let resp: pb::ListContainerStatsResponse = self
            .channel
            .unary(LIST_CONTAINER_STATS, &req, Some(self.timeout))
            .await?;
        Ok(resp.stats)
    }
}

/// A response lacked a field every runtime sets: the runtime is broken or not CRI v1.
pub(super) fn missing(method: &'static str, field: &str) -> CriError {
    CriError::new(
        Code::Internal,
        method,
        format!("the runtime's answer has no {field}"),
    )
}

/// `value`, unless the runtime answered with an empty id.
fn non_empty(method: &'static str, field: &str, value: String) -> Result<String, CriError> {
    if value.is_empty() {
        Err(CriError::new(
            Code::Internal,
            method,
            format!("the runtime's answer has an empty {field}"),
        ))
    } else {
        Ok(value)
    }
}
