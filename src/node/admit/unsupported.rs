//! What a pod asks for is honoured or refused, never dropped in silence: the v1 pod
//! fields the schema accepts beyond those the agent has always used, each with what
//! tinylet does with it ([`FIELDS`], the one list; docs/pods.md shows it). A field
//! refused here stops the pod at admission, `Failed` with `UnsupportedPodSpec` and a
//! message naming the field, rather than letting it run without what it asked for (a
//! `hostUsers: false` pod would run as the host's root, a gVisor pod under runc).

use super::Refusal;
use crate::model::container::{MountPropagationMode, RecursiveReadOnlyMode};
use crate::model::pod::{Source, SupplementalGroupsPolicy};
use crate::model::{Container, Pod};

/// The reason of a refused field (kubelet's, for what its runtime cannot give).
pub const REASON: &str = "UnsupportedPodSpec";

/// What tinylet does with a field.
pub enum Handling {
    /// Honoured as kubelet does (the CRI config carries it).
    Honoured,
    /// Refused whenever set to ask for something (the check says why, or None).
    Refused(fn(&Pod) -> Option<Refusal>),
    /// Honoured for some values, refused for the others (the check).
    Partly(fn(&Pod) -> Option<Refusal>),
    /// Without effect on this node, as under kubelet: the scheduler's, or options the
    /// runtime ignores on a Linux host without SELinux.
    NoEffect,
}

use Handling::{Honoured, NoEffect, Partly, Refused};

/// Every pod field the API accepts that the agent did not use before, by path
/// (`[]` for each container, init ones too), with its handling.
pub static FIELDS: &[(&str, Handling)] = &[
    ("spec.hostUsers", Refused(host_users)),
    ("spec.shareProcessNamespace", Honoured),
    ("spec.runtimeClassName", Partly(runtime_class)),
    ("spec.overhead", Refused(overhead)),
    ("spec.resources", Refused(pod_resources)),
    ("spec.os", Partly(os)),
    ("spec.setHostnameAsFQDN", Refused(fqdn)),
    ("spec.readinessGates", Refused(readiness_gates)),
    ("spec.ephemeralContainers", Refused(ephemeral)),
    ("spec.resourceClaims", Refused(resource_claims)),
    (
        "spec.securityContext.supplementalGroupsPolicy",
        Partly(groups_policy),
    ),
    (
        "spec.containers[].volumeMounts[].mountPropagation",
        Partly(propagation),
    ),
    (
        "spec.containers[].volumeMounts[].recursiveReadOnly",
        Partly(recursive_ro),
    ),
    ("spec.containers[].volumeDevices", Refused(volume_devices)),
    (
        "spec.containers[].resources.claims",
        Refused(container_claims),
    ),
    (
        "spec.containers[].lifecycle.stopSignal",
        Refused(stop_signal),
    ),
    ("spec.containers[].resizePolicy", NoEffect),
    ("spec.securityContext.seLinuxOptions", NoEffect),
    ("spec.securityContext.seLinuxChangePolicy", NoEffect),
    ("spec.securityContext.windowsOptions", NoEffect),
    ("spec.securityContext.fsGroupChangePolicy", NoEffect),
    ("spec.containers[].securityContext.seLinuxOptions", NoEffect),
    ("spec.containers[].securityContext.windowsOptions", NoEffect),
    ("spec.schedulerName", NoEffect),
    ("spec.tolerations", NoEffect),
    ("spec.topologySpreadConstraints", NoEffect),
    ("spec.preemptionPolicy", NoEffect),
    ("spec.schedulingGates", NoEffect),
];

/// Refuses the pod if it sets a field to what tinylet cannot give.
pub fn check(pod: &Pod) -> Result<(), Refusal> {
    let refused = FIELDS.iter().find_map(|(_, h)| match h {
        Refused(f) | Partly(f) => f(pod),
        Honoured | NoEffect => None,
    });
    refused.map_or(Ok(()), Err)
}

/// "Pod FIELD is not supported: WHY".
fn unsupported(what: std::fmt::Arguments<'_>, why: &str) -> Option<Refusal> {
    Some(Refusal::new(
        REASON,
        format_args!("{what} is not supported: {why}"),
    ))
}

fn host_users(pod: &Pod) -> Option<Refusal> {
    if pod.spec.host_users != Some(false) {
        return None;
    }
    unsupported(
        format_args!("spec.hostUsers: false"),
        "tinylet gives no user namespace",
    )
}

/// A local pod names the CRI handler itself (a device has no RuntimeClass objects); a
/// cluster pod's handler is its RuntimeClass's, which the node does not read.
fn runtime_class(pod: &Pod) -> Option<Refusal> {
    let name = &pod.spec.runtime_class_name;
    if name.is_empty() || pod.source() == Source::File {
        return None;
    }
    unsupported(
        format_args!("spec.runtimeClassName: {name:?}"),
        "the node does not read RuntimeClasses (a local pod names the CRI handler)",
    )
}

fn overhead(pod: &Pod) -> Option<Refusal> {
    if pod.spec.overhead.is_empty() {
        return None;
    }
    unsupported(
        format_args!("spec.overhead"),
        "the fit check and the cgroups would not count it",
    )
}

