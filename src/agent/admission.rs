//! The sync loop's side of admission ([`crate::node::admit`]): what the node looks
//! like now (its labels, allocatable, pressure) for the loop's plan
//! ([`super::reconcile`], which admits every new pod and every changed spec, and says
//! which admitted pods still count), and what a refusal leaves behind: the pod's
//! status `Failed` with the reason and message (the uplink sends it to the API), an
//! event, a warning in the log. No worker is started for a refused pod, so nothing of
//! it is ever made; a pod whose changed spec is refused is stopped by its worker, which
//! leaves the same.

use super::context::Context;
use super::reconcile::{self, Action};
use crate::model::reason::EventReason;
use crate::model::status::{PodPhase, PodStatus};
use crate::model::time::now_rfc3339;
use crate::model::Pod;
use crate::node::admit::{NodeView, Refusal};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

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

/// The sync loop's plan for `desired` (see [`reconcile`]), judged against the node as
/// it is now.
pub fn plan(
    ctx: &Context,
    desired: Vec<Pod>,
    workers: &[reconcile::Worker<'_>],
    refused: &BTreeMap<String, Rc<Pod>>,
    adopted: &BTreeSet<String>,
) -> Vec<Action> {
    let labels = node_labels(ctx);
    let pressure = ctx.pressure.get();
    let node = NodeView {
        name: &ctx.host.node_name,
        labels: &labels,
        allocatable: ctx.host.allocatable,
        memory_pressure: pressure.memory,
        disk_pressure: pressure.disk,
    };
    let now = reconcile::Now {
        workers,
        refused,
        adopted,
        node: &node,
        cfg: &ctx.cfg,
    };
    reconcile::plan(desired, &now)
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

/// What a refusal of a part added to a running pod leaves ([`Action::UpdateWithout`]):
/// a warning and an Event; the pod runs on, its status untouched.
pub fn not_run(ctx: &Context, pod: &Pod, r: &Refusal) {
    let (ns, name) = (&pod.metadata.namespace, &pod.metadata.name);
    log::warn!(
        "pod {ns}/{name}: not run: {}: {}; the pod keeps running",
        r.reason,
        r.message
    );
    ctx.event(pod, "", true, EventReason::Refused(r.reason), || {
        format!("{}; the pod keeps running without it", r.message)
    });
}
