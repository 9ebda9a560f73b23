//! What the sync loop does with the desired pods, as one pure plan: from the desired
//! pods, the workers it has (the pods admitted, with what they run), the specs it
//! refused before and the node as admission sees it, to a list of [`Action`]s. The loop
//! ([`super::sync_loop`]) owns the workers and carries the plan out.
//!
//! Admission ([`crate::node::admit`]) is one stage of it, and the only way to a worker
//! that runs a spec: a pod that is new and every pod whose spec changed (a `tinylet
//! apply`, a firmware manifest, a MODIFIED from the cluster's watch: the local manifests
//! and a compromised control plane can change anything) is admitted before anything of
//! the change is made, the pod itself left out of the counts it is judged against. A
//! change of metadata alone (labels, annotations, the API's status) is not judged again:
//! admission reads none of it. A refused change stops the pod: its worker removes its
//! containers and sandbox as on a delete (grace period honoured) and leaves its status
//! `Failed` with the refusal. A refusal is kept, and not judged again, until the spec
//! changes. A pod the API says has finished needs no admission: it runs nothing.
//! A pod the runtime ran when the agent started (admitted by its earlier run) is not
//! refused for its placement again: node selectors and required affinity are ignored
//! during execution, as kubelet does when a Node's labels change under a running pod.
//!
//! What counts against `maxPods`, the resources and the host ports is what may still
//! run: every worker whose pod has not finished, those being deleted too (a pod stopping
//! with a long grace period still holds its memory and its shim until its worker is
//! done), and the pods this plan admits, in order. Pods are judged in the order they were
//! made, as kubelet does: after a restart the older pods keep their place, a newer one is
//! the one that does not fit.

use crate::config::Config;
use crate::model::Pod;
use crate::node::admit::{self, placement, NodeView, Refusal};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// A pod the sync loop has a worker for, as the plan sees it (by the pod's uid).
pub struct Worker<'a> {
    /// The spec the worker runs (or stops).
    pub pod: &'a Pod,
    /// The worker is stopping the pod (deleted, terminating in the cluster, refused):
    /// nothing new reaches it, and the pod's uid waits until it is done.
    pub deleting: bool,
    /// The worker saw the pod reach Succeeded or Failed, or stopped and removed it: it
    /// holds nothing of the node.
    pub finished: bool,
}

/// What the sync loop has and knows when it plans.
pub struct Now<'a> {
    /// The workers (about `maxPods` of them: looked through, not indexed, which
    /// keeps the binary small).
    pub workers: &'a [Worker<'a>],
    /// The specs refused before, by pod uid.
    pub refused: &'a BTreeMap<String, Rc<Pod>>,
    /// The pods (by uid) the runtime ran when the agent started and that have no
    /// worker yet: admitted by an earlier run of the agent. Their placement (node
    /// selector, required node affinity: required during scheduling, ignored during
    /// execution) is not held against them again; every other check is.
    pub adopted: &'a BTreeSet<String>,
    /// The node as admission judges it.
    pub node: &'a NodeView<'a>,
    /// The config (pod policy, sysctls, `maxPods`).
    pub cfg: &'a Config,
}

/// One step of the plan.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Admitted (or finished, so it runs nothing): a new worker runs it.
    Start(Pod),
    /// Ran before the agent started and no longer matches the node's labels: kept, as
    /// placement is ignored during execution; a new worker runs it.
    Adopt(Pod),
    /// Its worker takes the pod: a spec change that was admitted, or a change of
    /// metadata alone.
    Update(Pod),
    /// Its worker takes the pod, but the node runs no part of what was added: ephemeral
    /// containers (`kubectl debug` adds them to a running pod through the API; the API
    /// server refuses them at creation). The pod keeps running what it ran; the
    /// refusal is said in an Event, not a `Failed` status.
    UpdateWithout {
        /// The pod, ephemeral containers and all.
        pod: Pod,
        /// What is not run, and why.
        refusal: Refusal,
    },
    /// The node does not run this spec. `stop`: a worker runs an earlier spec of the
    /// pod and stops it; otherwise nothing of it exists.
    Refuse {
        /// The spec refused.
        pod: Pod,
        /// Why.
        refusal: Refusal,
        /// A worker runs the pod and must stop it.
        stop: bool,
    },
    /// The pod of this uid is no longer desired: its worker deletes it.
    Delete(String),
    /// The API server is deleting this pod: stopped with its grace period.
    Terminate(Pod),
}

/// The plan for `desired` (in any order) given `now`.
pub fn plan(mut desired: Vec<Pod>, now: &Now<'_>) -> Vec<Action> {
    desired.sort_by(|a, b| creation_key(a).cmp(&creation_key(b)));
    let steps = decide(&desired, now);
    let wanted = |uid: &str| desired.iter().any(|p| p.metadata.uid == uid);
    let deletes: Vec<Action> = now
        .workers
        .iter()
        .filter(|w| !w.deleting && !wanted(&w.pod.metadata.uid))
        .map(|w| Action::Delete(w.pod.metadata.uid.clone()))
        .collect();
    let mut actions = Vec::with_capacity(steps.len() + deletes.len());
    let mut steps = steps.into_iter().peekable();
    for (i, pod) in desired.into_iter().enumerate() {
        let Some(step) = steps.next_if(|(j, _)| *j == i).map(|(_, s)| s) else {
            continue;
        };
        actions.push(match step {
            Step::Start => Action::Start(pod),
            Step::Adopt => Action::Adopt(pod),
            Step::Update => Action::Update(pod),
            Step::UpdateWithout(refusal) => Action::UpdateWithout { pod, refusal },
            Step::Terminate => Action::Terminate(pod),
            Step::Refuse(refusal, stop) => Action::Refuse { pod, refusal, stop },
        });
    }
    actions.extend(deletes);
    actions
}