fn pod_resources(pod: &Pod) -> Option<Refusal> {
    let r = pod.spec.resources.as_ref()?;
    if r.requests.is_empty() && r.limits.is_empty() && r.claims.is_empty() {
        return None;
    }
    unsupported(
        format_args!("spec.resources"),
        "the fit check and the cgroups count containers' resources only",
    )
}

/// kubelet's own refusal of a pod for another operating system.
fn os(pod: &Pod) -> Option<Refusal> {
    let name = &pod.spec.os.as_ref()?.name;
    if name == "linux" {
        return None;
    }
    Some(Refusal::new(
        "PodOSNotSupported",
        format_args!("spec.os.name: {name:?} is not this node's operating system (linux)"),
    ))
}

fn fqdn(pod: &Pod) -> Option<Refusal> {
    if pod.spec.set_hostname_as_fqdn != Some(true) {
        return None;
    }
    unsupported(
        format_args!("spec.setHostnameAsFQDN: true"),
        "the pod's hostname is its short name",
    )
}

fn readiness_gates(pod: &Pod) -> Option<Refusal> {
    if pod.spec.readiness_gates.is_empty() {
        return None;
    }
    unsupported(
        format_args!("spec.readinessGates"),
        "the node does not read the gates' conditions",
    )
}

/// The refusal of a pod's ephemeral containers, if it has any: a new pod with them is
/// refused; one added to a running pod leaves it running without them
/// ([`crate::agent::reconcile`]).
pub fn ephemeral(pod: &Pod) -> Option<Refusal> {
    if pod.spec.ephemeral_containers.is_empty() {
        return None;
    }
    unsupported(
        format_args!("spec.ephemeralContainers"),
        "tinylet runs no ephemeral containers",
    )
}

fn resource_claims(pod: &Pod) -> Option<Refusal> {
    if pod.spec.resource_claims.is_empty() {
        return None;
    }
    unsupported(
        format_args!("spec.resourceClaims"),
        "no dynamic resource allocation",
    )
}

/// `Merge` is what the runtime does anyway; `Strict` needs a CRI field tinylet does not send.
fn groups_policy(pod: &Pod) -> Option<Refusal> {
    let sc = pod.spec.security_context.as_ref()?;
    if sc.supplemental_groups_policy != Some(SupplementalGroupsPolicy::Strict) {
        return None;
    }
    unsupported(
        format_args!("spec.securityContext.supplementalGroupsPolicy: Strict"),
        "the runtime adds the image's groups",
    )
}

/// Each container with its path (`spec.initContainers[0]`, `spec.containers[1]`).
fn containers(pod: &Pod) -> impl Iterator<Item = (String, &Container)> {
    let init = pod.spec.init_containers.iter().enumerate();
    let app = pod.spec.containers.iter().enumerate();
    init.map(|(i, c)| (format!("spec.initContainers[{i}]"), c))
        .chain(app.map(|(i, c)| (format!("spec.containers[{i}]"), c)))
}

/// The first container for which `what` says why not, with its path.
fn first_container(
    pod: &Pod,
    what: impl Fn(&str, &Container) -> Option<Refusal>,
) -> Option<Refusal> {
    containers(pod).find_map(|(path, c)| what(&path, c))
}

/// kubelet's rule (the API server's for cluster pods): `Bidirectional` propagation only
/// in a privileged container, whose mounts may reach the host anyway.
fn propagation(pod: &Pod) -> Option<Refusal> {
    first_container(pod, |path, c| {
        let privileged = c.security_context.as_ref().and_then(|s| s.privileged) == Some(true);
        let i = c.volume_mounts.iter().position(|m| {
            m.mount_propagation == Some(MountPropagationMode::Bidirectional) && !privileged
        })?;
        Some(Refusal::new(
            REASON,
            format_args!(
                "{path}.volumeMounts[{i}].mountPropagation: Bidirectional is allowed only \
                 in a privileged container"
            ),
        ))
    })
}

/// `IfPossible` falls back to a plain read-only mount, as upstream on a runtime without
/// recursive read-only mounts; `Enabled` cannot be given.
fn recursive_ro(pod: &Pod) -> Option<Refusal> {
    first_container(pod, |path, c| {
        let i = c
            .volume_mounts
            .iter()
            .position(|m| m.recursive_read_only == Some(RecursiveReadOnlyMode::Enabled))?;
        unsupported(
            format_args!("{path}.volumeMounts[{i}].recursiveReadOnly: Enabled"),
            "no recursive read-only mounts",
        )
    })
}

fn volume_devices(pod: &Pod) -> Option<Refusal> {
    first_container(pod, |path, c| {
        (!c.volume_devices.is_empty())
            .then(|| unsupported(format_args!("{path}.volumeDevices"), "no raw block volumes"))?
    })
}

fn container_claims(pod: &Pod) -> Option<Refusal> {
    first_container(pod, |path, c| {
        (!c.resources.claims.is_empty()).then(|| {
            unsupported(
                format_args!("{path}.resources.claims"),
                "no dynamic resource allocation",
            )
        })?
    })
}

fn stop_signal(pod: &Pod) -> Option<Refusal> {
    first_container(pod, |path, c| {
        let signal = &c.lifecycle.as_ref()?.stop_signal;
        (!signal.is_empty()).then(|| {
            unsupported(
                format_args!("{path}.lifecycle.stopSignal: {signal:?}"),
                "the image's stop signal is used",
            )
        })?
    })
}

#[cfg(test)]
mod tests;
