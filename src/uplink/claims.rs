//! The PersistentVolumeClaims the cached pods' volumes name, resolved to a directory of
//! this node ([`crate::agent::claims`]): the claim is read (`GET`: what the Node
//! authorizer lets a node do for the claims of its pods) until it is bound, then the
//! PersistentVolume bound to it; a `local` volume is its `path` (a directory), a
//! `hostPath` volume its `path` and `type`; any other kind is refused (the node has no
//! storage driver), its pods wait with a message that says so. A resolved claim is
//! kept in the state directory (`STATE/cluster/claims/NS_CLAIM.json`), so the pods find
//! their data after a reboot without the uplink, and read again every
//! [`RECHECK`] (a binding does not change, but a claim may be deleted and made again).
//! The path is then used as a hostPath is: only below `allowedHostPaths`.

use super::agent::Uplink;
use super::backoff;
use super::lean::LeanValue;
use super::resource_path;
use crate::agent::claims::{Claim, ClaimKey};
use crate::kuberuntime::env::BoundVolume;
use crate::model::pod::{HostPathType, Pod};
use crate::store::kept::Kept;
use async_io::Timer;
use serde_json::Value;
use smol::Task;
use std::rc::Rc;
use std::time::Duration;

/// How often a bound claim is read again.
pub const RECHECK: Duration = Duration::from_secs(600);
/// The first wait for an unbound claim, doubled up to [`PENDING_MAX`].
const PENDING_FIRST: Duration = Duration::from_secs(2);
const PENDING_MAX: Duration = Duration::from_secs(60);

/// The claims `pod`'s volumes name, sorted, without duplicates.
pub fn named(pod: &Pod) -> Vec<String> {
    let mut out: Vec<String> = pod
        .spec
        .volumes
        .iter()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One resolving task per wanted claim.
pub struct ClaimWatches {
    up: Rc<Uplink>,
    tasks: Vec<(ClaimKey, Task<()>)>,
}

impl ClaimWatches {
    /// No tasks yet.
    pub fn new(up: Rc<Uplink>) -> ClaimWatches {
        ClaimWatches {
            up,
            tasks: Vec::new(),
        }
    }

    /// Resolves the claims in `wanted` (a kept copy at once), stops resolving the
    /// others and drops their copies.
    pub fn set(&mut self, wanted: &[ClaimKey]) {
        let ctx = &self.up.ctx;
        self.tasks.retain(|(k, _)| wanted.contains(k));
        for k in wanted {
            if self.tasks.iter().any(|(t, _)| t == k) {
                continue;
            }
            if ctx.claims.get(k).is_none() {
                if let Some(b) = kept(&self.up, k) {
                    ctx.claims.set(k, Claim::Bound(b));
                }
            }
            let task = crate::rt::spawn(run(self.up.clone(), k.clone()));
            self.tasks.push((k.clone(), task));
        }
        ctx.claims.retain(|k| wanted.contains(k));
        let mut store = ctx.store.borrow_mut();
        for (ns, name) in store.kept_names(Kept::Claim) {
            if wanted.iter().any(|(n, c)| *n == ns && *c == name) {
                continue;
            }
            if let Err(e) = store.remove_kept(Kept::Claim, &ns, &name) {
                log::warn!("uplink: claim {ns}/{name}: cannot drop the kept copy: {e}");
            }
        }
    }
}

/// The kept copy of claim `k`'s volume, if there is a readable one.
fn kept(up: &Uplink, k: &ClaimKey) -> Option<BoundVolume> {
    let bytes = up.ctx.store.borrow().kept(Kept::Claim, &k.0, &k.1)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| {
            log::warn!(
                "uplink: the kept copy of claim {}/{}: {e}; ignored",
                k.0,
                k.1
            )
        })
        .ok()
}

