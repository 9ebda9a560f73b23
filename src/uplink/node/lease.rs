//! The node's heartbeat: the Lease `kube-node-lease/NODE` (coordination.k8s.io/v1),
//! renewed every 60 % of its duration (24 s for the default 40 s). The node lifecycle
//! controller marks the Node unreachable when it saw no renewal for its grace period
//! (`--node-monitor-grace-period`, 40 s; it does not read the Lease's duration).
//!
//! kubelet renews every quarter (10 s). At idle the renewals are nearly all a node asks
//! of the API server, and each is an etcd write: a fleet's standing cost on the control
//! plane is mostly its leases (`make bench-fleet`: at every half, 20 s, a node's
//! requests were still 1/4 of a hollow kubelet's). Every 60 % still leaves a failed
//! renewal the other 40 % of the grace period (16 s) to be tried again, on the short
//! back-off (1-8 s): an outage of up to 16 s goes unseen (kubelet's cadence: 30 s). A
//! cluster that wants kubelet's cadence sets `nodeLeaseDurationSeconds: 17` (10 s). A
//! status report stands in for a renewal (the controller takes a new Ready heartbeat
//! time as one): see `renew_lease` in the parent module.
//!
//! Kubelet's flow, with one change for the uplink's budget: kubelet renews with a PUT of
//! the whole Lease (optimistic concurrency on resourceVersion, GET and retry on a
//! conflict). Here a renewal is a JSON merge patch of the spec (holder, duration, renew
//! time), which has no version to conflict on and is a fifth of the bytes; only this
//! node may write this Lease (Node authorizer), so there is no writer to race. The
//! answer is the whole Lease, which is not needed: it is asked for in protobuf (half the
//! bytes of JSON) and dropped. Its `managedFields` (which manager set which field:
//! bookkeeping for server-side apply, which no one uses on node leases) would still be
//! half of it, so every renewal also resets them (`managedFields: [{}]`, the API's
//! documented way to clear them), and the answer comes back without them.
//!
//! Getting there: the Lease is read first; missing, it is created with an owner
//! reference to the Node as kubelet sets it (so it goes away with the Node); if another
//! create won the race (409), it is read again. A Lease without that owner reference
//! gets it with the next patch. A Lease deleted later (404 on renewal) is made again.

use crate::model::time::format_rfc3339;
use crate::uplink::{resource_path, ApiClient, ApiError, PatchType};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime};

/// The namespace of node Leases.
pub const NAMESPACE: &str = "kube-node-lease";
const API: &str = "coordination.k8s.io/v1";

/// One node's Lease.
#[derive(Debug)]
pub struct Lease {
    name: String,
    duration_seconds: u32,
    path: String,
    /// The Lease exists and carries our owner reference (as far as we know).
    settled: bool,
}

impl Lease {
    /// The Lease of node `node_name`, renewed to last `duration_seconds`.
    pub fn new(node_name: &str, duration_seconds: u32) -> Lease {
        Lease {
            name: node_name.to_string(),
            duration_seconds,
            path: resource_path(API, Some(NAMESPACE), "leases", Some(node_name), None),
            settled: false,
        }
    }

    /// The renew interval: 60 % of the lease's duration (see the module docs).
    pub fn renew_interval(&self) -> Duration {
        Duration::from_millis(u64::from(self.duration_seconds) * 600)
    }

    /// How long after the last heartbeat a renewal comes late: the node controller may
    /// have marked the Node Unknown by then (its grace is 40 s by default, the Lease's
    /// default duration; it looks every 5 s), so the status must go out again at once.
    /// Three quarters of the duration: a renewal one interval (60 %) late plus the
    /// short retries is not, one held back by a lost link for longer is.
    pub fn late_after(&self) -> Duration {
        Duration::from_millis(u64::from(self.duration_seconds) * 750)
    }