/// What happens to one desired pod (by its index in the sorted list).
enum Step {
    Start,
    Adopt,
    Update,
    UpdateWithout(Refusal),
    Terminate,
    Refuse(Refusal, bool),
}

/// The step of each desired pod that needs one, admitting in order: what one admits
/// counts for the next.
fn decide<'a>(desired: &'a [Pod], now: &Now<'a>) -> Vec<(usize, Step)> {
    let mut counted: Vec<&Pod> = now
        .workers
        .iter()
        .filter(|w| !w.finished && w.pod.finished().is_none())
        .map(|w| w.pod)
        .collect();
    let mut steps = Vec::new();
    for (i, pod) in desired.iter().enumerate() {
        let uid = pod.metadata.uid.as_str();
        let worker = now.workers.iter().find(|w| w.pod.metadata.uid == uid);
        let step = step_of(pod, worker, &counted, now);
        let runs = matches!(
            step,
            Some(Step::Start | Step::Adopt | Step::Update | Step::UpdateWithout(_))
        );
        if runs {
            counted.retain(|p| p.metadata.uid != uid);
            if pod.finished().is_none() {
                counted.push(pod);
            }
        }
        if let Some(s) = step {
            steps.push((i, s));
        }
    }
    steps
}

/// The step of one desired pod, given its worker (if any) and what counts now.
fn step_of(
    pod: &Pod,
    worker: Option<&Worker<'_>>,
    counted: &[&Pod],
    now: &Now<'_>,
) -> Option<Step> {
    if pod.terminating() {
        return match worker {
            Some(w) if w.deleting => None,
            _ => Some(Step::Terminate),
        };
    }
    match worker {
        // Stopping (its uid waits until the worker is done), or unchanged.
        Some(w) if w.deleting || *w.pod == *pod => None,
        Some(w) if same_admission(w.pod, pod) || pod.finished().is_some() => Some(Step::Update),
        Some(w) => Some(judge_change(w.pod, pod, counted, now)),
        None if now
            .refused
            .get(&pod.metadata.uid)
            .is_some_and(|r| r.spec == pod.spec) =>
        {
            None
        }
        None if pod.finished().is_some() => Some(Step::Start),
        None => Some(judge(pod, counted, now, Step::Start, false)),
    }
}

/// Admits `pod` beside what is counted, without the pod itself (a changed spec is
/// judged in place of the one it replaces): `ok` when admitted, a refusal otherwise.
fn judge(pod: &Pod, counted: &[&Pod], now: &Now<'_>, ok: Step, stop: bool) -> Step {
    let uid = &pod.metadata.uid;
    let others: Vec<&Pod> = counted
        .iter()
        .filter(|p| p.metadata.uid != *uid)
        .copied()
        .collect();
    let from_cluster = pod.source() == crate::model::pod::Source::Api;
    match admit::admit(pod, from_cluster, &others, now.node, now.cfg) {
        Ok(()) => ok,
        Err(r) if !stop && r.reason == placement::REASON && now.adopted.contains(uid) => {
            Step::Adopt
        }
        Err(r) => Step::Refuse(r, stop),
    }
}

/// Judges a changed spec of a pod a worker runs (`old`). Ephemeral containers are left
/// out of the judgement: the node never runs them, so they neither stop a pod nor let a
/// change past admission; when the change adds some, the step says so.
fn judge_change(old: &Pod, new: &Pod, counted: &[&Pod], now: &Now<'_>) -> Step {
    let added = new.spec.ephemeral_containers != old.spec.ephemeral_containers
        && !new.spec.ephemeral_containers.is_empty();
    let mut judged = new.clone();
    judged.spec.ephemeral_containers.clear();
    let mut before = old.clone();
    before.spec.ephemeral_containers.clear();
    let ok = if same_admission(&before, &judged) {
        Step::Update
    } else {
        match judge(&judged, counted, now, Step::Update, true) {
            Step::Update => Step::Update,
            refused => return refused,
        }
    };
    match admit::unsupported::ephemeral(new) {
        Some(r) if added => Step::UpdateWithout(r),
        _ => ok,
    }
}

/// Whether admission would judge `a` and `b` the same: it reads the spec and where the
/// pod came from, nothing else of its metadata.
fn same_admission(a: &Pod, b: &Pod) -> bool {
    a.spec == b.spec && a.source() == b.source()
}

/// The order pods are admitted in: the order they were made.
fn creation_key(p: &Pod) -> (Option<&str>, &str) {
    let m = &p.metadata;
    (m.creation_timestamp.as_deref(), &m.uid)
}

#[cfg(test)]
mod tests;
