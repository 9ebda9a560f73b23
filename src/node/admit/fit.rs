//! kubelet's resource predicates at admission: the node's pressure (no new best-effort
//! pod under memory pressure, no new pod under disk pressure; critical pods always),
//! `maxPods`, the pod's requests against what the admitted pods that have not finished
//! leave of the node's allocatable (CPU, memory, ephemeral storage), and host ports
//! already taken. On a 128 MB board this is what keeps a cluster that binds too many
//! pods to it from taking it down: the extra pods are `Failed`, not started.

use super::Refusal;
use crate::kuberuntime::resources::{qos_class, QosClass};
use crate::model::container::Protocol;
use crate::model::{Container, Pod};
use crate::node::pod_resources::pod_total;

/// A container's request of one resource; one not given is its limit's (the API
/// server's default), else 0.
fn container_request(c: &Container, name: &str, milli: bool) -> i64 {
    let q = c
        .resources
        .requests
        .get(name)
        .or_else(|| c.resources.limits.get(name));
    q.map_or(0, |q| if milli { q.milli_value() } else { q.value() })
}

/// What one pod asks of the node: CPU millis, memory bytes, ephemeral-storage bytes.
fn requests(pod: &Pod) -> [i64; 3] {
    [
        pod_total(pod, |c| container_request(c, "cpu", true)),
        pod_total(pod, |c| container_request(c, "memory", false)),
        pod_total(pod, |c| container_request(c, "ephemeral-storage", false)),
    ]
}

/// kubelet's critical pods: never refused for pressure.
fn critical(pod: &Pod) -> bool {
    matches!(
        pod.spec.priority_class_name.as_str(),
        "system-node-critical" | "system-cluster-critical"
    ) || pod.spec.priority.is_some_and(|p| p >= 2_000_000_000)
}

/// No new best-effort pod under memory pressure, no new pod under disk pressure
/// (kubelet's eviction manager's admission: reason `Evicted`).
pub fn pressure(pod: &Pod, node: &super::NodeView<'_>) -> Result<(), Refusal> {
    if critical(pod) {
        return Ok(());
    }
    let condition = if node.disk_pressure {
        Some("DiskPressure")
    } else if node.memory_pressure && qos_class(pod) == QosClass::BestEffort {
        Some("MemoryPressure")
    } else {
        None
    };
    match condition {
        Some(c) => Err(Refusal::new(
            "Evicted",
            format_args!("The node had condition: [{c}]. "),
        )),
        None => Ok(()),
    }
}

/// `maxPods` and the requests against allocatable, in kubelet's order (pods, cpu,
/// memory, ephemeral-storage); the first that does not fit is the reason.
pub fn resources(
    pod: &Pod,
    running: &[&Pod],
    node: &super::NodeView<'_>,
    max_pods: u32,
) -> Result<(), Refusal> {
    let used_pods = running.len() as i64;
    if used_pods + 1 > i64::from(max_pods) {
        return Err(insufficient("pods", 1, used_pods, i64::from(max_pods)));
    }
    let want = requests(pod);
    let mut used = [0i64; 3];
    for p in running {
        for (u, r) in used.iter_mut().zip(requests(p)) {
            *u = u.saturating_add(r);
        }
    }
    let a = &node.allocatable;
    let capacity = [a.cpu_milli, a.memory, a.ephemeral_storage];
    for (i, name) in ["cpu", "memory", "ephemeral-storage"]
        .into_iter()
        .enumerate()
    {
        // A capacity not known (0) is not checked, as the scheduler skips it.
        if want[i] > 0 && capacity[i] > 0 && used[i].saturating_add(want[i]) > capacity[i] {
            return Err(insufficient(name, want[i], used[i], capacity[i]));
        }
    }
    Ok(())
}

fn insufficient(name: &str, requested: i64, used: i64, capacity: i64) -> Refusal {
    let reason = match name {
        "pods" => "OutOfpods",
        "cpu" => "OutOfcpu",
        "memory" => "OutOfmemory",
        _ => "OutOfephemeral-storage",
    };
    Refusal::new(
        reason,
        format_args!(
            "Node didn't have enough resource: {name}, requested: {requested}, used: {used}, capacity: {capacity}"
        ),
    )
}

/// The host ports a pod takes: (protocol, host IP or empty for every address, port).
fn host_ports(pod: &Pod) -> Vec<(Protocol, &str, i32)> {
    pod.all_containers()
        .flat_map(|c| &c.ports)
        .filter(|p| p.host_port != 0)
        .map(|p| {
            let ip = if p.host_ip == "0.0.0.0" {
                ""
            } else {
                p.host_ip.as_str()
            };
            (p.protocol, ip, p.host_port)
        })
        .collect()
}

