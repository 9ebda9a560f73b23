//! The sync loop's side of admission ([`crate::node::admit`]): what the node looks
//! like now (its labels, allocatable, pressure), which admitted pods still count (those
//! with a worker that are neither being deleted nor finished), and what a refusal
//! leaves behind: the pod's status `Failed` with the reason and message (the uplink
//! sends it to the API), an event, a warning in the log. No worker is started for a
//! refused pod, so nothing of it is ever made.

use super::context::Context;
use crate::model::reason::EventReason;
use crate::model::status::{PodPhase, PodStatus};
use crate::model::time::now_rfc3339;
use crate::model::Pod;
use crate::node::admit::{self, NodeView, Refusal};
use std::collections::BTreeMap;

/// The node's labels as admission matches them: kubelet's own (hostname, os, arch),
/// the config's `apiServer.nodeLabels`, and those the API last showed on the Node.
pub fn node_labels(ctx: &Context) -> BTreeMap<String, String> {
    let arch = super::host::go_arch();
    let mut labels: BTreeMap<String, String> = [
        ("kubernetes.io/hostname", ctx.host.node_name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", arch),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", arch),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    #[cfg(feature = "uplink")]
    if let Some(api) = &ctx.cfg.api_server {
        labels.extend(api.node_labels.clone());
    }
    labels.extend(ctx.node_labels.borrow().clone());
    labels
}

/// Whether the pod `p` (admitted earlier) still takes its share of the node: a pod
/// whose last status is Succeeded or Failed does not.
pub fn counts(ctx: &Context, p: &Pod) -> bool {
    if p.finished().is_some() {
        return false;
    }
    let status = ctx
        .store
        .borrow()
        .read_status(&p.metadata.namespace, &p.metadata.name);
    !status
        .and_then(|s| s.phase)
        .is_some_and(|ph| matches!(ph, PodPhase::Succeeded | PodPhase::Failed))
}

/// Admits `pod` beside `running` (the admitted pods that still count).
pub fn admit(ctx: &Context, pod: &Pod, running: &[&Pod]) -> Result<(), Refusal> {
    let labels = node_labels(ctx);
    let pressure = ctx.pressure.get();
    let node = NodeView {
        name: &ctx.host.node_name,
        labels: &labels,
        allocatable: ctx.host.allocatable,
        memory_pressure: pressure.memory,
        disk_pressure: pressure.disk,
    };
    let from_cluster = pod.source() == crate::model::pod::Source::Api;
    admit::admit(pod, from_cluster, running, &node, &ctx.cfg)
}

/// Leaves what a refusal of `pod` must: its status Failed with the reason (unless it
/// says so already), an event, a warning.
pub fn refused(ctx: &Context, pod: &Pod, r: &Refusal) {
    // Nothing is fetched for a refused pod (its secrets, tokens, claims).
    #[cfg(feature = "uplink")]
    ctx.verdicts.set(&pod.metadata.uid, false);
    let (ns, name) = (&pod.metadata.namespace, &pod.metadata.name);
    let mut store = ctx.store.borrow_mut();
    let before = store.read_status(ns, name);
    let same = before.as_ref().is_some_and(|s| {
        s.phase == Some(PodPhase::Failed) && s.reason == r.reason && s.message == r.message
    });
    if same {
        return;
    }
    log::warn!(
        "pod {ns}/{name}: refused by the node: {}: {}",
        r.reason,
        r.message
    );
    let status = PodStatus {
        phase: Some(PodPhase::Failed),
        reason: r.reason.to_string(),
        message: r.message.clone(),
        host_ip: ctx.host.host_ip.clone(),
        start_time: before
            .and_then(|s| s.start_time)
            .or_else(|| Some(now_rfc3339())),
        ..Default::default()
    };
    if let Err(e) = store.write_status(ns, name, &status) {
        log::warn!("pod {ns}/{name}: cannot write its status: {e}");
    }
    drop(store);
    ctx.event(pod, "", true, EventReason::Refused(r.reason), || {
        r.message.clone()
    });
}
