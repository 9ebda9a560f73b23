//! v1.Pod: the pod-level spec fields the agent uses and the volume sources it supports.
//!
//! Field names, JSON spellings and enum values are Kubernetes'. Unknown fields are
//! ignored so manifests written by kubectl parse as they are; `null` reads as absent,
//! as in Go. Defaults the API server would fill in are applied by [`super::defaults`].

// Fields and variants are the Kubernetes API fields and values of the same name.
#![allow(missing_docs)]

use super::container::{Container, SecurityProfile};
use super::meta::ObjectMeta;
// The keys-as-files types live with the projected volume, which shares them.
pub use super::projected::{ConfigMapVolumeSource, KeyToPath};
use super::projected::{DownwardApiVolumeSource, ProjectedVolumeSource};
use super::quantity::Quantity;
use super::serde_util::is_false;
use super::status::{PodPhase, PodStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A v1 Pod as stored on the device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    pub kind: String,
    pub api_version: String,
    pub metadata: ObjectMeta,
    pub spec: PodSpec,
    /// Written by the agent; cleared when a manifest is parsed (users do not set it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<PodStatus>,
}

/// `spec` of a v1 Pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<Container>,
    pub containers: Vec<Container>,
    pub restart_policy: RestartPolicy,
    /// Seconds between SIGTERM and SIGKILL; 30 when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// `system-node-critical` / `system-cluster-critical`: never evicted.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    /// The priority the API server resolved (lower is evicted first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    pub dns_policy: DnsPolicy,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_config: Option<PodDnsConfig>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    #[serde(skip_serializing_if = "is_false")]
    pub host_network: bool,
    #[serde(rename = "hostPID", skip_serializing_if = "is_false")]
    pub host_pid: bool,
    #[serde(rename = "hostIPC", skip_serializing_if = "is_false")]
    pub host_ipc: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hostname: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subdomain: String,
    /// Labels the node must have (checked again by the node at admission).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Its required node affinity (checked again by the node at admission).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<super::affinity::Affinity>,
    /// Entries added to the pod's managed `/etc/hosts`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub host_aliases: Vec<HostAlias>,
    /// Whether the containers get the variables of the Services of the pod's
    /// namespace (the master service's they get in any case); unset means true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_service_links: Option<bool>,
    /// The service account whose tokens projected `serviceAccountToken` sources hold.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service_account_name: String,
    /// The deprecated alias of `serviceAccountName`; moved there by the defaults.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service_account: String,
    /// Read and kept; the agent adds no volume itself (the cluster's ServiceAccount
    /// admission plugin does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automount_service_account_token: Option<bool>,
    /// One PID namespace for all the pod's containers (CRI `pid: POD`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_process_namespace: Option<bool>,
    /// `false` asks for a user namespace, which tinylet does not give: refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_users: Option<bool>,
    /// A local pod's CRI runtime handler; a cluster pod's RuntimeClass (refused).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub runtime_class_name: String,
    /// The RuntimeClass's per-pod overhead: refused (fit and cgroups do not count it).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub overhead: BTreeMap<String, Quantity>,
    /// Pod-level requests and limits: count for the QoS class, else refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<super::container::ResourceRequirements>,
    /// Only `linux` is run (kubelet's `PodOSNotSupported` otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<PodOs>,
    #[serde(rename = "setHostnameAsFQDN", skip_serializing_if = "Option::is_none")]
    pub set_hostname_as_fqdn: Option<bool>,
    /// The fields below are read only to be refused (see `node::admit::unsupported`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub readiness_gates: Vec<serde_json::Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ephemeral_containers: Vec<serde_json::Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<serde_json::Value>,
}

/// `spec.os`: the operating system the pod's containers need.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PodOs {
    pub name: String,
}

/// `spec.hostAliases[]`: one line of the pod's `/etc/hosts`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HostAlias {
    pub ip: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
}

/// What happens to a container that exits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RestartPolicy {
    #[default]
    Always,
    OnFailure,
    Never,
}

/// How the pod's resolv.conf is made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DnsPolicy {
    #[default]
    ClusterFirst,
    ClusterFirstWithHostNet,
    Default,
    None,
}

/// `spec.dnsConfig`: merged into the generated resolv.conf.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodDnsConfig {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<PodDnsConfigOption>,
}

/// One resolv.conf option (`ndots:2` is `{name: ndots, value: "2"}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PodDnsConfigOption {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `spec.securityContext`: identity and sysctls for every container of the pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSecurityContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_as_user: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_as_group: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_as_non_root: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_group: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supplemental_groups: Vec<i64>,
    /// `Merge` (the image's groups too) is what runs; `Strict` is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supplemental_groups_policy: Option<SupplementalGroupsPolicy>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sysctls: Vec<Sysctl>,
    /// Every container's, unless it sets its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seccomp_profile: Option<SecurityProfile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_armor_profile: Option<SecurityProfile>,
}

