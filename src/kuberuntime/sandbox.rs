//! A pod's CRI sandbox config, as kubelet's `generatePodSandboxConfig` makes it:
//! metadata, hostname, log directory, DNS, host ports, labels and annotations, and the
//! Linux namespace and identity options.

use super::dns::{dns_config, ResolvConf};
use super::{hash, labels};
use crate::cri::pb;
use crate::model::container::Protocol;
use crate::model::Pod;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Longest hostname the kernel takes (and kubelet truncates to).
const MAX_HOSTNAME: usize = 63;

/// `podLogsDir/NS_NAME_UID`: where the runtime writes the pod's container logs.
pub fn log_directory(pod_logs_dir: &Path, pod: &Pod) -> PathBuf {
    let m = &pod.metadata;
    pod_logs_dir.join(format!("{}_{}_{}", m.namespace, m.name, m.uid))
}

/// The hostname inside the pod: `spec.hostname`, else the pod name, cut to 63 bytes
/// without a trailing `-` or `.` (kubelet's rule).
pub fn hostname(pod: &Pod) -> String {
    let name = if pod.spec.hostname.is_empty() {
        &pod.metadata.name
    } else {
        &pod.spec.hostname
    };
    let mut h: String = name.chars().take(MAX_HOSTNAME).collect();
    while h.ends_with(['-', '.']) {
        h.pop();
    }
    h
}

/// Labels every CRI object of the pod carries: the pod's own plus its identity.
pub fn pod_labels(pod: &Pod) -> BTreeMap<String, String> {
    let m = &pod.metadata;
    let mut l = m.labels.clone();
    l.insert(labels::POD_NAME.into(), m.name.clone());
    l.insert(labels::POD_NAMESPACE.into(), m.namespace.clone());
    l.insert(labels::POD_UID.into(), m.uid.clone());
    l
}

/// The sandbox config for `pod`'s `attempt`-th sandbox, made by the agent with `mark`
/// ([`super::agent_mark`]).
pub fn sandbox_config(
    pod: &Pod,
    attempt: u32,
    pod_logs_dir: &Path,
    host_dns: &ResolvConf,
    mark: &str,
) -> pb::PodSandboxConfig {
    let m = &pod.metadata;
    let mut annotations = m.annotations.clone();
    annotations.insert(labels::SANDBOX_HASH.into(), hash::sandbox_hash(pod));
    let mut sandbox_labels = pod_labels(pod);
    sandbox_labels.insert(
        labels::KUBERNETES_CONTAINER_TYPE.into(),
        "podsandbox".into(),
    );
    // After the pod's own labels: a pod cannot claim another agent's mark.
    sandbox_labels.insert(super::agent_mark::AGENT.into(), mark.into());
    pb::PodSandboxConfig {
        metadata: Some(pb::PodSandboxMetadata {
            name: m.name.clone(),
            uid: m.uid.clone(),
            namespace: m.namespace.clone(),
            attempt,
        }),
        // A host-network pod keeps the node's hostname.
        hostname: if pod.spec.host_network {
            String::new()
        } else {
            hostname(pod)
        },
        log_directory: log_directory(pod_logs_dir, pod)
            .to_string_lossy()
            .into_owned(),
        dns_config: Some(dns_config(
            pod.spec.dns_policy,
            pod.spec.dns_config.as_ref(),
            host_dns,
        )),
        port_mappings: port_mappings(pod),
        labels: sandbox_labels,
        annotations,
        linux: Some(linux_config(pod)),
    }
}

fn port_mappings(pod: &Pod) -> Vec<pb::PortMapping> {
    pod.all_containers()
        .flat_map(|c| c.ports.iter())
        .filter(|p| p.host_port != 0)
        .map(|p| pb::PortMapping {
            protocol: match p.protocol {
                Protocol::TCP => pb::Protocol::Tcp,
                Protocol::UDP => pb::Protocol::Udp,
                Protocol::SCTP => pb::Protocol::Sctp,
            } as i32,
            container_port: p.container_port,
            host_port: p.host_port,
            host_ip: p.host_ip.clone(),
        })
        .collect()
}

/// The pod's namespace modes, shared by its sandbox and every container: the host's
/// for hostNetwork/hostPID/hostIPC, else the pod's (for PID the container's own, or the
/// pod's with `shareProcessNamespace`, as kubelet).
pub fn namespace_options(pod: &Pod) -> pb::NamespaceOption {
    let spec = &pod.spec;
    let mode = |host: bool, otherwise: pb::NamespaceMode| if host { pb::NamespaceMode::Node } else { otherwise } as i32;
    let pid = if spec.share_process_namespace == Some(true) {
        pb::NamespaceMode::Pod
    } else {
        pb::NamespaceMode::Container
    };
    pb::NamespaceOption {
        network: mode(spec.host_network, pb::NamespaceMode::Pod),
        pid: mode(spec.host_pid, pid),
        ipc: mode(spec.host_ipc, pb::NamespaceMode::Pod),
        target_id: String::new(),
    }
}

