//! v1.Container and everything inside it: env, ports, mounts, resources, probes,
//! lifecycle hooks and the container security context.

// Fields and variants are the Kubernetes API fields and values of the same name.
#![allow(missing_docs)]

use super::quantity::Quantity;
use super::serde_util::{is_false, is_zero};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// Where kubelet reads a container's termination message by default.
pub const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";

/// One container (app or init) of a pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Container {
    pub name: String,
    pub image: String,
    /// Filled from the image tag by the defaults when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<PullPolicy>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub working_dir: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_from: Vec<EnvFromSource>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    pub resources: ResourceRequirements,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volume_mounts: Vec<VolumeMount>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liveness_probe: Option<Probe>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readiness_probe: Option<Probe>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_probe: Option<Probe>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    pub termination_message_path: String,
    pub termination_message_policy: TerminationMessagePolicy,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_context: Option<SecurityContext>,
    /// Only `Always`, which makes an init container a sidecar; parsed so it can be
    /// refused (sidecars are not supported) rather than silently ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<ContainerRestartPolicy>,
    #[serde(skip_serializing_if = "is_false")]
    pub stdin: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub stdin_once: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub tty: bool,
    /// Raw block devices: read only to be refused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volume_devices: Vec<serde_json::Value>,
}

/// When the image is pulled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PullPolicy {
    Always,
    IfNotPresent,
    Never,
}

/// A container-level restart policy (Kubernetes' sidecar containers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ContainerRestartPolicy {
    Always,
}

/// Where the termination message comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TerminationMessagePolicy {
    #[default]
    File,
    FallbackToLogsOnError,
}

/// A port the container listens on; `hostPort` 0 means not published on the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerPort {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub host_port: i32,
    pub container_port: i32,
    pub protocol: Protocol,
    #[serde(rename = "hostIP", skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
}

/// Transport protocol of a port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    #[default]
    TCP,
    UDP,
    SCTP,
}

/// One environment variable: a literal value or one `valueFrom` source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EnvVar {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvVarSource>,
}

/// Where an environment variable's value comes from; exactly one is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EnvVarSource {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_ref: Option<ObjectFieldSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_field_ref: Option<ResourceFieldSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map_key_ref: Option<KeySelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<KeySelector>,
}

/// A field of the pod (`metadata.name`, `status.podIP`, `spec.nodeName`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectFieldSelector {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    pub field_path: String,
}

/// A container's resource request or limit (`limits.memory`, `requests.cpu`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceFieldSelector {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub container_name: String,
    pub resource: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divisor: Option<Quantity>,
}

/// One key of a ConfigMap or Secret (`configMapKeyRef`, `secretKeyRef`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KeySelector {
    pub name: String,
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// All keys of a ConfigMap or Secret as environment variables, each name prefixed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EnvFromSource {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<EnvFromRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<EnvFromRef>,
}

/// The ConfigMap or Secret named by an `envFrom` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvFromRef {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// A volume mounted into the container.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeMount {
    pub name: String,
    #[serde(skip_serializing_if = "is_false")]
    pub read_only: bool,
    pub mount_path: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sub_path: String,
    /// Like `subPath`, with `$(VAR)` expanded from the container's environment.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sub_path_expr: String,
    /// CRI mount propagation; `Bidirectional` only in a privileged container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount_propagation: Option<MountPropagationMode>,
    /// `Enabled` is refused (no recursive read-only mounts); `IfPossible` is
    /// read-only at the top, as upstream on a runtime without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recursive_read_only: Option<RecursiveReadOnlyMode>,
}

/// `volumeMounts[].mountPropagation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MountPropagationMode {
    None,
    HostToContainer,
    Bidirectional,
}

/// `volumeMounts[].recursiveReadOnly`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecursiveReadOnlyMode {
    Disabled,
    IfPossible,
    Enabled,
}

/// `resources`: quantities by resource name (`cpu`, `memory`, `ephemeral-storage`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceRequirements {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, Quantity>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, Quantity>,
    /// Dynamic resource claims: read only to be refused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<serde_json::Value>,
}

/// A health check: one handler and its timing. Zero timing fields mean "default".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Probe {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecAction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_get: Option<HttpGetAction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TcpSocketAction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcAction>,
    #[serde(skip_serializing_if = "is_zero")]
    pub initial_delay_seconds: i32,
    /// 1 when absent.
    #[serde(skip_serializing_if = "is_zero")]
    pub timeout_seconds: i32,
    /// 10 when absent.
    #[serde(skip_serializing_if = "is_zero")]
    pub period_seconds: i32,
    /// 1 when absent; must be 1 for liveness and startup probes.
    #[serde(skip_serializing_if = "is_zero")]
    pub success_threshold: i32,
    /// 3 when absent.
    #[serde(skip_serializing_if = "is_zero")]
    pub failure_threshold: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
}

