//! Status up: the store says which pods' status files changed (a dirty set, see
//! [`crate::store::notify`]); this task sends each cluster pod's latest status as a
//! strategic-merge PATCH of `pods/NAME/status` ([`super::status_patch`]), with the
//! pod's uid as precondition. While the API server is away the set only grows (one
//! entry per pod whatever the number of changes); everything in it is sent once the
//! connection is back: tried again with the uplink's back-off, or at once when the
//! store has news (the pod source's relist after a reconnect marks every pod).
//!
//! Per dirty pod, in this order (then, for a local pod, its mirror pod: see
//! [`super::mirror`]):
//! - refused by the pod source ([`Bound`]): `Failed` with its reason;
//! - not a cached cluster pod: nothing here;
//! - terminating and done ([`crate::store::Store::is_terminated`]): the end of the
//!   deletion handshake, `DELETE` with `gracePeriodSeconds: 0` and the uid as
//!   precondition, then the cached file goes;
//! - a local pod has its namespace and name: `Failed`, reason `LocalPodNameConflict`
//!   (the device owner's pods win);
//! - else its status file, when there is one.
//!
//! 404 (the pod was deleted meanwhile) and 409 or a 422 on `metadata.uid` (another pod
//! of that name now) drop the entry: a patch can never bring a deleted pod back.

use super::agent::Uplink;
use super::backoff;
use super::mirror::Mirrors;
use super::pods_bound::Bound;
use super::status_patch::{outcome, patch, refused_patch, status_patch, Outcome};
use super::{resource_path, DeleteOptions, Preconditions};
use crate::model::Object;
use crate::store::notify::PodName;
use crate::store::Kind;
use async_io::Timer;
use serde_json::Value;
use smol::channel::Receiver;
use std::collections::BTreeSet;
use std::rc::Rc;

/// Reason of a cluster pod not run because a local pod has its name.
pub const NAME_CONFLICT: &str = crate::model::Reason::LocalPodNameConflict.as_str();
/// Pods whose status is sent side by side.
const IN_FLIGHT: usize = 8;

/// What to do for one dirty pod.
enum Action {
    Nothing,
    Patch {
        body: Value,
    },
    /// The refusal of this uid was sent: forget it.
    Refuse {
        uid: String,
        body: Value,
    },
    Delete {
        uid: String,
    },
}

/// Runs the status task: waits for the store's wake-ups, sends what is dirty.
pub async fn run(up: Rc<Uplink>, bound: Rc<Bound>, wake: Receiver<()>) {
    let mut pending: BTreeSet<PodName> = BTreeSet::new();
    let mut mirrors = Mirrors::default();
    let mut failures = 0u32;
    loop {
        pending.extend(up.ctx.store.borrow_mut().take_dirty_pods());
        let mut left = BTreeSet::new();
        let mut queue = std::mem::take(&mut pending).into_iter();
        let mut away = false;
        while !away {
            let batch: Vec<PodName> = queue.by_ref().take(IN_FLIGHT).collect();
            if batch.is_empty() {
                break;
            }
            for (name, out) in send_all(&up, &bound, batch).await {
                let out = match out {
                    // Its mirror once the uplink is back (sending again costs one patch).
                    _ if away => Outcome::Later,
                    Outcome::Done => super::mirror::sync(&up, &bound, &mut mirrors, &name).await,
                    out => out,
                };
                match out {
                    Outcome::Done => {}
                    Outcome::Later => {
                        left.insert(name);
                    }
                    Outcome::Retry => {
                        left.insert(name);
                        // The uplink is away: the others would fail the same way.
                        away = true;
                    }
                }
            }
        }
        left.extend(queue);
        if left.is_empty() {
            failures = 0;
            if wake.recv().await.is_err() {
                return;
            }
            continue;
        }
        pending = left;
        failures = failures.saturating_add(1);
        let delay = backoff::delay(failures, backoff::random());
        log::debug!(
            "uplink: {} pod statuses wait for the API server (next try in {delay:?})",
            pending.len()
        );
        // Again after the delay, or at once when the store has news (e.g. the pod
        // source relisted: the API server is back).
        smol::future::or(
            async {
                Timer::after(delay).await;
            },
            async {
                let _ = wake.recv().await;
            },
        )
        .await;
    }
}