/// Resolves claim `k` until the task is dropped.
async fn run(up: Rc<Uplink>, k: ClaimKey) {
    let mut pending = 0u32;
    let mut failures = 0u32;
    loop {
        let wait = match resolve(&up, &k).await {
            Ok(Claim::Pending(why)) => {
                pending = pending.saturating_add(1);
                if pending == 1 {
                    log::info!("uplink: claim {}/{}: {why}; its pods wait", k.0, k.1);
                }
                up.ctx.claims.set(&k, Claim::Pending(why));
                pending_delay(pending)
            }
            Ok(now) => {
                pending = 0;
                failures = 0;
                settle(&up, &k, now);
                RECHECK
            }
            Err(e) => {
                // The uplink is away (or the server failed): what is known stays.
                failures = failures.saturating_add(1);
                log::debug!("uplink: claim {}/{}: {e}", k.0, k.1);
                if up.ctx.claims.get(&k).is_none() {
                    up.ctx
                        .claims
                        .set(&k, Claim::Pending(format!("cannot read it ({e})")));
                }
                backoff::delay(failures, backoff::random())
            }
        };
        Timer::after(wait).await;
    }
}

/// Records a bound or refused claim, keeping a copy of a bound one.
fn settle(up: &Uplink, k: &ClaimKey, now: Claim) {
    if up.ctx.claims.get(k).as_ref() == Some(&now) {
        return;
    }
    match &now {
        Claim::Bound(b) => {
            log::info!(
                "uplink: claim {}/{} is volume {} at {}",
                k.0,
                k.1,
                b.volume_name,
                b.path
            );
            let bytes = serde_json::to_vec(b).unwrap_or_default();
            let put = up
                .ctx
                .store
                .borrow_mut()
                .put_kept(Kept::Claim, &k.0, &k.1, &bytes);
            if let Err(e) = put {
                log::warn!("uplink: claim {}/{}: cannot keep a copy: {e}", k.0, k.1);
            }
        }
        Claim::Refused(why) => log::warn!("uplink: claim {}/{}: {why}", k.0, k.1),
        Claim::Pending(_) => {}
    }
    up.ctx.claims.set(k, now);
}

/// Reads the claim and, when it is bound, its volume. An error: the API server could
/// not be asked (a 403 or 404 is an answer: pending).
async fn resolve(up: &Uplink, k: &ClaimKey) -> Result<Claim, super::ApiError> {
    let path = resource_path("v1", Some(&k.0), "persistentvolumeclaims", Some(&k.1), None);
    let claim = match up.client.get::<LeanValue>(&path).await {
        Ok(c) => c.0,
        Err(e) if e.is_not_found() => return Ok(Claim::Pending("it does not exist".into())),
        Err(e) if e.is_forbidden() => {
            return Ok(Claim::Pending(format!(
                "the API server does not show it to this node ({e})"
            )))
        }
        Err(e) => return Err(e),
    };
    let phase = claim["status"]["phase"].as_str().unwrap_or("Pending");
    let volume = claim["spec"]["volumeName"].as_str().unwrap_or_default();
    if phase != "Bound" || volume.is_empty() {
        return Ok(Claim::Pending(format!(
            "not bound to a volume yet (phase {phase})"
        )));
    }
    let pv_path = resource_path("v1", None, "persistentvolumes", Some(volume), None);
    let pv = match up.client.get::<LeanValue>(&pv_path).await {
        Ok(v) => v.0,
        Err(e) if e.is_not_found() || e.is_forbidden() => {
            return Ok(Claim::Pending(format!("its volume {volume}: {e}")))
        }
        Err(e) => return Err(e),
    };
    Ok(bound_volume(volume, &pv["spec"]))
}