/// A host port of `pod` another admitted pod already takes (the same protocol and port
/// on an overlapping address) is kubelet's `NodePorts`.
pub fn host_ports_free(pod: &Pod, running: &[&Pod]) -> Result<(), Refusal> {
    let taken: Vec<(Protocol, &str, i32)> = running.iter().flat_map(|p| host_ports(p)).collect();
    let clash = host_ports(pod).into_iter().any(|(proto, ip, port)| {
        taken.iter().any(|&(tp, tip, tport)| {
            tp == proto && tport == port && (ip.is_empty() || tip.is_empty() || ip == tip)
        })
    });
    if clash {
        return Err(Refusal::new("NodePorts", "Predicate NodePorts failed"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::container::ContainerPort;
    use crate::model::NodeResources;
    use crate::model::Quantity;
    use std::collections::BTreeMap;

    fn pod(cpu: &str, mem: &str) -> Pod {
        let mut c = Container::default();
        for (k, v) in [("cpu", cpu), ("memory", mem)] {
            if !v.is_empty() {
                c.resources
                    .requests
                    .insert(k.into(), Quantity::parse(v).unwrap());
            }
        }
        let mut p = Pod::default();
        p.spec.containers = vec![c];
        p
    }

    fn node(labels: &BTreeMap<String, String>) -> super::super::NodeView<'_> {
        super::super::NodeView {
            name: "gw1",
            labels,
            allocatable: NodeResources {
                cpu_milli: 1000,
                memory: 128 << 20,
                ..NodeResources::default()
            },
            memory_pressure: false,
            disk_pressure: false,
        }
    }

    #[test]
    fn requests_must_fit_what_the_others_leave() {
        let labels = BTreeMap::new();
        let n = node(&labels);
        let a = pod("600m", "64Mi");
        let b = pod("300m", "32Mi");
        assert!(resources(&b, &[&a], &n, 110).is_ok());
        let c = pod("200m", "");
        let e = resources(&c, &[&a, &b], &n, 110).unwrap_err();
        assert_eq!(e.reason, "OutOfcpu");
        assert_eq!(
            e.message,
            "Pod Node didn't have enough resource: cpu, requested: 200, used: 900, capacity: 1000"
        );
        let d = pod("", "64Mi");
        assert_eq!(
            resources(&d, &[&a, &b], &n, 110).unwrap_err().reason,
            "OutOfmemory"
        );
        let e = resources(&pod("", ""), &[&a, &b], &n, 2).unwrap_err();
        assert_eq!(e.reason, "OutOfpods");
        // A best-effort pod asks for nothing: it fits while pods are left.
        assert!(resources(&pod("", ""), &[&a, &b], &n, 3).is_ok());
        // Init containers run one at a time: the largest counts if more than the apps.
        let mut init = pod("100m", "");
        init.spec.init_containers = vec![pod("500m", "").spec.containers[0].clone()];
        assert_eq!(requests(&init)[0], 500);
    }

    #[test]
    fn pressure_refuses_best_effort_or_all_but_critical() {
        let labels = BTreeMap::new();
        let mut n = node(&labels);
        n.memory_pressure = true;
        let e = pressure(&pod("", ""), &n).unwrap_err();
        assert_eq!(
            (e.reason, e.message.as_str()),
            ("Evicted", "Pod The node had condition: [MemoryPressure]. ")
        );
        assert!(pressure(&pod("100m", ""), &n).is_ok(), "burstable");
        n.disk_pressure = true;
        assert!(pressure(&pod("100m", ""), &n).is_err());
        let mut crit = pod("", "");
        crit.spec.priority_class_name = "system-node-critical".into();
        assert!(pressure(&crit, &n).is_ok());
    }

    #[test]
    fn host_ports_clash_on_protocol_port_and_address() {
        let with = |port: i32, proto: Protocol, ip: &str| {
            let mut p = pod("", "");
            p.spec.containers[0].ports = vec![ContainerPort {
                host_port: port,
                container_port: 80,
                protocol: proto,
                host_ip: ip.into(),
                ..Default::default()
            }];
            p
        };
        let a = with(8080, Protocol::TCP, "");
        assert!(host_ports_free(&with(8080, Protocol::UDP, ""), &[&a]).is_ok());
        assert!(host_ports_free(&with(8081, Protocol::TCP, ""), &[&a]).is_ok());
        let e = host_ports_free(&with(8080, Protocol::TCP, "10.0.0.1"), &[&a]).unwrap_err();
        assert_eq!(e.reason, "NodePorts");
        let b = with(9090, Protocol::TCP, "10.0.0.1");
        assert!(host_ports_free(&with(9090, Protocol::TCP, "10.0.0.2"), &[&b]).is_ok());
        assert!(host_ports_free(&with(9090, Protocol::TCP, "0.0.0.0"), &[&b]).is_err());
    }
}
