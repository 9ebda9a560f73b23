//! Mirror pods kept in step with the local pods ([`super::mirror_pod`] says what one
//! is), as kubelet does for its static pods. Driven by the status task and the store's
//! dirty set ([`crate::store::notify`]): the store marks a local pod when the agent
//! reads it added, changed or removed, or writes its status; the pod source marks it
//! when the API shows its mirror added, deleted or being deleted, and marks every local
//! pod and every mirror after each list. Per marked name, [`decide`] and act until
//! nothing is left to do:
//! - a local pod without a mirror: create it (the local pod's status follows);
//! - a mirror of another hash, or one someone is deleting (`kubectl delete`: the local
//!   pod keeps running, as under kubelet): delete it (`gracePeriodSeconds: 0`, uid
//!   precondition) and create it again;
//! - a mirror with no local pod (the pod was deleted, or an orphan of an earlier run):
//!   delete it;
//! - else send the local pod's latest status to the mirror, as a cluster pod's.
//!
//! Mirror pods are never run (the pod source keeps them out of the store) and never
//! cached. A local pod whose mirror the API server would refuse ([`mirror_pod::refusal`])
//! gets none, said once per version of the pod (warning); one the API server refused
//! anyway is tried again after the next list or when the pod changes. Nothing happens
//! before the first list of the node's pods (it marks everything) and the agent's first
//! read of the local pods.

use super::agent::Uplink;
use super::mirror_pod::{self, body, mirror_name};
use super::pods_bound::{Bound, Known, MirrorSeen};
use super::status_patch::{self as status, status_patch, Outcome};
use super::{resource_path, DeleteOptions, Preconditions};
use crate::model::Object;
use crate::store::local_pods::pod_digest;
use crate::store::notify::PodName;
use crate::store::{Entry, Kind};
use serde_json::Value;
use std::collections::BTreeMap;
use std::rc::Rc;

/// What the mirror side of the status task remembers.
#[derive(Default)]
pub struct Mirrors {
    /// The Node's uid (for the owner reference), once read.
    node_uid: Option<String>,
    /// Local pods left without a mirror, until they change.
    skipped: BTreeMap<PodName, Skip>,
}

/// Why a local pod (of one digest) has no mirror.
struct Skip {
    digest: u128,
    /// The list count when the API server refused it (tried again after the next
    /// list); `None`: our own rule refused it, for good.
    lists: Option<u32>,
    message: String,
}

/// The next thing to do for one mirror.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// The mirror is as it should be.
    Nothing,
    /// There is no mirror: make it.
    Create,
    /// The mirror (uid `uid`) stands for no local pod, or for an older spec: delete it.
    Delete {
        /// The mirror's uid (the delete's precondition).
        uid: String,
    },
    /// The mirror (uid `uid`) is current but its status is not: patch it.
    Status {
        /// The mirror's uid (the patch's precondition).
        uid: String,
    },
}

/// What to do, given the local pod's hash (`None`: no local pod), what the API shows of
/// its mirror, and whether making one is to be skipped.
pub fn decide(local: Option<&str>, api: Option<&Known>, skipped: bool) -> Step {
    let mirror = api.and_then(|k| Some((k.uid.clone(), k.mirror.as_ref()?)));
    match (local, mirror) {
        (None, None) => Step::Nothing,
        (Some(_), None) if skipped => Step::Nothing,
        (Some(_), None) => Step::Create,
        (None, Some((uid, _))) => Step::Delete { uid },
        (Some(hash), Some((uid, m))) if m.deleting || m.hash != hash => Step::Delete { uid },
        (Some(_), Some((uid, _))) => Step::Status { uid },
    }
}

/// Records what the API shows of pod `key` when it is a mirror pod (true), and marks
/// its local pod when that changed anything; false for any other pod.
pub fn seen(up: &Uplink, bound: &Bound, key: &PodName, obj: &Value) -> bool {
    let Some(hash) = mirror_pod::mirror_hash(obj) else {
        return false;
    };
    let meta = &obj["metadata"];
    let seen = MirrorSeen {
        hash: hash.to_string(),
        deleting: !meta["deletionTimestamp"].is_null(),
    };
    let uid = meta["uid"].as_str().unwrap_or_default();
    let ips = super::pods_bound::api_ips(&obj["status"]);
    let changed = bound.update(key, |k| {
        let changed = k.uid != uid || k.mirror.as_ref() != Some(&seen);
        k.uid = uid.to_string();
        k.mirror = Some(seen);
        k.api_ips = ips;
        changed
    });
    if changed {
        mark(up, key);
    }
    true
}

