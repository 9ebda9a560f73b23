//! The node's pod policy as a property: a pod that the sysctl check and the policy
//! (`node::admit::{sysctls, policy}`) accept at `baseline` or `restricted` for its
//! source never yields a CRI config (the sandbox config and each container's security
//! context, as `kuberuntime` builds them) with a host namespace the config does not
//! allow, a privileged sandbox or container, a capability added beyond the level (and
//! the allowances), an Unconfined seccomp profile of the pod's choosing or an
//! Unconfined AppArmor profile, fewer masked /proc paths than kubelet's, a sysctl
//! outside the safe set and the source's allowance, a hostPath (or a claim bound to a
//! host directory) without `allowHostPaths`, or a probe or hook aimed at a host.
//!
//! Input: two bytes choosing the config (see [`config`]), then the pod as JSON, read by
//! the real parser (`model::parse_object`: defaulting and validation).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use tinylet::config::pod_policy::Level;
use tinylet::config::Config;
use tinylet::cri::pb;
use tinylet::kuberuntime::env::BoundVolume;
use tinylet::kuberuntime::security::{SeccompPolicy, MASKED_PATHS, READONLY_PATHS};
use tinylet::model::{parse_object, Object, Pod};
use tinylet::node::admit::{policy, sysctls, volume_claims};

/// The capabilities baseline lets a container add (Pod Security Standards).
const BASELINE_CAPS: [&str; 13] = policy::BASELINE_CAPABILITIES;

/// The config two bytes choose, and whether the pod is the cluster's. Byte 0: bit 0 the
/// cluster's, 1 restricted (else baseline), 2 seccompDefault, 3 allowHostPaths, 4
/// allowHostPorts, 5-7 allowed host namespaces network, pid, ipc. Byte 1: bit 0
/// allowedCapabilities [NET_ADMIN], 1 a top-level allowedUnsafeSysctls, 2 the cluster's
/// own list, 3 the local one.
fn config(a: u8, b: u8) -> (Config, bool) {
    let bit = |byte: u8, n: u8| byte & (1 << n) != 0;
    let mut cfg = Config::default();
    let level = if bit(a, 1) {
        Level::Restricted
    } else {
        Level::Baseline
    };
    let from_cluster = bit(a, 0);
    let p = &mut cfg.pod_policy;
    if from_cluster {
        p.cluster = level;
    } else {
        p.local = level;
    }
    cfg.seccomp_default = bit(a, 2);
    p.allow_host_paths = bit(a, 3);
    p.allow_host_ports = bit(a, 4);
    for (n, ns) in [(5, "network"), (6, "pid"), (7, "ipc")] {
        if bit(a, n) {
            p.allowed_host_namespaces.push(ns.into());
        }
    }
    if bit(b, 0) {
        p.allowed_capabilities.push("NET_ADMIN".into());
    }
    if bit(b, 1) {
        cfg.allowed_unsafe_sysctls = vec!["net.core.*".into(), "kernel.msgmax".into()];
    }
    if bit(b, 2) {
        p.allowed_unsafe_sysctls.cluster = Some(vec!["kernel.shmmax".into()]);
    }
    if bit(b, 3) {
        p.allowed_unsafe_sysctls.local = Some(vec!["net.ipv4.tcp_rmem".into()]);
    }
    (cfg, from_cluster)
}

fuzz_target!(|data: &[u8]| {
    let [a, b, json @ ..] = data else { return };
    let Ok(Object::Pod(pod)) = parse_object("f", json) else {
        return;
    };
    let (cfg, from_cluster) = config(*a, *b);
    let allowed_sysctls = cfg
        .pod_policy
        .unsafe_sysctls(from_cluster, &cfg.allowed_unsafe_sysctls);
    if sysctls::check(&pod, allowed_sysctls).is_err() {
        return;
    }
    if policy::check(&pod, from_cluster, &cfg).is_err() {
        return;
    }
    let restricted = if from_cluster {
        cfg.pod_policy.cluster
    } else {
        cfg.pod_policy.local
    } == Level::Restricted;
    sandbox_holds(&pod, &cfg, allowed_sysctls);
    let seccomp = SeccompPolicy {
        default_runtime: cfg.seccomp_default,
        profile_root: Path::new("/var/lib/kubelet/seccomp"),
    };
    for c in pod.all_containers() {
        let sc = tinylet::kuberuntime::container::security_context(&pod, c, seccomp);
        container_holds(c, &sc, &cfg, restricted);
    }
    volumes_hold(&pod, &cfg, from_cluster);
});