/// `supplementalGroups` plus `fsGroup` (once) of the pod's security context.
pub fn supplemental_groups(pod: &Pod) -> Vec<i64> {
    let Some(psc) = &pod.spec.security_context else {
        return Vec::new();
    };
    let mut groups = psc.supplemental_groups.clone();
    groups.extend(psc.fs_group.filter(|g| !groups.contains(g)));
    groups
}

fn linux_config(pod: &Pod) -> pb::LinuxPodSandboxConfig {
    let psc = pod.spec.security_context.clone().unwrap_or_default();
    // The sandbox must be privileged when any container is (kubelet's rule).
    let privileged = pod.all_containers().any(|c| {
        c.security_context
            .as_ref()
            .and_then(|s| s.privileged)
            .unwrap_or(false)
    });
    pb::LinuxPodSandboxConfig {
        cgroup_parent: String::new(),
        security_context: Some(pb::LinuxSandboxSecurityContext {
            namespace_options: Some(namespace_options(pod)),
            run_as_user: psc.run_as_user.map(|value| pb::Int64Value { value }),
            run_as_group: psc.run_as_group.map(|value| pb::Int64Value { value }),
            readonly_rootfs: false,
            supplemental_groups: supplemental_groups(pod),
            privileged,
            seccomp: Some(super::security::sandbox_seccomp()),
        }),
        sysctls: psc
            .sysctls
            .iter()
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::container::{ContainerPort, SecurityContext};
    use crate::model::pod::PodSecurityContext;
    use crate::model::Container;

    fn pod() -> Pod {
        let mut p = Pod::default();
        p.metadata.name = "web".into();
        p.metadata.namespace = "edge".into();
        p.metadata.uid = "u-1".into();
        p.metadata.labels.insert("app".into(), "web".into());
        p.spec.containers = vec![Container {
            name: "c".into(),
            image: "i".into(),
            ports: vec![
                ContainerPort {
                    host_port: 8080,
                    container_port: 80,
                    ..Default::default()
                },
                ContainerPort {
                    container_port: 9,
                    ..Default::default()
                },
            ],
            ..Default::default()
        }];
        p
    }

    #[test]
    fn identity_labels_logs_and_ports() {
        let c = sandbox_config(
            &pod(),
            2,
            Path::new("/var/log/pods"),
            &ResolvConf::default(),
            "/var/lib/tinylet",
        );
        let m = c.metadata.unwrap();
        assert_eq!(
            (
                m.name.as_str(),
                m.namespace.as_str(),
                m.uid.as_str(),
                m.attempt
            ),
            ("web", "edge", "u-1", 2)
        );
        assert_eq!(c.hostname, "web");
        assert_eq!(c.log_directory, "/var/log/pods/edge_web_u-1");
        assert_eq!(c.labels["app"], "web");
        assert_eq!(c.labels[labels::POD_UID], "u-1");
        assert_eq!(
            c.labels[super::super::agent_mark::AGENT],
            "/var/lib/tinylet"
        );
        assert_eq!(
            c.annotations[labels::SANDBOX_HASH],
            hash::sandbox_hash(&pod())
        );
        assert_eq!(c.port_mappings.len(), 1);
        assert_eq!(
            (
                c.port_mappings[0].host_port,
                c.port_mappings[0].container_port
            ),
            (8080, 80)
        );
    }

    #[test]
    fn namespaces_and_identity() {
        let mut p = pod();
        p.spec.host_network = true;
        p.spec.host_pid = true;
        p.spec.security_context = Some(PodSecurityContext {
            run_as_user: Some(1000),
            fs_group: Some(7),
            supplemental_groups: vec![5],
            ..Default::default()
        });
        p.spec.containers[0].security_context = Some(SecurityContext {
            privileged: Some(true),
            ..Default::default()
        });
        let c = sandbox_config(&p, 0, Path::new("/l"), &ResolvConf::default(), "/s");
        assert_eq!(c.hostname, "");
        let sc = c.linux.unwrap().security_context.unwrap();
        let ns = sc.namespace_options.unwrap();
        assert_eq!(
            (ns.network, ns.pid, ns.ipc),
            (
                pb::NamespaceMode::Node as i32,
                pb::NamespaceMode::Node as i32,
                pb::NamespaceMode::Pod as i32
            )
        );
        assert_eq!(sc.run_as_user.map(|v| v.value), Some(1000));
        assert_eq!(sc.supplemental_groups, [5, 7]);
        assert!(sc.privileged);
    }

    #[test]
    fn hostname_is_cut_to_63_without_trailing_dash() {
        let mut p = pod();
        p.spec.hostname = format!("{}-x", "a".repeat(62));
        assert_eq!(hostname(&p), "a".repeat(62));
    }
}