/// Sends for the pods of `batch` side by side (streams of the one HTTP/2 connection:
/// after a burst of pod starts, one round trip per [`IN_FLIGHT`] pods rather than per
/// pod); the outcomes in `batch`'s order. Each pod is in one batch at a time, so one
/// pod's patches never overtake each other.
async fn send_all(
    up: &Rc<Uplink>,
    bound: &Rc<Bound>,
    batch: Vec<PodName>,
) -> Vec<(PodName, Outcome)> {
    let tasks: Vec<_> = batch
        .into_iter()
        .map(|name| {
            let (up, bound) = (up.clone(), bound.clone());
            crate::rt::spawn(async move {
                let out = send(&up, &bound, &name).await;
                (name, out)
            })
        })
        .collect();
    let mut outs = Vec::with_capacity(tasks.len());
    for task in tasks {
        outs.push(task.await);
    }
    outs
}

/// Decides and does what pod `name` needs.
async fn send(up: &Uplink, bound: &Bound, name: &PodName) -> Outcome {
    let action = decide(up, bound, name);
    let (ns, pod) = (&name.0, &name.1);
    let path = resource_path("v1", Some(ns), "pods", Some(pod), None);
    match action {
        Action::Nothing => Outcome::Done,
        Action::Refuse { uid, body } => {
            let r = patch(up, &path, &body).await;
            let out = outcome(name, "status (refused)", r);
            if let Outcome::Done = out {
                bound.refusal_sent(name, &uid);
            }
            out
        }
        Action::Patch { body } => {
            let r = patch(up, &path, &body).await;
            outcome(name, "status", r)
        }
        Action::Delete { uid } => {
            let options = DeleteOptions {
                grace_period_seconds: Some(0),
                preconditions: Some(Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
            };
            let r = up.client.delete(&path, &options).await.map(|_| ());
            let out = outcome(name, "deletion", r);
            if let Outcome::Done = out {
                log::info!("uplink: pod {ns}/{pod} stopped and deleted from the API");
                forget_cached(up, name, &uid);
            }
            out
        }
    }
}

/// What pod `name` needs (see the module doc), read from the store without waiting.
fn decide(up: &Uplink, bound: &Bound, name: &PodName) -> Action {
    let (ns, pod_name) = (&name.0, &name.1);
    let known = bound.get(name).unwrap_or_default();
    if let Some(r) = &known.refusal {
        let body = refused_patch(&known.uid, r.reason, &r.message);
        return Action::Refuse {
            uid: known.uid,
            body,
        };
    }
    let mut store = up.ctx.store.borrow_mut();
    let Some(Object::Pod(pod)) = store.cluster_get(Kind::Pod, ns, pod_name) else {
        return Action::Nothing;
    };
    let uid = pod.metadata.uid.clone();
    if pod.terminating() && store.is_terminated(&uid) {
        return Action::Delete { uid };
    }
    if store.cluster_pod_shadowed(ns, pod_name) || store.local_pod_exists(ns, pod_name) {
        let message = format!(
            "node {} runs a local pod named {ns}/{pod_name} (tinylet apply or a firmware \
             manifest); local pods take precedence, so this pod is not run",
            up.node_name
        );
        let body = refused_patch(&uid, NAME_CONFLICT, &message);
        return Action::Patch { body };
    }
    match store.read_status(ns, pod_name) {
        Some(status) => Action::Patch {
            body: status_patch(&uid, &status, &known.api_ips),
        },
        None => Action::Nothing,
    }
}

/// The deletion is done: the cached pod of `uid` goes (not a newer one of that name).
fn forget_cached(up: &Uplink, name: &PodName, uid: &str) {
    let mut store = up.ctx.store.borrow_mut();
    let same = matches!(
        store.cluster_get(Kind::Pod, &name.0, &name.1),
        Some(Object::Pod(p)) if p.metadata.uid == uid
    );
    if same {
        if let Err(e) = store.remove_cluster(Kind::Pod, &name.0, &name.1) {
            log::error!(
                "uplink: pod {}/{}: cannot remove it from the cache: {e}",
                name.0,
                name.1
            );
        }
    }
}
