//! The Linux security settings kubelet sends besides identity and capabilities: which
//! /proc and /sys paths a container sees masked or read-only, and the seccomp and
//! AppArmor profiles of the sandbox and of each container.
//!
//! containerd applies no masked or read-only paths at all when the lists are empty, so
//! without kubelet's defaults a root container could write `/proc/sys` and read
//! `/proc/kcore`. The lists are facts carried from kubelet (`pkg/securitycontext`),
//! which keeps them in step with Docker's.

use crate::cri::pb;
use crate::cri::pb::security_profile::ProfileType as PbType;
use crate::model::container::{ProcMountType, ProfileType, SecurityProfile};
use crate::model::container::{SecurityContext, APPARMOR_ANNOTATION_PREFIX};
use crate::model::{Container, Pod};
use std::path::Path;

/// Hidden from every non-privileged container (a file behind /dev/null, a directory
/// behind an empty read-only tmpfs); paths the kernel lacks are skipped by the runtime.
pub const MASKED_PATHS: [&str; 11] = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];

/// Read-only in every non-privileged container.
pub const READONLY_PATHS: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// How containers without a seccomp profile of their own are confined.
#[derive(Debug, Clone, Copy)]
pub struct SeccompPolicy<'a> {
    /// kubelet's `seccompDefault`: RuntimeDefault instead of Unconfined.
    pub default_runtime: bool,
    /// Where `Localhost` profiles are found.
    pub profile_root: &'a Path,
}

fn container_sc(c: &Container) -> Option<&SecurityContext> {
    c.security_context.as_ref()
}

/// (masked, read-only) paths: kubelet's lists, none with `procMount: Unmasked`, and
/// none for a privileged container (privileged means nothing masked and /proc and /sys
/// writable: CRI runtimes drop the lists for it anyway).
pub fn proc_paths(c: &Container) -> (Vec<String>, Vec<String>) {
    let sc = container_sc(c);
    let privileged = sc.and_then(|s| s.privileged) == Some(true);
    let unmasked = sc.and_then(|s| s.proc_mount) == Some(ProcMountType::Unmasked);
    if privileged || unmasked {
        return (Vec::new(), Vec::new());
    }
    let owned = |list: &[&str]| list.iter().map(|p| p.to_string()).collect();
    (owned(&MASKED_PATHS), owned(&READONLY_PATHS))
}

/// kubelet's seccomp choice: the container's profile, else the pod's, else
/// RuntimeDefault under `seccompDefault` and Unconfined without. A `Localhost` profile
/// is a file below the profile root (validation keeps it relative and without `..`).
pub fn container_seccomp(pod: &Pod, c: &Container, policy: SeccompPolicy) -> pb::SecurityProfile {
    let chosen = container_sc(c)
        .and_then(|s| s.seccomp_profile.as_ref())
        .or_else(|| pod.spec.security_context.as_ref()?.seccomp_profile.as_ref());
    match chosen {
        Some(p) => to_pb(p, |name| {
            policy
                .profile_root
                .join(name)
                .to_string_lossy()
                .into_owned()
        }),
        None if policy.default_runtime => profile(PbType::RuntimeDefault, String::new()),
        None => profile(PbType::Unconfined, String::new()),
    }
}

/// The sandbox (pause) always runs under the runtime's default seccomp profile, as
/// kubelet has it, whatever its containers choose.
pub fn sandbox_seccomp() -> pb::SecurityProfile {
    profile(PbType::RuntimeDefault, String::new())
}

/// kubelet's AppArmor choice: the container's profile, else the legacy per-container
/// annotation, else the pod's. None leaves it to the runtime, which applies its default
/// where the host has AppArmor and nothing where it has not; an explicit profile other
/// than Unconfined fails that container on a host without AppArmor (containerd:
/// "apparmor is not supported"), as kubelet refuses such a pod.
pub fn container_apparmor(pod: &Pod, c: &Container) -> Option<pb::SecurityProfile> {
    let annotation = || {
        let key = format!("{APPARMOR_ANNOTATION_PREFIX}{}", c.name);
        SecurityProfile::from_apparmor_annotation(pod.metadata.annotations.get(&key)?)
    };
    let chosen = container_sc(c)
        .and_then(|s| s.app_armor_profile.clone())
        .or_else(annotation)
        .or_else(|| {
            pod.spec
                .security_context
                .as_ref()?
                .app_armor_profile
                .clone()
        })?;
    Some(to_pb(&chosen, str::to_string))
}

/// A model profile on the wire; `localhost` turns the profile name into the reference
/// the runtime wants.
fn to_pb(p: &SecurityProfile, localhost: impl FnOnce(&str) -> String) -> pb::SecurityProfile {
    match p.type_ {
        Some(ProfileType::Localhost) => profile(
            PbType::Localhost,
            localhost(p.localhost_profile.as_deref().unwrap_or_default()),
        ),
        Some(ProfileType::Unconfined) => profile(PbType::Unconfined, String::new()),
        // Validation requires a type; RuntimeDefault is the safe reading of none.
        Some(ProfileType::RuntimeDefault) | None => profile(PbType::RuntimeDefault, String::new()),
    }
}

