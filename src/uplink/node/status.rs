// Over 500 lines with its tests (about 330 of code).
//! The Node's `status` as kubelet v1.20 reports it, built from what the agent observed:
//! capacity and allocatable, the four conditions with kubelet's reasons and messages,
//! addresses, nodeInfo and daemonEndpoints. Pure: the caller observes, this file decides
//! what the status is and whether it changed since the last one sent.
//!
//! Conditions keep their `lastTransitionTime` while their status stays the same (also
//! across agent restarts: the priors can come from the Node in the API); heartbeats are
//! the time of building and are ignored when deciding whether the status changed, as
//! kubelet's `nodeStatusHasChanged` does, so an unchanged node costs one report per
//! `nodeStatusReportFrequency` and nothing in between.

use super::machine::Machine;
use crate::model::reason::NodeReason;
use crate::model::NodeResources;
use serde::Serialize;
use serde_json::Value;

/// What the scheduler and kubectl read from `status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// What the node has.
    pub capacity: ResourceList,
    /// What pods may use of it.
    pub allocatable: ResourceList,
    /// Ready and the pressure conditions.
    pub conditions: Vec<Condition>,
    /// The node's addresses.
    pub addresses: Vec<Address>,
    /// The kubelet's port.
    pub daemon_endpoints: DaemonEndpoints,
    /// Versions and ids of the machine and its software.
    pub node_info: NodeInfo,
}

/// Capacity or allocatable as the API spells them (a `v1.ResourceList`): the node's
/// [`crate::model::NodeResources`] in Kubernetes' canonical quantities.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceList {
    /// Logical CPUs.
    pub cpu: String,
    /// Bytes of the filesystem holding pod volumes, when known.
    #[serde(rename = "ephemeral-storage", skip_serializing_if = "Option::is_none")]
    pub ephemeral_storage: Option<String>,
    /// Bytes of memory.
    pub memory: String,
    /// Pods.
    pub pods: String,
}

/// One node condition (`v1.NodeCondition`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready`, `MemoryPressure`, ...
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// "True" or "False".
    pub status: &'static str,
    /// When it was last reported.
    pub last_heartbeat_time: String,
    /// When its status last changed.
    pub last_transition_time: String,
    /// kubelet's reason (`KubeletReady`, ...).
    pub reason: &'static str,
    /// kubelet's message.
    pub message: String,
}

/// One node address (`v1.NodeAddress`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Address {
    /// `Hostname` or `InternalIP`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The address.
    pub address: String,
}

/// `v1.NodeDaemonEndpoints`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonEndpoints {
    /// The kubelet's endpoint.
    pub kubelet_endpoint: Endpoint,
}

/// `DaemonEndpoint`: the API spells its one field `Port`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Endpoint {
    /// The port.
    #[serde(rename = "Port")]
    pub port: u16,
}

/// `v1.NodeSystemInfo`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    /// `/etc/machine-id`.
    #[serde(rename = "machineID")]
    pub machine_id: String,
    /// The DMI product UUID.
    #[serde(rename = "systemUUID")]
    pub system_uuid: String,
    /// The kernel's boot id.
    #[serde(rename = "bootID")]
    pub boot_id: String,
    /// The kernel release.
    pub kernel_version: String,
    /// The OS's name.
    pub os_image: String,
    /// The runtime and its version (`containerd://1.6.20`).
    pub container_runtime_version: String,
    /// The kubelet version reported.
    pub kubelet_version: String,
    /// The kube-proxy version (empty: tinylet runs none).
    pub kube_proxy_version: String,
    /// `linux`.
    pub operating_system: String,
    /// The Go spelling of the CPU architecture (`arm64`, `amd64`, ...).
    pub architecture: String,
}

/// A condition as last reported (by us, or found on the Node in the API): what a new
/// condition's `lastTransitionTime` is carried over from.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorCondition {
    /// The condition's type.
    pub kind: String,
    /// Its status then.
    pub status: String,
    /// `lastTransitionTime`.
    pub since: String,
}

