//! kubelet's sysctl admission: a pod may set the safe sysctls (namespaced, and harmless
//! to other pods) and those the config's `allowedUnsafeSysctls` names (exactly, or by a
//! prefix ending in `*`), when they are namespaced by the kernel (an IPC or network
//! sysctl is refused in a pod sharing the host's IPC or network namespace). Anything
//! else is `SysctlForbidden`, as under kubelet.

use super::Refusal;
use crate::model::Pod;

/// kubelet's safe set: always allowed.
const SAFE: [&str; 5] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
];

/// The reason of a refused sysctl.
pub const REASON: &str = "SysctlForbidden";

/// Which namespace of the host a sysctl belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Namespace {
    Ipc,
    Net,
}

/// The kernel namespace of `name`, when it is namespaced (kubelet's table).
fn namespace(name: &str) -> Option<Namespace> {
    if name == "kernel.sem"
        || ["kernel.shm", "kernel.msg", "fs.mqueue."]
            .iter()
            .any(|p| name.starts_with(p))
    {
        return Some(Namespace::Ipc);
    }
    name.starts_with("net.").then_some(Namespace::Net)
}

/// Whether `name` is in kubelet's safe set.
pub fn is_safe(name: &str) -> bool {
    SAFE.contains(&name)
}

/// Whether `name` is named by one of `patterns` (`net.core.somaxconn`, `kernel.msg*`).
pub fn allowed_unsafe(name: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == p,
    })
}

/// Checks the pod's sysctls.
pub fn check(pod: &Pod, allowed: &[String]) -> Result<(), Refusal> {
    let Some(sc) = &pod.spec.security_context else {
        return Ok(());
    };
    for s in &sc.sysctls {
        let name = s.name.as_str();
        if !is_safe(name) && !allowed_unsafe(name, allowed) {
            return Err(forbidden(format_args!("{name:?} not allowlisted")));
        }
        let host = match namespace(name) {
            None => {
                return Err(forbidden(format_args!(
                    "{name:?} is not known to be namespaced"
                )))
            }
            Some(Namespace::Net) => pod.spec.host_network.then_some("net"),
            Some(Namespace::Ipc) => pod.spec.host_ipc.then_some("ipc"),
        };
        if let Some(ns) = host {
            return Err(forbidden(format_args!(
                "{name:?} not allowed with host {ns} enabled"
            )));
        }
    }
    Ok(())
}

fn forbidden(why: std::fmt::Arguments<'_>) -> Refusal {
    Refusal::new(REASON, format_args!("forbidden sysctl: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pod::{PodSecurityContext, Sysctl};

    fn pod(names: &[&str]) -> Pod {
        let mut p = Pod::default();
        p.spec.security_context = Some(PodSecurityContext {
            sysctls: names
                .iter()
                .map(|n| Sysctl {
                    name: n.to_string(),
                    value: "1".into(),
                })
                .collect(),
            ..Default::default()
        });
        p
    }

    #[test]
    fn safe_and_allowed_namespaced_sysctls_only() {
        assert!(check(
            &pod(&["net.ipv4.tcp_syncookies", "kernel.shm_rmid_forced"]),
            &[]
        )
        .is_ok());
        let e = check(&pod(&["net.core.somaxconn"]), &[]).unwrap_err();
        assert_eq!(e.reason, "SysctlForbidden");
        assert_eq!(
            e.message,
            "Pod forbidden sysctl: \"net.core.somaxconn\" not allowlisted"
        );
        let allowed = ["net.core.*".to_string(), "kernel.msgmax".to_string()];
        assert!(check(&pod(&["net.core.somaxconn", "kernel.msgmax"]), &allowed).is_ok());
        let e = check(&pod(&["vm.swappiness"]), &["vm.*".into()]).unwrap_err();
        assert!(
            e.message.contains("not known to be namespaced"),
            "{}",
            e.message
        );
        let mut host = pod(&["net.ipv4.tcp_syncookies"]);
        host.spec.host_network = true;
        let e = check(&host, &[]).unwrap_err();
        assert!(
            e.message.contains("not allowed with host net enabled"),
            "{}",
            e.message
        );
    }
}