fn profile(t: PbType, localhost_ref: String) -> pb::SecurityProfile {
    pb::SecurityProfile {
        profile_type: t as i32,
        localhost_ref,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pod::PodSecurityContext;
    use std::collections::BTreeMap;

    fn profile_of(t: ProfileType, local: Option<&str>) -> Option<SecurityProfile> {
        Some(SecurityProfile {
            type_: Some(t),
            localhost_profile: local.map(str::to_string),
        })
    }

    fn pod_with(
        pod_sc: Option<PodSecurityContext>,
        c_sc: Option<SecurityContext>,
    ) -> (Pod, Container) {
        let c = Container {
            name: "app".into(),
            security_context: c_sc,
            ..Default::default()
        };
        let mut p = Pod::default();
        p.spec.security_context = pod_sc;
        p.spec.containers = vec![c.clone()];
        (p, c)
    }

    /// A pod security context with these seccomp and AppArmor profiles.
    fn pod_profiles(
        seccomp_profile: Option<SecurityProfile>,
        app_armor_profile: Option<SecurityProfile>,
    ) -> Option<PodSecurityContext> {
        Some(PodSecurityContext {
            seccomp_profile,
            app_armor_profile,
            ..Default::default()
        })
    }

    const ROOT: &str = "/var/lib/kubelet/seccomp";

    fn seccomp(p: &Pod, c: &Container, default_runtime: bool) -> (i32, String) {
        let policy = SeccompPolicy {
            default_runtime,
            profile_root: Path::new(ROOT),
        };
        let s = container_seccomp(p, c, policy);
        (s.profile_type, s.localhost_ref)
    }

    #[test]
    fn proc_paths_follow_privileged_and_proc_mount() {
        let (_, c) = pod_with(None, None);
        let (masked, ro) = proc_paths(&c);
        assert_eq!(masked.len(), 11);
        assert!(masked.contains(&"/proc/kcore".to_string()));
        assert!(ro.contains(&"/proc/sys".to_string()));
        for sc in [
            SecurityContext {
                privileged: Some(true),
                ..Default::default()
            },
            SecurityContext {
                proc_mount: Some(ProcMountType::Unmasked),
                ..Default::default()
            },
        ] {
            let (_, c) = pod_with(None, Some(sc));
            assert_eq!(proc_paths(&c), (vec![], vec![]));
        }
        let (_, c) = pod_with(
            None,
            Some(SecurityContext {
                privileged: Some(false),
                proc_mount: Some(ProcMountType::Default),
                ..Default::default()
            }),
        );
        assert_eq!(proc_paths(&c).1.len(), 5);
    }

    #[test]
    fn seccomp_is_the_containers_else_the_pods_else_the_default() {
        let rd = PbType::RuntimeDefault as i32;
        let un = PbType::Unconfined as i32;
        let (p, c) = pod_with(None, None);
        assert_eq!(seccomp(&p, &c, true), (rd, String::new()));
        assert_eq!(seccomp(&p, &c, false), (un, String::new()));
        let pod_level = pod_profiles(profile_of(ProfileType::Unconfined, None), None);
        let (p, c) = pod_with(pod_level, None);
        assert_eq!(seccomp(&p, &c, true), (un, String::new()));
        let pod_level = pod_profiles(profile_of(ProfileType::Unconfined, None), None);
        let container_level = SecurityContext {
            seccomp_profile: profile_of(ProfileType::Localhost, Some("prof/a.json")),
            ..Default::default()
        };
        let (p, c) = pod_with(pod_level, Some(container_level));
        assert_eq!(
            seccomp(&p, &c, false),
            (PbType::Localhost as i32, format!("{ROOT}/prof/a.json"))
        );
        assert_eq!(sandbox_seccomp().profile_type, rd);
    }

    #[test]
    fn apparmor_is_the_containers_else_the_annotation_else_the_pods() {
        let (p, c) = pod_with(None, None);
        assert_eq!(container_apparmor(&p, &c), None, "the runtime decides");
        let pod_level = pod_profiles(None, profile_of(ProfileType::RuntimeDefault, None));
        let (mut p, c) = pod_with(pod_level, None);
        let got = |p: &Pod, c: &Container| {
            container_apparmor(p, c).map(|s| (s.profile_type, s.localhost_ref))
        };
        assert_eq!(
            got(&p, &c),
            Some((PbType::RuntimeDefault as i32, String::new()))
        );
        p.metadata.annotations = BTreeMap::from([(
            format!("{APPARMOR_ANNOTATION_PREFIX}app"),
            "localhost/k8s-nginx".to_string(),
        )]);
        assert_eq!(
            got(&p, &c),
            Some((PbType::Localhost as i32, "k8s-nginx".into()))
        );
        let mut c2 = c.clone();
        c2.security_context = Some(SecurityContext {
            app_armor_profile: profile_of(ProfileType::Unconfined, None),
            ..Default::default()
        });
        assert_eq!(
            got(&p, &c2),
            Some((PbType::Unconfined as i32, String::new()))
        );
        // An annotation kubelet cannot read is ignored (validation refuses it at apply).
        p.metadata
            .annotations
            .insert(format!("{APPARMOR_ANNOTATION_PREFIX}app"), "bogus".into());
        assert_eq!(
            got(&p, &c),
            Some((PbType::RuntimeDefault as i32, String::new()))
        );
    }
}