/// Runs a command in the container; exit status 0 is success.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExecAction {
    pub command: Vec<String>,
}

/// An HTTP GET against the pod's IP (or `host`); 200-399 is success.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HttpGetAction {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    pub port: IntOrString,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
    pub scheme: UriScheme,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub http_headers: Vec<HttpHeader>,
}

/// `HTTP` or `HTTPS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum UriScheme {
    #[default]
    HTTP,
    HTTPS,
}

/// One request header of an httpGet probe.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HttpHeader {
    pub name: String,
    pub value: String,
}

/// A TCP connect to a port; connecting is success.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpSocketAction {
    pub port: IntOrString,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
}

/// A gRPC health check (grpc.health.v1) on a port.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GrpcAction {
    pub port: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

/// A port by number or by the name of one of the container's ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntOrString {
    Int(i32),
    String(String),
}

impl Default for IntOrString {
    fn default() -> Self {
        IntOrString::Int(0)
    }
}

impl Serialize for IntOrString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrString::Int(n) => s.serialize_i32(*n),
            IntOrString::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IntOrString;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a port number or a port name")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<IntOrString, E> {
                i32::try_from(n)
                    .map(IntOrString::Int)
                    .map_err(|_| E::custom(format!("port number {n} out of range")))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<IntOrString, E> {
                i32::try_from(n)
                    .map(IntOrString::Int)
                    .map_err(|_| E::custom(format!("port number {n} out of range")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntOrString, E> {
                Ok(IntOrString::String(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Hooks run after a container starts and before it is stopped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Lifecycle {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_start: Option<LifecycleHandler>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_stop: Option<LifecycleHandler>,
    /// Read only to be refused (the runtime's stop signal is used).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stop_signal: String,
}

/// One lifecycle hook; exactly one action is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LifecycleHandler {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecAction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_get: Option<HttpGetAction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TcpSocketAction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sleep: Option<SleepAction>,
}

/// Sleeps for a number of seconds (a preStop hook that needs no binary in the image).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SleepAction {
    pub seconds: i64,
}

/// Container-level security settings; override the pod's where both are set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecurityContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub privileged: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_as_user: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_as_group: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_as_non_root: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_root_filesystem: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_privilege_escalation: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proc_mount: Option<ProcMountType>,
    /// Overrides the pod's; absent in both means the agent's `seccompDefault`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seccomp_profile: Option<SecurityProfile>,
    /// Overrides the pod's (and the legacy per-container annotation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_armor_profile: Option<SecurityProfile>,
}

/// How /proc is mounted: `Default` masks and write-protects kubelet's list of
/// sensitive /proc and /sys paths; `Unmasked` leaves them as the runtime mounts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProcMountType {
    Default,
    Unmasked,
}

/// A seccomp profile (`seccompProfile`) or an AppArmor profile (`appArmorProfile`):
/// Kubernetes gives both the same shape and the same three types.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecurityProfile {
    /// Required; an Option so that a missing type is reported, not defaulted.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<ProfileType>,
    /// Only with `Localhost`: a file below `seccompProfileRoot` (seccomp) or the name
    /// of a profile loaded in the kernel (AppArmor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub localhost_profile: Option<String>,
}

/// The legacy per-container AppArmor annotation (`PREFIX` + container name), which
/// kubelet still honours for pods whose fields were never synced from it.
pub const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

impl SecurityProfile {
    /// The profile a legacy AppArmor annotation value names (`runtime/default`,
    /// `unconfined`, `localhost/NAME`); None for anything else, as kubelet reads it.
    pub fn from_apparmor_annotation(value: &str) -> Option<SecurityProfile> {
        let (type_, name) = match value {
            "runtime/default" => (ProfileType::RuntimeDefault, None),
            "unconfined" => (ProfileType::Unconfined, None),
            v => (ProfileType::Localhost, Some(v.strip_prefix("localhost/")?)),
        };
        Some(SecurityProfile {
            type_: Some(type_),
            localhost_profile: name.map(str::to_string),
        })
    }
}

/// Which profile: the runtime's default, none, or one installed on the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProfileType {
    RuntimeDefault,
    Unconfined,
    Localhost,
}

/// Linux capabilities added to or dropped from the runtime's default set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drop: Vec<String>,
}
