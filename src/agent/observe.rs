//! Reads what the runtime holds for one pod, as kubelet's `GetPodStatus`: its sandboxes
//! (with the newest one's status, for the IP) and the status of each of its containers,
//! with the termination message of exited ones (a read of a few KiB each, see
//! [`crate::kuberuntime::termination`]).
//! Only called when the pod's worker syncs, i.e. after an event or a spec change, so an
//! idle agent makes no per-pod calls. After a sync that only added things, [`after`]
//! derives the new state from what the sync did instead of observing everything again
//! (one call per started container instead of four or more).

use super::context::Context;
use crate::cri::{pb, CriError};
use crate::kuberuntime::observed::{ObservedContainer, ObservedPod, ObservedSandbox, State};
use crate::kuberuntime::termination;
use crate::kuberuntime::{agent_mark, labels};
use std::collections::BTreeMap;

fn uid_selector(uid: &str) -> BTreeMap<String, String> {
    // Not `BTreeMap::from([..])`: that sorts an array, code the binary need not carry.
    let mut selector = BTreeMap::new();
    selector.insert(labels::POD_UID.to_string(), uid.to_string());
    selector
}

/// Everything the runtime has for pod `uid`.
pub async fn observe(ctx: &Context, uid: &str) -> Result<ObservedPod, CriError> {
    let rt = &ctx.cri.runtime;
    let sb_filter = pb::PodSandboxFilter {
        label_selector: uid_selector(uid),
        ..Default::default()
    };
    let mut listed = rt.list_pod_sandbox(Some(sb_filter)).await?;
    // A pod of the same uid another agent runs on this runtime (a firmware pod's
    // derived uid is the same everywhere) is not this pod.
    let mark = agent_mark::mark(&ctx.cfg.state_dir);
    listed.retain(|s| agent_mark::owns_sandbox(&mark, &s.labels, &s.annotations));
    // The newest (the first listed of equals) is the one whose IP is the pod's. Not
    // sorted here: [`ObservedPod::new`] sorts them all, and each sort is code to carry.
    let newest = listed
        .iter()
        .enumerate()
        .min_by_key(|(_, s)| std::cmp::Reverse(s.created_at))
        .map(|(i, _)| i);
    let mut sandboxes = Vec::with_capacity(listed.len());
    for (i, s) in listed.iter().enumerate() {
        let mut o = ObservedSandbox {
            id: s.id.clone(),
            ready: s.state == pb::PodSandboxState::SandboxReady as i32,
            attempt: s.metadata.as_ref().map_or(0, |m| m.attempt),
            created_at: s.created_at,
            hash: s
                .annotations
                .get(labels::SANDBOX_HASH)
                .cloned()
                .unwrap_or_default(),
            ip: String::new(),
        };
        // Only the newest sandbox's IP matters; its status call is the only extra one.
        if Some(i) == newest && o.ready {
            match rt.pod_sandbox_status(&s.id).await {
                Ok(st) => o.ip = ObservedSandbox::from(&st).ip,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            }
        }
        sandboxes.push(o);
    }
    let c_filter = pb::ContainerFilter {
        label_selector: uid_selector(uid),
        ..Default::default()
    };
    let mut containers = Vec::new();
    for c in rt.list_containers(Some(c_filter)).await? {
        let in_ours = listed.iter().any(|s| s.id == c.pod_sandbox_id);
        if !agent_mark::owns_container(&mark, &c.labels, in_ours) {
            continue;
        }
        match rt.container_status(&c.id).await {
            Ok(st) => {
                let mut o = ObservedContainer::from(&st);
                o.sandbox_id = c.pod_sandbox_id.clone();
                if o.state == State::Exited {
                    o.message = termination::message(&st, &ctx.cfg.pods_dir);
                }
                containers.push(o);
            }
            // Removed between the list and the status call.
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(ObservedPod::new(sandboxes, containers))
}

/// What one sync did to a pod on the runtime, so that its state afterwards can be
/// known without listing everything again: the observation from before the sync plus
/// what was added.
#[derive(Debug, Default)]
pub struct Effects {
    /// Something was stopped, or a call failed midway: only a fresh [`observe`] tells
    /// what is there now.
    pub unknown: bool,
    /// A sandbox made in this sync, as its PodSandboxStatus described it.
    pub sandbox: Option<ObservedSandbox>,
    /// Containers created and started in this sync: (container id, sandbox id).
    pub started: Vec<(String, String)>,
}

impl Effects {
    /// Whether the sync changed nothing on the runtime.
    pub fn is_empty(&self) -> bool {
        !self.unknown && self.sandbox.is_none() && self.started.is_empty()
    }
}

/// The pod `uid` after a sync that did `effects` to what `before` showed: `before` plus
/// the new sandbox and the status of each started container (one ContainerStatus call
/// each), or a full [`observe`] when the effects are unknown or a status call fails.
/// `before` is returned when even that fails (the next sync looks again).
pub async fn after(ctx: &Context, uid: &str, before: ObservedPod, effects: Effects) -> ObservedPod {
    if effects.is_empty() {
        return before;
    }
    if !effects.unknown {
        match started_containers(ctx, &effects.started).await {
            Ok(started) => {
                let ObservedPod {
                    mut sandboxes,
                    mut containers,
                } = before;
                sandboxes.extend(effects.sandbox);
                containers.extend(started);
                return ObservedPod::new(sandboxes, containers);
            }
            Err(e) => log::debug!("pod uid {uid}: status of a started container: {e}"),
        }
    }
    observe(ctx, uid).await.unwrap_or(before)
}

/// The status of each started container, with its sandbox id.
async fn started_containers(
    ctx: &Context,
    started: &[(String, String)],
) -> Result<Vec<ObservedContainer>, CriError> {
    let mut out = Vec::with_capacity(started.len());
    for (id, sandbox_id) in started {
        let st = ctx.cri.runtime.container_status(id).await?;
        let mut o = ObservedContainer::from(&st);
        o.sandbox_id = sandbox_id.clone();
        if o.state == State::Exited {
            o.message = termination::message(&st, &ctx.cfg.pods_dir);
        }
        out.push(o);
    }
    Ok(out)
}
