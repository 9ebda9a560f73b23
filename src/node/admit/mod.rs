//! Admission: the one place where the node decides whether it runs a pod at all, before
//! anything of the pod is made (no sandbox, no pull, no volume). Every pod passes it,
//! local or from the cluster, when the sync loop first sees it and again whenever its
//! spec changes (the sync loop's plan, [`crate::agent::reconcile`]: the pod itself left
//! out of the counts; a refused change stops the pod), in this order:
//! 0. what tinylet cannot give ([`unsupported`]: `UnsupportedPodSpec` naming the field);
//! 1. kubelet's sysctl check ([`sysctls`]: the safe set and the `allowedUnsafeSysctls`
//!    of the pod's source, see [`crate::config::pod_policy::PodPolicy::unsafe_sysctls`]);
//! 2. the device owner's pod policy ([`policy`]: a Pod Security Standards level per
//!    source, with the config's allowances);
//! 3. kubelet's predicates ([`fit`], [`placement`]): node pressure, `maxPods`, the
//!    resource requests against allocatable (every admitted pod that has not finished
//!    counts, local ones too, and those still being stopped), the node selector and
//!    required node affinity against the Node's labels, the node name, host ports not
//!    taken.
//!
//! A refusal is a status, not a log line: the pod's phase becomes `Failed` with
//! kubelet's reason and message (`OutOfcpu`, "Pod Node didn't have enough resource:
//! cpu, ..."; the policy's `PodSecurity` naming the field and the rule), which the
//! uplink sends to the API, and an event says the same; the pod never runs, not even for
//! an instant (a changed spec refused: the spec never runs, the earlier one is stopped).

pub mod fit;
pub mod placement;
pub mod policy;
pub mod sysctls;
pub mod unsupported;
pub mod volume_claims;

use crate::config::Config;
use crate::model::NodeResources;
use crate::model::Pod;
use std::collections::BTreeMap;

/// Why the node does not run a pod: the pod's `status.reason` and `status.message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// kubelet's reason (`OutOfcpu`, `SysctlForbidden`, `NodeAffinity`, ...) or the
    /// policy's `PodSecurity`.
    pub reason: &'static str,
    /// What failed, naming the field or the figures; starts with "Pod " as kubelet's.
    pub message: String,
}

impl Refusal {
    fn new(reason: &'static str, message: impl std::fmt::Display) -> Refusal {
        Refusal {
            reason,
            message: format!("Pod {message}"),
        }
    }
}

/// What admission needs to know of the node.
#[derive(Debug, Clone)]
pub struct NodeView<'a> {
    /// The node's name.
    pub name: &'a str,
    /// Its labels (kubelet's own, the config's, and those the API shows).
    pub labels: &'a BTreeMap<String, String>,
    /// What pods may request in all.
    pub allocatable: NodeResources,
    /// The node's pressure conditions now.
    pub memory_pressure: bool,
    /// See `memory_pressure`.
    pub disk_pressure: bool,
}

/// Admits `pod` beside the pods already admitted that have not finished (`running`), or
/// says why not. `from_cluster`: the pod came from the API server (its policy level
/// is the config's `podPolicy.cluster`).
pub fn admit(
    pod: &Pod,
    from_cluster: bool,
    running: &[&Pod],
    node: &NodeView<'_>,
    cfg: &Config,
) -> Result<(), Refusal> {
    unsupported::check(pod)?;
    let unsafe_ok = cfg
        .pod_policy
        .unsafe_sysctls(from_cluster, &cfg.allowed_unsafe_sysctls);
    sysctls::check(pod, unsafe_ok)?;
    policy::check(pod, from_cluster, cfg)?;
    fit::pressure(pod, node)?;
    fit::resources(pod, running, node, cfg.max_pods)?;
    placement::check(pod, from_cluster, node)?;
    fit::host_ports_free(pod, running)?;
    Ok(())
}
