//! The device owner's pod policy: the Pod Security Standards levels (`baseline`,
//! `restricted`; `privileged` checks nothing), checked on the pod's spec with the
//! config's allowances (`podPolicy`). Every violation is named at once, with its field
//! and the rule; the pod is refused with reason `PodSecurity`.
//!
//! Baseline refuses: host namespaces (unless allowed), privileged containers,
//! capabilities added beyond the baseline set (and the allowed ones), hostPath volumes
//! (unless allowed), host ports (unless allowed), an `Unmasked` /proc, an explicitly
//! `Unconfined` seccomp or AppArmor profile, a `host` in a probe's or lifecycle hook's
//! `httpGet`/`tcpSocket` (Pod Security v1.34+: the agent makes those connections from
//! the host's network, so a host would reach the node's loopback and LAN on the pod's
//! behalf). (Sysctls are kubelet's own check before this one, [`super::sysctls`], with
//! the `allowedUnsafeSysctls` of the pod's source: none beyond the safe set for cluster
//! pods at baseline and restricted unless the config names them for the cluster.)
//! Restricted adds: only configMap, secret, downwardAPI,
//! projected, emptyDir and persistentVolumeClaim volumes, `allowPrivilegeEscalation:
//! false` on every container, `runAsNonRoot` and no `runAsUser: 0`, a `RuntimeDefault`
//! or `Localhost` seccomp profile (the config's `seccompDefault` counts as one),
//! capabilities `drop: [ALL]` and at most `NET_BIND_SERVICE` added.

use super::Refusal;
use crate::config::pod_policy::Level;
use crate::config::Config;
use crate::model::container::{ProfileType, SecurityContext, SecurityProfile};
use crate::model::Pod;

/// The capabilities baseline lets a container add (the Pod Security Standards' list).
pub const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The volume kinds restricted allows (besides hostPath with `allowHostPaths`).
const RESTRICTED_VOLUMES: &str =
    "configMap, secret, downwardAPI, projected, emptyDir, persistentVolumeClaim";

/// The reason of a refusal by the policy.
pub const REASON: &str = "PodSecurity";

/// Checks `pod` against the level of its source.
pub fn check(pod: &Pod, from_cluster: bool, cfg: &Config) -> Result<(), Refusal> {
    let p = &cfg.pod_policy;
    let (level, source) = if from_cluster {
        (p.cluster, "cluster")
    } else {
        (p.local, "local")
    };
    if level == Level::Privileged {
        return Ok(());
    }
    let mut v = Violations::default();
    baseline(pod, cfg, &mut v);
    if level == Level::Restricted {
        restricted(pod, cfg, &mut v);
    }
    if v.0.is_empty() {
        return Ok(());
    }
    Err(Refusal::new(
        REASON,
        format_args!(
            "violates the node's pod policy {:?} for {source} pods: {}",
            level.as_str(),
            v.0.join("; ")
        ),
    ))
}

/// The violations found, each `field: what (rule)`.
#[derive(Default)]
struct Violations(Vec<String>);

impl Violations {
    fn add(&mut self, field: impl std::fmt::Display, what: impl std::fmt::Display) {
        self.0.push(format!("{field}: {what}"));
    }
}

/// The containers of `pod` with the path of each (`spec.initContainers[0]`, ...).
fn containers(pod: &Pod) -> impl Iterator<Item = (String, &crate::model::Container)> {
    let init = pod.spec.init_containers.iter().enumerate();
    let apps = pod.spec.containers.iter().enumerate();
    init.map(|(i, c)| (format!("spec.initContainers[{i}]"), c))
        .chain(apps.map(|(i, c)| (format!("spec.containers[{i}]"), c)))
}

fn sc(c: &crate::model::Container) -> SecurityContext {
    c.security_context.clone().unwrap_or_default()
}

fn unconfined(p: &Option<SecurityProfile>) -> bool {
    p.as_ref().and_then(|p| p.type_) == Some(ProfileType::Unconfined)
}

