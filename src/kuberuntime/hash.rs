//! Spec hashes stored in CRI annotations, so that after an agent restart the running
//! containers and sandboxes can be compared with the desired spec without restarting
//! them (adoption), and a changed spec is noticed.
//!
//! The hash is 64-bit FNV-1a over the canonical JSON of the spec (serde writes struct
//! fields in declaration order and maps sorted, so the bytes are stable), printed as 16
//! hex digits. It changes when a field the model knows changes; a new model version
//! that adds a field with a default does not change existing JSON, since defaults that
//! equal "absent" are skipped when serialising.

use crate::model::pod::{PodDnsConfig, PodSecurityContext};
use crate::model::{Container, Pod};
use serde::Serialize;

/// FNV-1a, 64 bit.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn hash_json<T: Serialize>(value: &T) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    format!("{:016x}", fnv1a64(&bytes))
}

/// The hash of one container spec (init or app).
pub fn container_hash(c: &Container) -> String {
    hash_json(c)
}

/// The pod-level fields that live in the sandbox; a change in any of them means a new
/// sandbox (and so a restart of every container), as kubelet does for namespace changes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SandboxSpec<'a> {
    host_network: bool,
    host_pid: bool,
    host_ipc: bool,
    hostname: &'a str,
    subdomain: &'a str,
    dns_policy: &'a crate::model::pod::DnsPolicy,
    dns_config: Option<&'a PodDnsConfig>,
    security_context: Option<&'a PodSecurityContext>,
    /// (protocol, containerPort, hostPort, hostIP) of every published port.
    host_ports: Vec<(String, i32, i32, &'a str)>,
    /// Left out when unset, so the hashes of sandboxes made before stay the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    share_process_namespace: Option<bool>,
    #[serde(skip_serializing_if = "str::is_empty")]
    runtime_handler: &'a str,
}

/// The hash of the sandbox-level spec of `pod`.
pub fn sandbox_hash(pod: &Pod) -> String {
    let s = &pod.spec;
    let host_ports = pod
        .all_containers()
        .flat_map(|c| c.ports.iter())
        .filter(|p| p.host_port != 0)
        .map(|p| {
            (
                format!("{:?}", p.protocol),
                p.container_port,
                p.host_port,
                p.host_ip.as_str(),
            )
        })
        .collect();
    hash_json(&SandboxSpec {
        host_network: s.host_network,
        host_pid: s.host_pid,
        host_ipc: s.host_ipc,
        hostname: &s.hostname,
        subdomain: &s.subdomain,
        dns_policy: &s.dns_policy,
        dns_config: s.dns_config.as_ref(),
        security_context: s.security_context.as_ref(),
        host_ports,
        share_process_namespace: s.share_process_namespace,
        runtime_handler: super::runtime_handler::runtime_handler(pod),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn container_hash_is_stable_and_sensitive() {
        let c = Container {
            name: "a".into(),
            image: "busybox:1".into(),
            ..Default::default()
        };
        assert_eq!(container_hash(&c), container_hash(&c.clone()));
        assert_eq!(container_hash(&c).len(), 16);
        let mut d = c.clone();
        d.args = vec!["x".into()];
        assert_ne!(container_hash(&c), container_hash(&d));
    }

    #[test]
    fn sandbox_hash_ignores_container_changes_but_not_namespaces() {
        let mut p = Pod::default();
        p.spec.containers = vec![Container {
            name: "a".into(),
            image: "i".into(),
            ..Default::default()
        }];
        let h = sandbox_hash(&p);
        p.spec.containers[0].image = "j".into();
        assert_eq!(sandbox_hash(&p), h);
        p.spec.host_network = true;
        assert_ne!(sandbox_hash(&p), h);
    }

    /// A shared PID namespace or another runtime handler is a new sandbox; unset, they
    /// leave the hash of a sandbox made before they were read as it was.
    #[test]
    fn sandbox_hash_follows_pid_sharing_and_the_handler_only_when_set() {
        let mut p = Pod::default();
        let h = sandbox_hash(&p);
        p.spec.share_process_namespace = Some(true);
        let shared = sandbox_hash(&p);
        assert_ne!(shared, h);
        p.spec.runtime_class_name = "kata".into();
        assert_ne!(sandbox_hash(&p), shared);
        p.spec.share_process_namespace = None;
        p.spec.runtime_class_name.clear();
        assert_eq!(sandbox_hash(&p), h);
        // The JSON of an unset spec holds neither key (what older sandboxes hashed).
        let json = serde_json::to_string(&SandboxSpec {
            host_network: false,
            host_pid: false,
            host_ipc: false,
            hostname: "",
            subdomain: "",
            dns_policy: &p.spec.dns_policy,
            dns_config: None,
            security_context: None,
            host_ports: Vec::new(),
            share_process_namespace: None,
            runtime_handler: "",
        })
        .unwrap();
        assert!(!json.contains("shareProcessNamespace") && !json.contains("runtimeHandler"));
    }
}