/// What a PersistentVolume's spec makes of a claim bound to it.
fn bound_volume(name: &str, spec: &Value) -> Claim {
    let path_of = |v: &Value| v["path"].as_str().unwrap_or_default().to_string();
    let (path, host_path_type) = if spec["local"].is_object() {
        (path_of(&spec["local"]), HostPathType::Directory)
    } else if spec["hostPath"].is_object() {
        let t = &spec["hostPath"]["type"];
        match serde_json::from_value::<HostPathType>(t.clone()) {
            Ok(t) => (path_of(&spec["hostPath"]), t),
            Err(_) if t.is_null() => (path_of(&spec["hostPath"]), HostPathType::Unset),
            Err(_) => return Claim::Refused(format!("volume {name}: hostPath type {t} unknown")),
        }
    } else {
        let kinds: Vec<&str> = spec
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        return Claim::Refused(format!(
            "volume {name} is not a local or hostPath volume (its spec has {}): this node \
             has no driver for it",
            kinds.join(", ")
        ));
    };
    if !path.starts_with('/') {
        return Claim::Refused(format!("volume {name}: path {path:?} is not absolute"));
    }
    let required = &spec["nodeAffinity"]["required"];
    let node_affinity = if required.is_null() {
        None
    } else {
        match serde_json::from_value(required.clone()) {
            Ok(s) => Some(s),
            Err(e) => return Claim::Refused(format!("volume {name}: nodeAffinity.required: {e}")),
        }
    };
    Claim::Bound(BoundVolume {
        volume_name: name.to_string(),
        path,
        host_path_type,
        node_affinity,
    })
}

/// The wait after the `n`th answer in a row that the claim is not bound (n >= 1).
fn pending_delay(n: u32) -> Duration {
    PENDING_FIRST
        .saturating_mul(1 << n.saturating_sub(1).min(8))
        .min(PENDING_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn local_and_host_path_volumes_are_directories_others_refused() {
        let local = json!({"local": {"path": "/mnt/ssd"}, "capacity": {"storage": "1Gi"}});
        assert_eq!(
            bound_volume("pv1", &local),
            Claim::Bound(BoundVolume {
                volume_name: "pv1".into(),
                path: "/mnt/ssd".into(),
                host_path_type: HostPathType::Directory,
                node_affinity: None,
            })
        );
        let pinned = json!({"local": {"path": "/mnt/ssd"}, "nodeAffinity": {"required":
            {"nodeSelectorTerms": [{"matchExpressions":
                [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["gw1"]}]}]}}});
        match bound_volume("pv1", &pinned) {
            Claim::Bound(b) => {
                let terms = b.node_affinity.unwrap().node_selector_terms;
                assert_eq!(terms[0].match_expressions[0].values, ["gw1"]);
            }
            other => panic!("{other:?}"),
        }
        let bad = json!({"local": {"path": "/m"}, "nodeAffinity": {"required": 3}});
        assert!(
            matches!(bound_volume("pv7", &bad), Claim::Refused(why) if why.contains("nodeAffinity.required")),
        );
        let hp = json!({"hostPath": {"path": "/srv/d", "type": "DirectoryOrCreate"}});
        match bound_volume("pv2", &hp) {
            Claim::Bound(b) => assert_eq!(b.host_path_type, HostPathType::DirectoryOrCreate),
            other => panic!("{other:?}"),
        }
        let untyped = json!({"hostPath": {"path": "/srv/e"}});
        assert!(
            matches!(bound_volume("pv3", &untyped), Claim::Bound(b) if b.host_path_type == HostPathType::Unset)
        );
        match bound_volume(
            "pv4",
            &json!({"nfs": {"server": "x", "path": "/"}, "capacity": {}}),
        ) {
            Claim::Refused(why) => assert!(why.contains("nfs"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            bound_volume("pv5", &json!({"local": {"path": "rel"}})),
            Claim::Refused(_)
        ));
        assert!(matches!(
            bound_volume("pv6", &json!({"hostPath": {"path": "/x", "type": "Bogus"}})),
            Claim::Refused(_)
        ));
    }

    #[test]
    fn unbound_claims_are_asked_again_slower_and_capped() {
        assert_eq!(pending_delay(1), Duration::from_secs(2));
        assert_eq!(pending_delay(3), Duration::from_secs(8));
        assert_eq!(pending_delay(u32::MAX), PENDING_MAX);
    }
}
