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
use serde::Serialize;
use serde_json::Value;

/// What the scheduler and kubectl read from `status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// What the node has.
    pub capacity: Resources,
    /// What pods may use of it.
    pub allocatable: Resources,
    /// Ready and the pressure conditions.
    pub conditions: Vec<Condition>,
    /// The node's addresses.
    pub addresses: Vec<Address>,
    /// The kubelet's port.
    pub daemon_endpoints: DaemonEndpoints,
    /// Versions and ids of the machine and its software.
    pub node_info: NodeInfo,
}

/// Capacity or allocatable, as quantities in Kubernetes' canonical spelling.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resources {
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

/// Pressure signals. tinylet has no eviction thresholds (kubelet's `evictionHard`
/// empty), so the agent never reports pressure, exactly as kubelet without thresholds;
/// a future eviction module sets these.
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

/// The status at `now` (RFC 3339), given the machine, the observations and the
/// conditions last reported.
pub fn build(m: &Machine, obs: &Observed, priors: &[PriorCondition], now: &str) -> NodeStatus {
    let capacity = Resources {
        cpu: m.cpus.to_string(),
        ephemeral_storage: m.ephemeral_storage.map(binary_si),
        memory: binary_si(m.memory),
        pods: m.max_pods.to_string(),
    };
    let cond = |kind, truth, (r_true, m_true), (r_false, m_false): (&'static str, &str)| {
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
                "KubeletHasInsufficientMemory",
                "kubelet has insufficient memory available",
            ),
            (
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
        ),
        cond(
            "DiskPressure",
            p.disk,
            ("KubeletHasDiskPressure", "kubelet has disk pressure"),
            ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ),
        cond(
            "PIDPressure",
            p.pid,
            (
                "KubeletHasInsufficientPID",
                "kubelet has insufficient PID available",
            ),
            (
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
            ),
        ),
    ];
    conditions.push(match aggregate(&obs.runtime_errors) {
        None => condition(
            priors,
            "Ready",
            true,
            "KubeletReady",
            "kubelet is posting ready status".into(),
            now,
        ),
        Some(why) => condition(priors, "Ready", false, "KubeletNotReady", why, now),
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
    let cpu_milli = u64::from(m.cpus).saturating_mul(1000);
    let cpu_milli = cpu_milli.saturating_sub(m.reserved.0);
    NodeStatus {
        allocatable: Resources {
            cpu: if cpu_milli % 1000 == 0 {
                (cpu_milli / 1000).to_string()
            } else {
                format!("{cpu_milli}m")
            },
            memory: binary_si(m.memory.saturating_sub(m.reserved.1)),
            ..capacity.clone()
        },
        capacity,
        conditions,
        addresses,
        // tinylet serves no kubelet API (logs, exec) yet: port 0 says so.
        daemon_endpoints: DaemonEndpoints {
            kubelet_endpoint: Endpoint { port: 0 },
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
            architecture: crate::uplink::client::go_arch().into(),
        },
    }
}

/// One condition; its transition time is carried over from the prior one of the same
/// kind when the status did not change.
fn condition(
    priors: &[PriorCondition],
    kind: &'static str,
    truth: bool,
    reason: &'static str,
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
        reason,
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
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine {
            hostname: "gw1".into(),
            host_ip: "192.0.2.15".into(),
            cpus: 4,
            memory: 2 << 30,
            ephemeral_storage: Some(24683652 * 1024),
            max_pods: 110,
            reserved: (0, 0),
            machine_id: "m".into(),
            system_uuid: String::new(),
            boot_id: "b".into(),
            kernel_version: "6.1.0".into(),
            os_image: "OpenWrt 23.05".into(),
        }
    }

    fn ready() -> Observed {
        Observed {
            runtime_version: "containerd://1.6.20".into(),
            ..Default::default()
        }
    }

    fn get<'a>(s: &'a NodeStatus, kind: &str) -> &'a Condition {
        s.conditions.iter().find(|c| c.kind == kind).unwrap()
    }

    #[test]
    fn a_ready_node_looks_like_kubelets() {
        let s = build(&machine(), &ready(), &[], "T1");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json["capacity"],
            serde_json::json!({"cpu": "4", "ephemeral-storage": "24683652Ki",
                "memory": "2Gi", "pods": "110"})
        );
        assert_eq!(json["allocatable"], json["capacity"]);
        let reserved = Machine {
            reserved: (300, 320 << 20),
            ..machine()
        };
        let json = serde_json::to_value(build(&reserved, &ready(), &[], "T1")).unwrap();
        assert_eq!(
            json["allocatable"],
            serde_json::json!({"cpu": "3700m", "ephemeral-storage": "24683652Ki",
                "memory": "1728Mi", "pods": "110"})
        );
        let kinds: Vec<&str> = s.conditions.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        );
        let r = get(&s, "Ready");
        assert_eq!(
            (r.status, r.reason, r.message.as_str()),
            ("True", "KubeletReady", "kubelet is posting ready status")
        );
        let m = get(&s, "MemoryPressure");
        assert_eq!(
            (m.status, m.reason, m.message.as_str()),
            (
                "False",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available"
            )
        );
        assert_eq!(get(&s, "DiskPressure").reason, "KubeletHasNoDiskPressure");
        assert_eq!(get(&s, "PIDPressure").reason, "KubeletHasSufficientPID");
        assert_eq!(r.last_transition_time, "T1");
        assert_eq!(
            json["addresses"],
            serde_json::json!([{"type": "InternalIP", "address": "192.0.2.15"},
                {"type": "Hostname", "address": "gw1"}])
        );
        assert_eq!(json["daemonEndpoints"]["kubeletEndpoint"]["Port"], 0);
        let info = &json["nodeInfo"];
        assert_eq!(info["machineID"], "m");
        assert_eq!(info["bootID"], "b");
        assert_eq!(info["containerRuntimeVersion"], "containerd://1.6.20");
        assert_eq!(info["operatingSystem"], "linux");
        assert!(info["kubeletVersion"]
            .as_str()
            .unwrap()
            .starts_with("v1.20.0+tinylet."));
    }

    #[test]
    fn transition_times_move_only_on_transitions() {
        let m = machine();
        let s1 = build(&m, &ready(), &[], "T1");
        // Same status later: transition times kept, heartbeats new, nothing changed.
        let s2 = build(&m, &ready(), &priors(&s1), "T2");
        assert_eq!(get(&s2, "Ready").last_transition_time, "T1");
        assert_eq!(get(&s2, "Ready").last_heartbeat_time, "T2");
        assert!(!changed(&s1, &s2));
        // The runtime goes away: Ready False at T3, the others keep T1.
        let down = Observed {
            runtime_errors: vec!["container runtime is down".into()],
            ..ready()
        };
        let s3 = build(&m, &down, &priors(&s2), "T3");
        let r = get(&s3, "Ready");
        assert_eq!(
            (r.status, r.reason, r.message.as_str()),
            ("False", "KubeletNotReady", "container runtime is down")
        );
        assert_eq!(r.last_transition_time, "T3");
        assert_eq!(get(&s3, "MemoryPressure").last_transition_time, "T1");
        assert!(changed(&s2, &s3));
        // Another reason while still not ready: a change, but no transition.
        let worse = Observed {
            runtime_errors: vec![
                "container runtime is down".into(),
                "runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni".into(),
                "container runtime is down".into(),
            ],
            ..ready()
        };
        let s4 = build(&m, &worse, &priors(&s3), "T4");
        let r = get(&s4, "Ready");
        assert_eq!(r.last_transition_time, "T3");
        assert_eq!(
            r.message,
            "[container runtime is down, runtime network not ready: NetworkReady=false \
             reason:NetworkPluginNotReady message:cni]"
        );
        assert!(changed(&s3, &s4));
        // Back: True again at T5.
        let s5 = build(&m, &ready(), &priors(&s4), "T5");
        assert_eq!(get(&s5, "Ready").last_transition_time, "T5");
        // Pressure flips its own condition only.
        let pressed = Observed {
            pressure: Pressure {
                memory: true,
                ..Default::default()
            },
            ..ready()
        };
        let s6 = build(&m, &pressed, &priors(&s5), "T6");
        let mp = get(&s6, "MemoryPressure");
        assert_eq!(
            (mp.status, mp.reason, mp.last_transition_time.as_str()),
            ("True", "KubeletHasInsufficientMemory", "T6")
        );
        assert_eq!(get(&s6, "Ready").last_transition_time, "T5");
    }

    #[test]
    fn priors_from_the_api_carry_transition_times_over_a_restart() {
        let api = priors_from_json(&serde_json::json!([
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": "T0"},
            {"type": "MemoryPressure", "status": "Unknown", "lastTransitionTime": "T0"},
            {"type": "NetworkUnavailable", "status": "False"}]));
        assert_eq!(api.len(), 3);
        assert!(priors_from_json(&serde_json::json!({"x": 1})).is_empty());
        let s = build(&machine(), &ready(), &api, "T9");
        assert_eq!(get(&s, "Ready").last_transition_time, "T0");
        // Unknown (set by the node controller) -> False is a transition.
        assert_eq!(get(&s, "MemoryPressure").last_transition_time, "T9");
    }

    #[test]
    fn other_fields_are_changes_too() {
        let m = machine();
        let s1 = build(&m, &ready(), &[], "T1");
        let newer = Observed {
            runtime_version: "containerd://1.7.0".into(),
            ..ready()
        };
        assert!(changed(&s1, &build(&m, &newer, &priors(&s1), "T2")));
        let moved = Machine {
            host_ip: "192.0.2.16".into(),
            ..machine()
        };
        assert!(changed(&s1, &build(&moved, &ready(), &priors(&s1), "T2")));
        let no_ip = Machine {
            host_ip: String::new(),
            ..machine()
        };
        let s = build(&no_ip, &ready(), &[], "T1");
        assert_eq!(s.addresses.len(), 1);
        assert_eq!(s.addresses[0].kind, "Hostname");
    }

    #[test]
    fn quantities_are_canonical() {
        assert_eq!(binary_si(0), "0");
        assert_eq!(binary_si(1000), "1000");
        assert_eq!(binary_si(1024), "1Ki");
        assert_eq!(binary_si(1536 * 1024), "1536Ki");
        assert_eq!(binary_si(16 << 30), "16Gi");
        assert_eq!(binary_si(25_276_059_648), "24683652Ki");
        assert_eq!(binary_si(1 << 60), "1Ei");
        assert_eq!(binary_si(1 << 62), "4Ei");
    }
}