/// Host namespaces only where allowed, never privileged, runtime's seccomp, sysctls
/// within the source's allowance.
fn sandbox_holds(pod: &Pod, cfg: &Config, allowed_sysctls: &[String]) {
    let dns = tinylet::kuberuntime::dns::ResolvConf::default();
    let sb = tinylet::kuberuntime::sandbox::sandbox_config(
        pod,
        0,
        Path::new("/l"),
        &dns,
        "/var/lib/tinylet",
    );
    let linux = sb.linux.expect("a linux config");
    let sc = linux.security_context.expect("a security context");
    assert!(!sc.privileged, "privileged sandbox accepted");
    namespaces_hold(sc.namespace_options.as_ref(), cfg);
    let seccomp = sc.seccomp.expect("a sandbox seccomp profile");
    assert_eq!(
        seccomp.profile_type,
        pb::security_profile::ProfileType::RuntimeDefault as i32
    );
    for name in linux.sysctls.keys() {
        let ok = sysctls::is_safe(name) || sysctls::allowed_unsafe(name, allowed_sysctls);
        assert!(ok, "sysctl {name} accepted outside {allowed_sysctls:?}");
    }
    if !cfg.pod_policy.allow_host_ports {
        assert!(sb.port_mappings.iter().all(|p| p.host_port == 0));
    }
}

fn namespaces_hold(ns: Option<&pb::NamespaceOption>, cfg: &Config) {
    let ns = ns.expect("namespace options");
    let node = pb::NamespaceMode::Node as i32;
    let allowed = &cfg.pod_policy.allowed_host_namespaces;
    for (mode, name) in [(ns.network, "network"), (ns.pid, "pid"), (ns.ipc, "ipc")] {
        if mode == node {
            assert!(allowed.iter().any(|a| a == name), "host {name} accepted");
        }
    }
}

fn container_holds(
    c: &tinylet::model::Container,
    sc: &pb::LinuxContainerSecurityContext,
    cfg: &Config,
    restricted: bool,
) {
    let name = &c.name;
    assert!(!sc.privileged, "{name}: privileged accepted");
    namespaces_hold(sc.namespace_options.as_ref(), cfg);
    let allowed = &cfg.pod_policy.allowed_capabilities;
    let caps = sc.capabilities.clone().unwrap_or_default();
    for cap in &caps.add_capabilities {
        let level_ok = if restricted {
            cap == "NET_BIND_SERVICE"
        } else {
            BASELINE_CAPS.contains(&cap.as_str())
        };
        assert!(level_ok || allowed.contains(cap), "{name}: {cap} added");
    }
    let unconfined = pb::security_profile::ProfileType::Unconfined as i32;
    let seccomp = sc.seccomp.clone().expect("a seccomp profile");
    if seccomp.profile_type == unconfined {
        // Only baseline, only by the absence of a profile with seccompDefault off.
        assert!(
            !restricted && !cfg.seccomp_default,
            "{name}: Unconfined seccomp accepted"
        );
    }
    let apparmor = sc.apparmor.as_ref().map(|p| p.profile_type);
    assert_ne!(
        apparmor,
        Some(unconfined),
        "{name}: Unconfined AppArmor accepted"
    );
    assert_eq!(sc.masked_paths, MASKED_PATHS, "{name}: /proc unmasked");
    assert_eq!(sc.readonly_paths, READONLY_PATHS, "{name}: /proc writable");
    if restricted {
        assert!(sc.no_new_privs, "{name}: privilege escalation accepted");
        let drops_all = caps.drop_capabilities.iter().any(|d| d == "ALL");
        assert!(drops_all, "{name}: capabilities not dropped");
        assert_ne!(sc.run_as_user.map(|u| u.value), Some(0), "{name}: root");
    }
    let probes = [&c.liveness_probe, &c.readiness_probe, &c.startup_probe];
    let hooks = c
        .lifecycle
        .iter()
        .flat_map(|l| [&l.post_start, &l.pre_stop]);
    let probe_hosts = probes.into_iter().flatten().flat_map(|p| {
        [
            p.http_get.as_ref().map(|h| &h.host),
            p.tcp_socket.as_ref().map(|t| &t.host),
        ]
    });
    let hook_hosts = hooks.flatten().flat_map(|h| {
        [
            h.http_get.as_ref().map(|g| &g.host),
            h.tcp_socket.as_ref().map(|t| &t.host),
        ]
    });
    for host in probe_hosts.chain(hook_hosts).flatten() {
        assert!(
            host.is_empty(),
            "{name}: a probe or hook aimed at {host:?} accepted"
        );
    }
}

/// No hostPath without `allowHostPaths`; a claim bound to a host directory is judged
/// as one when the uplink resolves it.
fn volumes_hold(pod: &Pod, cfg: &Config, from_cluster: bool) {
    if cfg.pod_policy.allow_host_paths {
        return;
    }
    for v in &pod.spec.volumes {
        assert!(v.host_path.is_none(), "hostPath {:?} accepted", v.name);
        let Some(claim) = &v.persistent_volume_claim else {
            continue;
        };
        let mut p = pod.clone();
        if from_cluster {
            p.metadata
                .annotations
                .insert(tinylet::model::pod::CONFIG_SOURCE.into(), "api".into());
        } else {
            p.metadata
                .annotations
                .remove(tinylet::model::pod::CONFIG_SOURCE);
        }
        let bound = BoundVolume {
            volume_name: "pv".into(),
            path: "/srv/disk".into(),
            ..Default::default()
        };
        let labels = Default::default();
        let judged = volume_claims::check(&p, &claim.claim_name, &bound, cfg, "n", &labels);
        assert!(
            judged.is_err(),
            "claim {:?} to a host directory accepted",
            claim.claim_name
        );
    }
}