fn baseline(pod: &Pod, cfg: &Config, v: &mut Violations) {
    let policy = &cfg.pod_policy;
    let spec = &pod.spec;
    let allowed_ns = |n: &str| policy.allowed_host_namespaces.iter().any(|a| a == n);
    for (on, field, ns) in [
        (spec.host_network, "spec.hostNetwork", "network"),
        (spec.host_pid, "spec.hostPID", "pid"),
        (spec.host_ipc, "spec.hostIPC", "ipc"),
    ] {
        if on && !allowed_ns(ns) {
            v.add(field, format_args!("true (host namespaces are not allowed; podPolicy.allowedHostNamespaces can allow {ns:?})"));
        }
    }
    for (i, vol) in spec.volumes.iter().enumerate() {
        if vol.host_path.is_some() && !policy.allow_host_paths {
            v.add(
                format_args!("spec.volumes[{i}].hostPath"),
                "hostPath volumes are not allowed (podPolicy.allowHostPaths can allow them below allowedHostPaths)",
            );
        }
    }
    let psc = spec.security_context.clone().unwrap_or_default();
    if unconfined(&psc.seccomp_profile) {
        v.add(
            "spec.securityContext.seccompProfile.type",
            "Unconfined is not allowed",
        );
    }
    if unconfined(&psc.app_armor_profile) {
        v.add(
            "spec.securityContext.appArmorProfile.type",
            "Unconfined is not allowed",
        );
    }
    for (path, c) in containers(pod) {
        container_baseline(pod, &path, c, cfg, v);
    }
}

fn container_baseline(
    pod: &Pod,
    path: &str,
    c: &crate::model::Container,
    cfg: &Config,
    v: &mut Violations,
) {
    let policy = &cfg.pod_policy;
    let s = sc(c);
    if s.privileged == Some(true) {
        v.add(
            format_args!("{path}.securityContext.privileged"),
            "true (privileged containers are not allowed)",
        );
    }
    for (j, cap) in s.capabilities.iter().flat_map(|k| &k.add).enumerate() {
        let ok = BASELINE_CAPABILITIES.contains(&cap.as_str())
            || policy.allowed_capabilities.contains(cap);
        if !ok {
            v.add(
                format_args!("{path}.securityContext.capabilities.add[{j}]"),
                format_args!("{cap:?} is not allowed (podPolicy.allowedCapabilities can allow it)"),
            );
        }
    }
    if s.proc_mount == Some(crate::model::container::ProcMountType::Unmasked) {
        v.add(
            format_args!("{path}.securityContext.procMount"),
            "Unmasked is not allowed",
        );
    }
    if unconfined(&s.seccomp_profile) {
        v.add(
            format_args!("{path}.securityContext.seccompProfile.type"),
            "Unconfined is not allowed",
        );
    }
    let apparmor = crate::kuberuntime::security::container_apparmor(pod, c);
    let apparmor_unconfined = apparmor.is_some_and(|p| {
        p.profile_type == crate::cri::pb::security_profile::ProfileType::Unconfined as i32
    });
    if apparmor_unconfined {
        v.add(
            format_args!("{path} AppArmor profile"),
            "unconfined is not allowed",
        );
    }
    handler_hosts(path, c, v);
    for (j, port) in c.ports.iter().enumerate() {
        if port.host_port != 0 && !policy.allow_host_ports {
            v.add(
                format_args!("{path}.ports[{j}].hostPort"),
                format_args!(
                    "{} (host ports are not allowed; podPolicy.allowHostPorts can allow them)",
                    port.host_port
                ),
            );
        }
    }
}

/// PSS "Probes / Lifecycle Handlers": the agent, not the pod, makes these connections
/// (from the host's network), so a `host` would let a pod reach the node's own
/// loopback and LAN through it; only the pod's IP (an empty `host`) is allowed.
fn handler_hosts(path: &str, c: &crate::model::Container, v: &mut Violations) {
    let probes = [
        ("livenessProbe", c.liveness_probe.as_ref()),
        ("readinessProbe", c.readiness_probe.as_ref()),
        ("startupProbe", c.startup_probe.as_ref()),
    ];
    let probes = probes
        .into_iter()
        .filter_map(|(n, p)| Some((n, p?.http_get.as_ref(), p?.tcp_socket.as_ref())));
    let hooks = c.lifecycle.as_ref().map_or([None, None], |l| {
        [
            l.post_start.as_ref().map(|h| ("lifecycle.postStart", h)),
            l.pre_stop.as_ref().map(|h| ("lifecycle.preStop", h)),
        ]
    });
    let hooks = hooks
        .into_iter()
        .flatten()
        .map(|(n, h)| (n, h.http_get.as_ref(), h.tcp_socket.as_ref()));
    for (name, http, tcp) in probes.chain(hooks) {
        let hosts = [
            ("httpGet", http.map(|h| h.host.as_str())),
            ("tcpSocket", tcp.map(|t| t.host.as_str())),
        ];
        for (kind, host) in hosts {
            if let Some(host) = host.filter(|h| !h.is_empty()) {
                v.add(
                    format_args!("{path}.{name}.{kind}.host"),
                    format_args!("{host:?} is not allowed (only the pod's own IP: leave it empty)"),
                );
            }
        }
    }
}