/// Priors from a Node's `status.conditions` in the API (anything else: none).
pub fn priors_from_json(conditions: &Value) -> Vec<PriorCondition> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    conditions
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| PriorCondition {
                    kind: text(&c["type"]),
                    status: text(&c["status"]),
                    since: text(&c["lastTransitionTime"]),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The pressure conditions as the agent's pressure check decided them (the same ones
/// `tinylet get node` shows; see [`crate::node::pressure`]): true while a threshold is
/// met and for `evictionPressureTransitionPeriod` after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pressure {
    /// Memory pressure.
    pub memory: bool,
    /// Disk pressure.
    pub disk: bool,
    /// PID pressure.
    pub pid: bool,
}

/// What was observed for one status.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// kubelet's runtime and network errors (empty: the runtime is ready).
    pub runtime_errors: Vec<String>,
    /// `containerd://1.6.20` from CRI Version (empty until the runtime answered once).
    pub runtime_version: String,
    /// The pressure signals.
    pub pressure: Pressure,
}

/// The kubelet version the Node reports: the Kubernetes minor whose kubelet behaviour
/// tinylet implements, with tinylet's own version as semver build metadata (as k3s
/// reports `v1.20.2+k3s1`). Semver ignores build metadata when comparing, so every
/// version check in a v1.20 control plane sees a v1.20 kubelet; kubectl prints it as is.
pub fn kubelet_version() -> String {
    format!("v1.20.0+tinylet.{}", env!("CARGO_PKG_VERSION"))
}

/// `r` as the API spells it, with room for `pods` pods; an unknown (0) filesystem size
/// is left out.
fn resource_list(r: &NodeResources, pods: u32) -> ResourceList {
    let bytes = |n: i64| binary_si(u64::try_from(n).unwrap_or(0));
    ResourceList {
        cpu: if r.cpu_milli % 1000 == 0 {
            (r.cpu_milli / 1000).to_string()
        } else {
            format!("{}m", r.cpu_milli)
        },
        ephemeral_storage: (r.ephemeral_storage > 0).then(|| bytes(r.ephemeral_storage)),
        memory: bytes(r.memory),
        pods: pods.to_string(),
    }
}

/// The status at `now` (RFC 3339), given the machine, the observations and the
/// conditions last reported.
pub fn build(m: &Machine, obs: &Observed, priors: &[PriorCondition], now: &str) -> NodeStatus {
    let cond = |kind, truth, (r_true, m_true), (r_false, m_false): (NodeReason, &str)| {
        let (reason, message) = if truth {
            (r_true, m_true)
        } else {
            (r_false, m_false)
        };
        condition(priors, kind, truth, reason, message.to_string(), now)
    };
    let p = obs.pressure;
    let mut conditions = vec![
        cond(
            "MemoryPressure",
            p.memory,
            (
                NodeReason::KubeletHasInsufficientMemory,
                "kubelet has insufficient memory available",
            ),
            (
                NodeReason::KubeletHasSufficientMemory,
                "kubelet has sufficient memory available",
            ),
        ),
        cond(
            "DiskPressure",
            p.disk,
            (
                NodeReason::KubeletHasDiskPressure,
                "kubelet has disk pressure",
            ),
            (
                NodeReason::KubeletHasNoDiskPressure,
                "kubelet has no disk pressure",
            ),
        ),
        cond(
            "PIDPressure",
            p.pid,
            (
                NodeReason::KubeletHasInsufficientPID,
                "kubelet has insufficient PID available",
            ),
            (
                NodeReason::KubeletHasSufficientPID,
                "kubelet has sufficient PID available",
            ),
        ),
    ];
    conditions.push(match aggregate(&obs.runtime_errors) {
        None => condition(
            priors,
            "Ready",
            true,
            NodeReason::KubeletReady,
            "kubelet is posting ready status".into(),
            now,
        ),
        Some(why) => condition(
            priors,
            "Ready",
            false,
            NodeReason::KubeletNotReady,
            why,
            now,
        ),
    });
    let mut addresses = Vec::new();
    if !m.host_ip.is_empty() {
        addresses.push(Address {
            kind: "InternalIP",
            address: m.host_ip.clone(),
        });
    }
    addresses.push(Address {
        kind: "Hostname",
        address: m.hostname.clone(),
    });
    NodeStatus {
        capacity: resource_list(&m.capacity, m.max_pods),
        allocatable: resource_list(&m.allocatable, m.max_pods),
        conditions,
        addresses,
        // The kubelet API's port (`crate::kubelet_api`); 0 when it does not serve.
        daemon_endpoints: DaemonEndpoints {
            kubelet_endpoint: Endpoint {
                port: m.kubelet_port,
            },
        },
        node_info: NodeInfo {
            machine_id: m.machine_id.clone(),
            system_uuid: m.system_uuid.clone(),
            boot_id: m.boot_id.clone(),
            kernel_version: m.kernel_version.clone(),
            os_image: m.os_image.clone(),
            container_runtime_version: obs.runtime_version.clone(),
            kubelet_version: kubelet_version(),
            // No kube-proxy runs beside tinylet; the field is deprecated.
            kube_proxy_version: String::new(),
            operating_system: "linux".into(),
            architecture: crate::agent::host::go_arch().into(),
        },
    }
}