/// This node's mirror pods as the kubelet API resolves names: an API pod name stands
/// for a local pod only while the pod source last saw a pod of that name bound to this
/// node with the mirror annotation (a tenant's pod under the name, cached or refused,
/// is not one; the kubelet API also checks the annotation's hash against the local
/// pod's, since anyone who may create pods can set it).
pub struct ApiMirrors {
    /// What the pod source knows of the pods bound to the node.
    pub bound: Rc<Bound>,
    /// The Node's name (mirror names end with it).
    pub node_name: String,
}

impl crate::kubelet_api::MirrorNames for ApiMirrors {
    fn mirror(&self, ns: &str, name: &str) -> Option<crate::kubelet_api::Mirror> {
        let known = self.bound.get(&(ns.to_string(), name.to_string()))?;
        let seen = known.mirror?;
        let local = mirror_pod::local_name(name, &self.node_name)?;
        Some(crate::kubelet_api::Mirror {
            local: local.to_string(),
            uid: known.uid,
            hash: seen.hash,
        })
    }
}

/// Marks the local pod the mirror pod `key` stands for (the mirror itself when its name
/// stands for none).
pub fn mark(up: &Uplink, key: &PodName) {
    let name = mirror_pod::local_name(&key.1, &up.node_name).unwrap_or(&key.1);
    up.ctx.store.borrow_mut().mark_pod_dirty(&key.0, name);
}

/// After a list: every local pod and every mirror is looked at again.
pub fn listed(up: &Uplink, bound: &Bound) {
    bound.listed();
    for key in bound.mirrors() {
        mark(up, &key);
    }
    let mut store = up.ctx.store.borrow_mut();
    let local: Vec<PodName> = store
        .local_pod_digests()
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default();
    for (ns, name) in local {
        store.mark_pod_dirty(&ns, &name);
    }
}

/// Brings the mirror of dirty name `name` in step (see the module doc).
pub(super) async fn sync(up: &Uplink, bound: &Bound, m: &mut Mirrors, name: &PodName) -> Outcome {
    let local = {
        let store = up.ctx.store.borrow();
        match store.local_pod_digests() {
            Some(d) => d.get(name).copied(),
            // The agent has not read its local pods yet (its sync loop first asks the
            // runtime what runs): this name again once it has, or a mirror whose local
            // pod is gone would never be looked at again after the first list.
            None => return Outcome::Later,
        }
    };
    if bound.lists() == 0 {
        return Outcome::Done;
    }
    let node = &up.node_name;
    if bound.get(name).is_some_and(|k| k.mirror.is_some())
        && mirror_pod::local_name(&name.1, node).is_none()
    {
        // A mirror by a name no local pod of this node can have.
        let out = converge(up, bound, m, name, None, name).await;
        if !matches!(out, Outcome::Done) {
            return out;
        }
    }
    let mirror = (name.0.clone(), mirror_name(&name.1, node));
    converge(up, bound, m, name, local, &mirror).await
}

/// Acts on [`decide`] until nothing is left (at most delete, create, status).
async fn converge(
    up: &Uplink,
    bound: &Bound,
    m: &mut Mirrors,
    local: &PodName,
    digest: Option<u128>,
    mirror: &PodName,
) -> Outcome {
    for _ in 0..4 {
        let lists = bound.lists();
        let skipped = digest.is_some_and(|d| {
            m.skipped
                .get(local)
                .is_some_and(|s| s.digest == d && s.lists.is_none_or(|l| l == lists))
        });
        let hash = digest.map(mirror_pod::hash);
        let api = bound.get(mirror);
        match decide(hash.as_deref(), api.as_ref(), skipped) {
            Step::Nothing => return Outcome::Done,
            Step::Status { uid } => {
                let known = api.unwrap_or_default();
                return send_status(up, local, mirror, &uid, &known.api_ips).await;
            }
            Step::Delete { uid } => match delete(up, mirror, &uid).await {
                Outcome::Done => {
                    let why = match (&digest, api.and_then(|k| k.mirror)) {
                        (None, _) => "no such local pod",
                        (_, Some(s)) if s.deleting => "deleted in the API; made again",
                        _ => "the local pod changed; made again",
                    };
                    log::info!(
                        "uplink: mirror pod {}/{} deleted ({why})",
                        mirror.0,
                        mirror.1
                    );
                    bound.remove(mirror);
                }
                other => return other,
            },
            Step::Create => match create(up, bound, m, local, mirror).await {
                Created::Yes => {}
                // Read again, and tried once more (refused then: skipped).
                Created::NodeChanged => m.node_uid = None,
                Created::No => return Outcome::Done,
                Created::Wait(out) => return out,
            },
        }
    }
    Outcome::Done
}