fn restricted(pod: &Pod, cfg: &Config, v: &mut Violations) {
    let spec = &pod.spec;
    for (i, vol) in spec.volumes.iter().enumerate() {
        let fine = vol.config_map.is_some()
            || vol.secret.is_some()
            || vol.downward_api.is_some()
            || vol.projected.is_some()
            || vol.empty_dir.is_some()
            || vol.persistent_volume_claim.is_some()
            || (vol.host_path.is_some() && cfg.pod_policy.allow_host_paths);
        if !fine {
            v.add(
                format_args!("spec.volumes[{i}]"),
                format_args!("only {RESTRICTED_VOLUMES} volumes are allowed"),
            );
        }
    }
    let psc = spec.security_context.clone().unwrap_or_default();
    for (path, c) in containers(pod) {
        let s = sc(c);
        if s.allow_privilege_escalation != Some(false) {
            v.add(
                format_args!("{path}.securityContext.allowPrivilegeEscalation"),
                "must be false",
            );
        }
        let non_root = s.run_as_non_root.or(psc.run_as_non_root) == Some(true);
        if !non_root {
            v.add(
                format_args!("{path}.securityContext.runAsNonRoot"),
                "must be true (here or in spec.securityContext)",
            );
        }
        if s.run_as_user.or(psc.run_as_user) == Some(0) {
            v.add(
                format_args!("{path}.securityContext.runAsUser"),
                "0 (root) is not allowed",
            );
        }
        let profile = s.seccomp_profile.as_ref().or(psc.seccomp_profile.as_ref());
        let seccomp_ok = match profile.and_then(|p| p.type_) {
            Some(ProfileType::RuntimeDefault | ProfileType::Localhost) => true,
            Some(ProfileType::Unconfined) => false,
            None => cfg.seccomp_default,
        };
        if !seccomp_ok {
            v.add(
                format_args!("{path}.securityContext.seccompProfile.type"),
                "must be RuntimeDefault or Localhost (here, in spec.securityContext, or by the config's seccompDefault)",
            );
        }
        let caps = s.capabilities.clone().unwrap_or_default();
        if !caps.drop.iter().any(|d| d == "ALL") {
            v.add(
                format_args!("{path}.securityContext.capabilities.drop"),
                "must include ALL",
            );
        }
        for (j, cap) in caps.add.iter().enumerate() {
            if cap != "NET_BIND_SERVICE" && !cfg.pod_policy.allowed_capabilities.contains(cap) {
                v.add(
                    format_args!("{path}.securityContext.capabilities.add[{j}]"),
                    format_args!("{cap:?}: only NET_BIND_SERVICE may be added"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::container::{Capabilities, ContainerPort};
    use crate::model::pod::{HostPathVolumeSource, Volume};
    use crate::model::Container;

    fn cfg(level: Level) -> Config {
        let mut c = Config::default();
        c.pod_policy.cluster = level;
        c
    }

    fn pod(sc: SecurityContext) -> Pod {
        let mut p = Pod::default();
        p.spec.containers = vec![Container {
            name: "app".into(),
            security_context: Some(sc),
            ..Default::default()
        }];
        p
    }

    fn refused(p: &Pod, cfg: &Config) -> String {
        let r = check(p, true, cfg).unwrap_err();
        assert_eq!(r.reason, REASON);
        r.message
    }

    #[test]
    fn privileged_allows_everything_baseline_refuses_escapes() {
        let mut p = pod(SecurityContext {
            privileged: Some(true),
            capabilities: Some(Capabilities {
                add: vec!["SYS_ADMIN".into(), "CHOWN".into()],
                drop: vec![],
            }),
            ..Default::default()
        });
        p.spec.host_pid = true;
        p.spec.volumes = vec![Volume {
            name: "root".into(),
            host_path: Some(HostPathVolumeSource {
                path: "/".into(),
                ..Default::default()
            }),
            ..Default::default()
        }];
        p.spec.containers[0].ports = vec![ContainerPort {
            host_port: 80,
            container_port: 80,
            ..Default::default()
        }];
        assert!(check(&p, true, &cfg(Level::Privileged)).is_ok());
        let m = refused(&p, &cfg(Level::Baseline));
        assert!(
            m.starts_with("Pod violates the node's pod policy \"baseline\" for cluster pods: "),
            "{m}"
        );
        for part in [
            "spec.hostPID: true",
            "spec.volumes[0].hostPath",
            "spec.containers[0].securityContext.privileged: true",
            "spec.containers[0].securityContext.capabilities.add[0]: \"SYS_ADMIN\"",
            "spec.containers[0].ports[0].hostPort: 80",
        ] {
            assert!(m.contains(part), "{part} in {m}");
        }
        assert!(!m.contains("add[1]"), "CHOWN is baseline's: {m}");
        // The owner's allowances, and a local pod under the local level.
        let mut allowing = cfg(Level::Baseline);
        allowing.pod_policy.allowed_capabilities = vec!["SYS_ADMIN".into()];
        allowing.pod_policy.allowed_host_namespaces = vec!["pid".into()];
        allowing.pod_policy.allow_host_paths = true;
        allowing.pod_policy.allow_host_ports = true;
        let m = refused(&p, &allowing);
        assert!(
            m.ends_with("privileged: true (privileged containers are not allowed)"),
            "{m}"
        );
        assert!(
            check(&p, false, &allowing).is_ok(),
            "local pods: privileged"
        );
    }

    #[test]
    fn a_probe_or_hook_may_not_name_a_host() {
        use crate::model::container::{
            HttpGetAction, Lifecycle, LifecycleHandler, Probe, TcpSocketAction,
        };
        let http = |host: &str| HttpGetAction {
            host: host.into(),
            ..Default::default()
        };
        let tcp = |host: &str| TcpSocketAction {
            host: host.into(),
            ..Default::default()
        };
        let mut p = pod(SecurityContext::default());
        let c = &mut p.spec.containers[0];
        c.liveness_probe = Some(Probe {
            http_get: Some(http("127.0.0.1")),
            ..Default::default()
        });
        c.readiness_probe = Some(Probe {
            tcp_socket: Some(tcp("")),
            ..Default::default()
        });
        c.startup_probe = Some(Probe {
            tcp_socket: Some(tcp("192.168.1.1")),
            ..Default::default()
        });
        c.lifecycle = Some(Lifecycle {
            post_start: Some(LifecycleHandler {
                http_get: Some(http("")),
                ..Default::default()
            }),
            pre_stop: Some(LifecycleHandler {
                tcp_socket: Some(tcp("router.lan")),
                ..Default::default()
            }),
            ..Default::default()
        });
        let mut init = p.spec.containers[0].clone();
        init.lifecycle = None;
        init.startup_probe = None;
        p.spec.init_containers = vec![init];
        assert!(check(&p, true, &cfg(Level::Privileged)).is_ok());
        let m = refused(&p, &cfg(Level::Baseline));
        for field in [
            "spec.initContainers[0].livenessProbe.httpGet.host",
            "spec.containers[0].livenessProbe.httpGet.host",
            "spec.containers[0].startupProbe.tcpSocket.host",
            "spec.containers[0].lifecycle.preStop.tcpSocket.host",
        ] {
            assert!(m.contains(&format!("{field}: ")), "{field} in {m}");
        }
        assert_eq!(m.matches(".host: ").count(), 4, "empty hosts are fine: {m}");
        assert!(m.contains("host: \"router.lan\" is not allowed"), "{m}");
    }

    #[test]
    fn restricted_wants_a_hardened_container() {
        let hardened = SecurityContext {
            allow_privilege_escalation: Some(false),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities {
                add: vec!["NET_BIND_SERVICE".into()],
                drop: vec!["ALL".into()],
            }),
            ..Default::default()
        };
        let mut c = cfg(Level::Restricted);
        assert!(
            check(&pod(hardened.clone()), true, &c).is_ok(),
            "seccompDefault counts"
        );
        c.seccomp_default = false;
        let m = refused(&pod(hardened.clone()), &c);
        assert!(
            m.contains("seccompProfile.type: must be RuntimeDefault or Localhost"),
            "{m}"
        );
        let m = refused(&pod(SecurityContext::default()), &cfg(Level::Restricted));
        for part in [
            "allowPrivilegeEscalation: must be false",
            "runAsNonRoot: must be true",
            "capabilities.drop: must include ALL",
        ] {
            assert!(m.contains(part), "{part} in {m}");
        }
        let mut root = hardened;
        root.run_as_user = Some(0);
        let m = refused(&pod(root), &cfg(Level::Restricted));
        assert!(m.contains("runAsUser: 0 (root) is not allowed"), "{m}");
    }
}