    /// Renews the Lease at `now` (making it first if needed); `node_uid` is the Node's,
    /// for the owner reference.
    pub async fn renew(
        &mut self,
        client: &ApiClient,
        node_uid: &str,
        now: SystemTime,
    ) -> Result<(), ApiError> {
        if self.settled {
            match self.patch(client, None, now).await {
                Err(e) if e.is_not_found() => {
                    log::info!("lease {NAMESPACE}/{}: gone; making it again", self.name);
                    self.settled = false;
                }
                other => return other,
            }
        }
        let owner = self.owner(node_uid);
        // Read it; create it when missing; read again when someone created it meanwhile.
        for _ in 0..2 {
            match client.get::<Value>(&self.path).await {
                Ok(found) => {
                    let refs = found["metadata"]["ownerReferences"].as_array();
                    let fix = !refs.is_some_and(|r| r.contains(&owner));
                    self.patch(client, fix.then_some(&owner), now).await?;
                    self.settled = true;
                    return Ok(());
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
            let collection = resource_path(API, Some(NAMESPACE), "leases", None, None);
            match client
                .create::<_, Value>(&collection, &self.object(&owner, now))
                .await
            {
                Ok(_) => {
                    log::info!("lease {NAMESPACE}/{}: created", self.name);
                    self.settled = true;
                    return Ok(());
                }
                Err(e) if e.is_conflict() => continue,
                Err(e) => return Err(e),
            }
        }
        Err(ApiError::Protocol(format!(
            "lease {NAMESPACE}/{}: created by someone else and then gone again",
            self.name
        )))
    }

    /// The owner reference kubelet sets: the Node, by name and uid.
    fn owner(&self, node_uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Node", "name": self.name, "uid": node_uid})
    }

    fn spec(&self, now: SystemTime) -> Value {
        json!({
            "holderIdentity": self.name,
            "leaseDurationSeconds": self.duration_seconds,
            "renewTime": micro_time(now),
        })
    }

    /// A new Lease, as kubelet makes it.
    fn object(&self, owner: &Value, now: SystemTime) -> Value {
        json!({
            "apiVersion": API,
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": NAMESPACE, "ownerReferences": [owner]},
            "spec": self.spec(now),
        })
    }

    /// The renewal: spec, managedFields reset, and the owner reference when it is to be
    /// set (a merge patch replaces the whole list: ours is the only one kubelet knows).
    async fn patch(
        &self,
        client: &ApiClient,
        owner: Option<&Value>,
        now: SystemTime,
    ) -> Result<(), ApiError> {
        let mut metadata = json!({"managedFields": [{}]});
        if let Some(o) = owner {
            metadata["ownerReferences"] = json!([o]);
        }
        let body = json!({"metadata": metadata, "spec": self.spec(now)});
        client.patch_ack(&self.path, PatchType::Merge, &body).await
    }
}

/// A Kubernetes MicroTime: RFC 3339 with microseconds, as Lease times are written.
pub fn micro_time(t: SystemTime) -> String {
    let micros = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_micros());
    let secs = format_rfc3339(t);
    match secs.strip_suffix('Z') {
        Some(base) => format!("{base}.{micros:06}Z"),
        None => secs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_shape() {
        let l = Lease::new("gw1", 40);
        assert_eq!(l.renew_interval(), Duration::from_secs(24));
        assert_eq!(l.late_after(), Duration::from_secs(30));
        assert_eq!(
            Lease::new("gw1", 5).renew_interval(),
            Duration::from_millis(3000)
        );
        assert_eq!(
            l.path,
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/gw1"
        );
        let t = SystemTime::UNIX_EPOCH + Duration::from_micros(1_764_614_400_123_456);
        assert_eq!(micro_time(t), "2025-12-01T18:40:00.123456Z");
        let obj = l.object(&l.owner("u-1"), t);
        assert_eq!(
            obj["metadata"]["ownerReferences"],
            json!([{"apiVersion": "v1", "kind": "Node", "name": "gw1", "uid": "u-1"}])
        );
        assert_eq!(
            obj["spec"],
            json!({"holderIdentity": "gw1", "leaseDurationSeconds": 40,
                "renewTime": "2025-12-01T18:40:00.123456Z"})
        );
    }
}