/// What came of a create.
enum Created {
    Yes,
    /// Not made, and not to be tried again until the pod changes (or a list).
    No,
    /// Refused with 403 while the Node's uid was from an earlier read: read it again.
    NodeChanged,
    /// Not now (the API server away, the Node not there yet).
    Wait(Outcome),
}

/// Creates the mirror of local pod `local` as the store has it now.
async fn create(
    up: &Uplink,
    bound: &Bound,
    m: &mut Mirrors,
    local: &PodName,
    mirror: &PodName,
) -> Created {
    let pod = match up
        .ctx
        .store
        .borrow_mut()
        .get_local(Kind::Pod, &local.0, &local.1)
    {
        Ok(Some(Entry {
            object: Object::Pod(p),
            ..
        })) => p,
        // Gone or unreadable meanwhile: the agent's next read says so.
        _ => return Created::No,
    };
    let digest = pod_digest(&pod);
    if let Some(why) = mirror_pod::refusal(&pod) {
        skip(m, local, digest, None, why);
        return Created::No;
    }
    let cached = m.node_uid.is_some();
    let node_uid = match node_uid(up, m).await {
        Ok(uid) => uid,
        Err(out) => return Created::Wait(out),
    };
    let hash = mirror_pod::hash(digest);
    let obj = body(&pod, &up.node_name, &node_uid, &hash);
    let path = resource_path("v1", Some(&local.0), "pods", None, None);
    match up.client.create::<_, Value>(&path, &obj).await {
        Ok(made) => {
            let uid = made["metadata"]["uid"].as_str().unwrap_or_default();
            log::info!(
                "uplink: local pod {}/{} shown in the cluster as mirror pod {} (uid {uid})",
                local.0,
                local.1,
                mirror.1
            );
            bound.update(mirror, |k| {
                k.uid = uid.to_string();
                k.mirror = Some(MirrorSeen {
                    hash,
                    deleting: false,
                });
                k.api_ips.clear();
            });
            m.skipped.remove(local);
            Created::Yes
        }
        Err(e) if e.is_transient() => Created::Wait(Outcome::Retry),
        Err(e) if e.is_forbidden() && cached => {
            log::debug!(
                "uplink: mirror pod {}: {e}; reading the Node again",
                mirror.1
            );
            Created::NodeChanged
        }
        Err(e) => {
            let why = format!("the API server refused its mirror pod {}: {e}", mirror.1);
            skip(m, local, digest, Some(bound.lists()), why);
            Created::No
        }
    }
}

/// Leaves local pod `local` (of `digest`) without a mirror; says why once.
fn skip(m: &mut Mirrors, local: &PodName, digest: u128, lists: Option<u32>, message: String) {
    let said = m
        .skipped
        .get(local)
        .is_some_and(|s| s.digest == digest && s.message == message);
    if said {
        log::debug!(
            "uplink: local pod {}/{}: no mirror pod: {message}",
            local.0,
            local.1
        );
    } else {
        log::warn!(
            "uplink: local pod {}/{} is not shown in the cluster (no mirror pod): {message}",
            local.0,
            local.1
        );
    }
    m.skipped.insert(
        local.clone(),
        Skip {
            digest,
            lists,
            message,
        },
    );
}

/// The Node's uid, read once (a Node being deleted gets no new mirrors, as kubelet).
async fn node_uid(up: &Uplink, m: &mut Mirrors) -> Result<String, Outcome> {
    if let Some(uid) = &m.node_uid {
        return Ok(uid.clone());
    }
    let path = resource_path("v1", None, "nodes", Some(&up.node_name), None);
    match up.client.get::<Value>(&path).await {
        Ok(node) if node["metadata"]["deletionTimestamp"].is_null() => {
            let uid = node["metadata"]["uid"].as_str().unwrap_or_default();
            if uid.is_empty() {
                return Err(Outcome::Later);
            }
            m.node_uid = Some(uid.to_string());
            Ok(uid.to_string())
        }
        Ok(_) => {
            log::debug!(
                "uplink: Node {} is being deleted: no mirror pods",
                up.node_name
            );
            Err(Outcome::Later)
        }
        Err(e) if e.is_transient() => Err(Outcome::Retry),
        Err(e) => {
            log::debug!(
                "uplink: Node {}: {e}; mirror pods wait for it",
                up.node_name
            );
            Err(Outcome::Later)
        }
    }
}