/// Whether the groups of the image's `/etc/group` are added to `supplementalGroups`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SupplementalGroupsPolicy {
    Merge,
    Strict,
}

/// A namespaced kernel parameter set in the pod's sandbox.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sysctl {
    pub name: String,
    pub value: String,
}

/// A reference by name to an object in the pod's namespace (`imagePullSecrets`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LocalObjectReference {
    pub name: String,
}

/// A pod volume: a name and exactly one of the supported sources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Volume {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty_dir: Option<EmptyDirVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_path: Option<HostPathVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projected: Option<ProjectedVolumeSource>,
    #[serde(rename = "downwardAPI", skip_serializing_if = "Option::is_none")]
    pub downward_api: Option<DownwardApiVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim: Option<PersistentVolumeClaimVolumeSource>,
}

/// A PersistentVolumeClaim of the pod's namespace: on a node, the directory of the
/// `local` or `hostPath` PersistentVolume bound to it (a cluster pod only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaimVolumeSource {
    pub claim_name: String,
    #[serde(skip_serializing_if = "is_false")]
    pub read_only: bool,
}

/// Scratch space living as long as the pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EmptyDirVolumeSource {
    #[serde(skip_serializing_if = "StorageMedium::is_default")]
    pub medium: StorageMedium,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_limit: Option<Quantity>,
}

/// Where an emptyDir lives: the node's disk (`""`) or tmpfs (`Memory`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum StorageMedium {
    #[default]
    #[serde(rename = "")]
    Default,
    Memory,
}

impl StorageMedium {
    fn is_default(&self) -> bool {
        *self == StorageMedium::Default
    }
}

/// A file or directory of the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostPathVolumeSource {
    pub path: String,
    #[serde(rename = "type")]
    pub type_: HostPathType,
}

/// What a hostPath must be (or be created as) before it is mounted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HostPathType {
    /// No check (`""`).
    #[default]
    #[serde(rename = "")]
    Unset,
    DirectoryOrCreate,
    Directory,
    FileOrCreate,
    File,
    Socket,
    CharDevice,
    BlockDevice,
}

/// A Secret's keys projected as files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecretVolumeSource {
    pub secret_name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<KeyToPath>,
    /// File mode bits (0-0777); 0644 when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// kubelet's annotation naming where a pod came from. The store sets it on every pod it
/// reads, whatever the file says, so that a pod can never claim another source's
/// configMaps and secrets.
pub const CONFIG_SOURCE: &str = "kubernetes.io/config.source";

/// Where a pod came from: the device (`tinylet apply`, firmware) or the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// `file`: the state directory or a read-only manifest directory.
    File,
    /// `api`: bound to this node in the cluster (`STATE/cluster/`).
    Api,
}

impl Source {
    /// The annotation's value (kubelet's words).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::File => "file",
            Source::Api => "api",
        }
    }
}

impl Pod {
    /// Where the pod came from ([`CONFIG_SOURCE`]; `file` when unset).
    pub fn source(&self) -> Source {
        match self
            .metadata
            .annotations
            .get(CONFIG_SOURCE)
            .map(String::as_str)
        {
            Some("api") => Source::Api,
            _ => Source::File,
        }
    }

    /// Records where the pod came from (see [`CONFIG_SOURCE`]).
    pub fn set_source(&mut self, source: Source) {
        self.metadata
            .annotations
            .insert(CONFIG_SOURCE.to_string(), source.as_str().to_string());
    }

    /// A cluster pod the API server is deleting (`deletionTimestamp` set): to be stopped
    /// with its `deletionGracePeriodSeconds`, then deleted from the API. A local pod
    /// never is (deleting it is removing its file).
    pub fn terminating(&self) -> bool {
        self.source() == Source::Api && self.metadata.deletion_timestamp.is_some()
    }

    /// The terminal phase the API shows for a cluster pod this node ran: the uplink's
    /// cache keeps `status.phase` once it is Succeeded or Failed, so that nothing of the
    /// pod is started again, also after a reboot without the uplink (kubelet's rule: a
    /// finished pod stays finished). Its stopped containers and logs stay until the pod
    /// is deleted from the API. Local pods never carry one.
    pub fn finished(&self) -> Option<PodPhase> {
        if self.source() != Source::Api {
            return None;
        }
        self.status
            .as_ref()?
            .phase
            .filter(|p| matches!(p, PodPhase::Succeeded | PodPhase::Failed))
    }

    /// Init containers then app containers, in order.
    pub fn all_containers(&self) -> impl Iterator<Item = &Container> {
        self.spec
            .init_containers
            .iter()
            .chain(&self.spec.containers)
    }
}
