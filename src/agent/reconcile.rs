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
//!
//! What counts against `maxPods`, the resources and the host ports is what may still
//! run: every worker whose pod has not finished, those being deleted too (a pod stopping
//! with a long grace period still holds its memory and its shim until its worker is
//! done), and the pods this plan admits, in order. Pods are judged in the order they were
//! made, as kubelet does: after a restart the older pods keep their place, a newer one is
//! the one that does not fit.

use crate::config::Config;
use crate::model::Pod;
use crate::node::admit::{self, NodeView, Refusal};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// A pod the sync loop has a worker for, as the plan sees it.
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
    /// The workers, by pod uid.
    pub workers: &'a BTreeMap<&'a str, Worker<'a>>,
    /// The specs refused before, by pod uid.
    pub refused: &'a BTreeMap<String, Rc<Pod>>,
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
    /// Its worker takes the pod: a spec change that was admitted, or a change of
    /// metadata alone.
    Update(Pod),
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
    let wanted: BTreeSet<&str> = desired.iter().map(|p| p.metadata.uid.as_str()).collect();
    let deletes: Vec<Action> = now
        .workers
        .iter()
        .filter(|(uid, w)| !w.deleting && !wanted.contains(*uid))
        .map(|(uid, _)| Action::Delete(uid.to_string()))
        .collect();
    let mut actions = Vec::with_capacity(steps.len() + deletes.len());
    let mut steps = steps.into_iter().peekable();
    for (i, pod) in desired.into_iter().enumerate() {
        let Some(step) = steps.next_if(|(j, _)| *j == i).map(|(_, s)| s) else {
            continue;
        };
        actions.push(match step {
            Step::Start => Action::Start(pod),
            Step::Update => Action::Update(pod),
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
    Update,
    Terminate,
    Refuse(Refusal, bool),
}

/// The step of each desired pod that needs one, admitting in order: what one admits
/// counts for the next.
fn decide<'a>(desired: &'a [Pod], now: &Now<'a>) -> Vec<(usize, Step)> {
    let mut counted: BTreeMap<&str, &Pod> = now
        .workers
        .iter()
        .filter(|(_, w)| !w.finished && w.pod.finished().is_none())
        .map(|(uid, w)| (*uid, w.pod))
        .collect();
    let mut steps = Vec::new();
    for (i, pod) in desired.iter().enumerate() {
        let uid = pod.metadata.uid.as_str();
        let step = match now.workers.get(uid) {
            _ if pod.terminating() => match now.workers.get(uid) {
                Some(w) if w.deleting => None,
                _ => Some(Step::Terminate),
            },
            Some(w) if w.deleting || *w.pod == *pod => None,
            Some(w) if same_admission(w.pod, pod) || pod.finished().is_some() => Some(Step::Update),
            Some(_) => Some(judge(pod, &counted, now, Step::Update, true)),
            None if now.refused.get(uid).is_some_and(|r| r.spec == pod.spec) => None,
            None if pod.finished().is_some() => Some(Step::Start),
            None => Some(judge(pod, &counted, now, Step::Start, false)),
        };
        if matches!(step, Some(Step::Start | Step::Update)) {
            match pod.finished() {
                Some(_) => counted.remove(uid),
                None => counted.insert(uid, pod),
            };
        }
        if let Some(s) = step {
            steps.push((i, s));
        }
    }
    steps
}

/// Admits `pod` beside what is counted, without the pod itself (a changed spec is
/// judged in place of the one it replaces): `ok` when admitted, a refusal otherwise.
fn judge(pod: &Pod, counted: &BTreeMap<&str, &Pod>, now: &Now<'_>, ok: Step, stop: bool) -> Step {
    let uid = pod.metadata.uid.as_str();
    let others: Vec<&Pod> = counted
        .iter()
        .filter(|(u, _)| **u != uid)
        .map(|(_, p)| *p)
        .collect();
    let from_cluster = pod.source() == crate::model::pod::Source::Api;
    match admit::admit(pod, from_cluster, &others, now.node, now.cfg) {
        Ok(()) => ok,
        Err(r) => Step::Refuse(r, stop),
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