/// Deletes mirror pod `mirror` of `uid` at once; a pod already gone counts as deleted.
async fn delete(up: &Uplink, mirror: &PodName, uid: &str) -> Outcome {
    let path = resource_path("v1", Some(&mirror.0), "pods", Some(&mirror.1), None);
    let options = DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
    };
    match up.client.delete(&path, &options).await {
        Ok(_) => Outcome::Done,
        Err(e) if e.is_not_found() || e.is_conflict() || status::uid_mismatch(&e) => Outcome::Done,
        Err(e) if e.is_transient() => Outcome::Retry,
        Err(e) => {
            // Tried again after the next list.
            log::warn!(
                "uplink: mirror pod {}/{}: deletion refused by the API server: {e}",
                mirror.0,
                mirror.1
            );
            Outcome::Done
        }
    }
}

/// Sends local pod `local`'s latest status to its mirror (of `uid`).
async fn send_status(
    up: &Uplink,
    local: &PodName,
    mirror: &PodName,
    uid: &str,
    api_ips: &[String],
) -> Outcome {
    let Some(st) = up.ctx.store.borrow().read_status(&local.0, &local.1) else {
        return Outcome::Done;
    };
    let path = resource_path("v1", Some(&mirror.0), "pods", Some(&mirror.1), None);
    let r = status::patch(up, &path, &status_patch(uid, &st, api_ips)).await;
    status::outcome(mirror, "status (mirror pod)", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirror(uid: &str, hash: &str, deleting: bool) -> Known {
        Known {
            uid: uid.into(),
            mirror: Some(MirrorSeen {
                hash: hash.into(),
                deleting,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_local_pod_without_a_mirror_gets_one_unless_skipped() {
        assert_eq!(decide(Some("h1"), None, false), Step::Create);
        assert_eq!(decide(Some("h1"), None, true), Step::Nothing);
        // A cluster pod of the mirror's name (not a mirror): created, the API says 409.
        assert_eq!(
            decide(Some("h1"), Some(&Known::default()), false),
            Step::Create
        );
    }

    #[test]
    fn a_current_mirror_gets_the_status() {
        let m = mirror("u1", "h1", false);
        let status = Step::Status { uid: "u1".into() };
        assert_eq!(decide(Some("h1"), Some(&m), false), status);
        assert_eq!(
            decide(Some("h1"), Some(&m), true),
            status,
            "skips concern creation"
        );
    }

    #[test]
    fn a_changed_deleted_or_orphan_mirror_is_deleted() {
        let delete = Step::Delete { uid: "u1".into() };
        let m = mirror("u1", "h1", false);
        assert_eq!(decide(Some("h2"), Some(&m), false), delete, "spec changed");
        assert_eq!(decide(None, Some(&m), false), delete, "local pod gone");
        let deleting = mirror("u1", "h1", true);
        assert_eq!(
            decide(Some("h1"), Some(&deleting), false),
            delete,
            "kubectl delete"
        );
        assert_eq!(decide(None, None, false), Step::Nothing);
        assert_eq!(decide(None, Some(&Known::default()), false), Step::Nothing);
    }

    #[test]
    fn only_a_name_the_api_shows_as_this_nodes_mirror_stands_for_a_local_pod() {
        use crate::kubelet_api::{Mirror, MirrorNames};
        let bound = Rc::new(Bound::default());
        let key = |n: &str| ("ns".to_string(), n.to_string());
        bound.update(&key("web-gw1"), |k| *k = mirror("m1", "h1", false));
        bound.update(&key("db-gw2"), |k| *k = mirror("m2", "h1", false));
        // A tenant's pod of a mirror's name: no mirror annotation.
        bound.update(&key("app-gw1"), |k| k.uid = "t1".into());
        let m = ApiMirrors {
            bound,
            node_name: "gw1".into(),
        };
        let web = Mirror {
            local: "web".into(),
            uid: "m1".into(),
            hash: "h1".into(),
        };
        assert_eq!(m.mirror("ns", "web-gw1"), Some(web));
        assert_eq!(m.mirror("other", "web-gw1"), None);
        assert_eq!(m.mirror("ns", "db-gw2"), None, "another node's name");
        assert_eq!(m.mirror("ns", "app-gw1"), None);
        assert_eq!(m.mirror("ns", "web"), None);
    }
}