/// One condition; its transition time is carried over from the prior one of the same
/// kind when the status did not change.
fn condition(
    priors: &[PriorCondition],
    kind: &'static str,
    truth: bool,
    reason: NodeReason,
    message: String,
    now: &str,
) -> Condition {
    let status = if truth { "True" } else { "False" };
    let since = priors
        .iter()
        .find(|p| p.kind == kind && p.status == status && !p.since.is_empty())
        .map_or_else(|| now.to_string(), |p| p.since.clone());
    Condition {
        kind,
        status,
        last_heartbeat_time: now.to_string(),
        last_transition_time: since,
        reason: reason.as_str(),
        message,
    }
}

/// kubelet's aggregated error text: one error as is, several as `[a, b]`, repeats once.
fn aggregate(errors: &[String]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.len() {
        0 => None,
        1 => Some(seen[0].to_string()),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

/// The conditions of `s` as priors for the next status.
pub fn priors(s: &NodeStatus) -> Vec<PriorCondition> {
    s.conditions
        .iter()
        .map(|c| PriorCondition {
            kind: c.kind.into(),
            status: c.status.into(),
            since: c.last_transition_time.clone(),
        })
        .collect()
}

/// Whether `new` says something `old` did not: any field but the heartbeats.
pub fn changed(old: &NodeStatus, new: &NodeStatus) -> bool {
    let same_conditions = old.conditions.len() == new.conditions.len()
        && old.conditions.iter().zip(&new.conditions).all(|(a, b)| {
            a.kind == b.kind
                && a.status == b.status
                && a.reason == b.reason
                && a.message == b.message
                && a.last_transition_time == b.last_transition_time
        });
    !same_conditions
        || old.capacity != new.capacity
        || old.allocatable != new.allocatable
        || old.addresses != new.addresses
        || old.daemon_endpoints != new.daemon_endpoints
        || old.node_info != new.node_info
}

/// A byte count as Kubernetes spells a BinarySI quantity: the largest power-of-1024
/// suffix that divides it (`16Gi`, `24683652Ki`), else plain bytes.
pub fn binary_si(bytes: u64) -> String {
    const SUFFIXES: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let (mut n, mut unit) = (bytes, None);
    for s in SUFFIXES {
        if n == 0 || n % 1024 != 0 {
            break;
        }
        n /= 1024;
        unit = Some(s);
    }
    format!("{n}{}", unit.unwrap_or(""))
}

#[cfg(test)]
mod tests;
