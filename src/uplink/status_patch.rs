//! The bodies of the status patches (`PATCH pods/NAME/status`, strategic merge), as
//! kubelet's status manager sends them: the whole status the agent computed, with the
//! pod's uid under `metadata` as a precondition (a pod deleted and made again under the
//! same name never gets the old one's status: the API server answers 409).
//!
//! Strategic merge keeps what a patch does not name, so what the agent cleared must be
//! said: every top-level field it owns is sent, `null` when empty (a pod's
//! `OfflineImage` reason goes away, a lost pod IP too). `conditions` merge by `type`
//! (conditions other controllers own are kept) and each carries `reason` and `message`,
//! `null` when empty, so a condition that turned True loses its old reason.
//! `podIPs` merge by `ip`, so an IP the API shows and the pod no longer has is deleted
//! by name (`$patch: delete`; the API server v1.20 does not honour `$patch: replace` in
//! that list); container statuses are replaced whole by the API's own rules.
//!
//! Also the sending step both the pods' and the mirror pods' status use ([`patch`],
//! [`outcome`]), here so `status` and `mirror` need nothing of each other but the
//! mirror sync.

use super::agent::Uplink;
use super::{ApiError, PatchType};
use crate::model::PodStatus;
use crate::store::notify::PodName;
use serde_json::{json, Map, Value};

/// The top-level status fields the agent owns.
const OWNED: [&str; 11] = [
    "phase",
    "conditions",
    "message",
    "reason",
    "hostIP",
    "podIP",
    "podIPs",
    "startTime",
    "initContainerStatuses",
    "containerStatuses",
    "qosClass",
];

/// The patch that makes the API's status of pod `uid` equal to `status`; `api_ips`:
/// the pod IPs the API shows now.
pub fn status_patch(uid: &str, status: &PodStatus, api_ips: &[String]) -> Value {
    // Through bytes: the status files' serializer and the JSON reader are in the
    // binary anyway, a PodStatus-to-Value serializer would be more code.
    let bytes = serde_json::to_vec(status).unwrap_or_default();
    let mut st = match serde_json::from_slice(&bytes) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for key in OWNED {
        st.entry(key).or_insert(Value::Null);
    }
    if let Some(Value::Array(conditions)) = st.get_mut("conditions") {
        for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
            for key in ["reason", "message", "lastProbeTime"] {
                c.entry(key).or_insert(Value::Null);
            }
        }
    }
    let stale: Vec<Value> = api_ips
        .iter()
        .filter(|ip| !status.pod_ips.iter().any(|p| p.ip == **ip))
        .map(|ip| json!({"$patch": "delete", "ip": ip}))
        .collect();
    if !stale.is_empty() {
        match st.get_mut("podIPs") {
            Some(Value::Array(ips)) => ips.extend(stale),
            _ => {
                st.insert("podIPs".into(), Value::Array(stale));
            }
        }
    }
    json!({"metadata": {"uid": uid}, "status": st})
}

/// The patch that reports pod `uid` as refused by this node: phase Failed with
/// `reason` and `message` (kubelet's rejection, e.g. for a pod it cannot admit).
pub fn refused_patch(uid: &str, reason: &str, message: &str) -> Value {
    json!({
        "metadata": {"uid": uid},
        "status": {"phase": "Failed", "reason": reason, "message": message},
    })
}

/// Whether the API's `status` (of a pod as listed or watched) already says what
/// [`refused_patch`] would.
pub fn shows_refusal(status: &Value, reason: &str, message: &str) -> bool {
    status["phase"] == "Failed" && status["reason"] == reason && status["message"] == message
}

/// Whether the API's `status` (of a pod as listed) already says all that `patch` (a
/// [`status_patch`]) would: each field it sets equal, each it clears absent, each of
/// its conditions as the API's of that type. Empty values and absent ones are the
/// same (the API server drops what is empty); a patch that deletes a pod IP is never
/// shown. A relist then patches only the pods whose status the API lost (the node
/// lifecycle controller marks them not Ready while the node is unreachable), not every
/// pod of the node.
pub fn shows_status(status: &Value, patch: &Value) -> bool {
    let Some(ours) = patch["status"].as_object() else {
        return false;
    };
    ours.iter().all(|(key, want)| match key.as_str() {
        "conditions" => want
            .as_array()
            .into_iter()
            .flatten()
            .all(|c| shows_condition(&status["conditions"], c)),
        "podIPs" if deletes(want) => false,
        _ => same(&status[key], want),
    })
}

/// Whether the API's `conditions` hold one of `want`'s type with its fields.
fn shows_condition(conditions: &Value, want: &Value) -> bool {
    conditions
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == want["type"]))
        .is_some_and(|c| same(c, want))
}

/// A list with a `$patch: delete` entry.
fn deletes(list: &Value) -> bool {
    list.as_array()
        .is_some_and(|l| l.iter().any(|e| e.get("$patch").is_some()))
}

/// Equal JSON, where null, "", [], {} and absent are all the same.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        _ if empty(a) && empty(b) => true,
        (Value::Object(x), Value::Object(y)) => x
            .keys()
            .chain(y.keys())
            .all(|k| same(&a[k.as_str()], &b[k.as_str()])),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

fn empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(l) => l.is_empty(),
        Value::Object(m) => m.values().all(empty),
        _ => false,
    }
}

/// Whether a pod is done with, or must be tried again.
pub(super) enum Outcome {
    Done,
    /// The API server is away: this pod and the others, later.
    Retry,
    /// This pod later (e.g. its mirror waits for the Node); the others now.
    Later,
}

/// Sends a status patch; the answer (the whole pod, a few KiB) is not read, so it is
/// asked for in protobuf: about half the bytes, and no JSON for the API server to
/// write for every status change of every pod.
pub(super) async fn patch(up: &Uplink, path: &str, body: &Value) -> Result<(), ApiError> {
    let path = format!("{path}/status");
    up.client
        .patch_ack(&path, PatchType::StrategicMerge, body)
        .await
}

/// Sorts an answer into done (sent, or never to be sent) and try again (the API
/// server away or overloaded).
pub(super) fn outcome(name: &PodName, what: &str, r: Result<(), ApiError>) -> Outcome {
    let (ns, pod) = (&name.0, &name.1);
    match r {
        Ok(()) => {
            log::debug!("uplink: pod {ns}/{pod}: {what} sent");
            Outcome::Done
        }
        // 422 on metadata.uid: the uid precondition, another pod of that name now.
        Err(e) if e.is_not_found() || e.is_conflict() || uid_mismatch(&e) => {
            log::debug!("uplink: pod {ns}/{pod}: {what} not sent, the pod is gone ({e})");
            Outcome::Done
        }
        Err(e) if e.is_transient() => {
            log::debug!("uplink: pod {ns}/{pod}: {what}: {e}; trying again");
            Outcome::Retry
        }
        Err(e) => {
            log::warn!("uplink: pod {ns}/{pod}: {what} refused by the API server: {e}");
            Outcome::Done
        }
    }
}

/// The API server's answer when the patch's uid is not the pod's (it reads it as a
/// change of an immutable field).
pub(super) fn uid_mismatch(e: &ApiError) -> bool {
    matches!(e, ApiError::Status(s) if s.code == 422 && s.message.contains("metadata.uid"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::status::{
        ConditionStatus, ContainerStatus, PodCondition, PodConditionType, PodIp, PodPhase,
    };

    fn running() -> PodStatus {
        PodStatus {
            phase: Some(PodPhase::Running),
            conditions: vec![PodCondition {
                type_: PodConditionType::Ready,
                status: ConditionStatus::True,
                last_probe_time: None,
                last_transition_time: Some("2026-12-01T10:00:00Z".into()),
                reason: String::new(),
                message: String::new(),
            }],
            host_ip: "192.0.2.1".into(),
            pod_ip: "10.88.0.5".into(),
            pod_ips: vec![PodIp {
                ip: "10.88.0.5".into(),
            }],
            start_time: Some("2026-12-01T09:59:58Z".into()),
            container_statuses: vec![ContainerStatus {
                name: "c".into(),
                restart_count: 1,
                ..Default::default()
            }],
            qos_class: "BestEffort".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_uid_is_a_precondition_and_cleared_fields_are_null() {
        let p = status_patch("u-1", &running(), &[]);
        assert_eq!(p["metadata"]["uid"], "u-1");
        let s = &p["status"];
        assert_eq!(s["phase"], "Running");
        assert_eq!(s["qosClass"], "BestEffort");
        assert_eq!(s["containerStatuses"][0]["restartCount"], 1);
        for cleared in ["reason", "message", "initContainerStatuses"] {
            assert!(s.get(cleared).is_some_and(Value::is_null), "{cleared}: {s}");
        }
        let ready = &s["conditions"][0];
        assert_eq!(ready["status"], "True");
        assert!(ready.get("reason").is_some_and(Value::is_null), "{ready}");
        assert!(ready.get("message").is_some_and(Value::is_null), "{ready}");
    }

    #[test]
    fn pod_ips_the_api_shows_and_the_pod_lost_are_deleted() {
        let p = status_patch("u", &running(), &["10.88.0.5".into()]);
        assert_eq!(p["status"]["podIPs"], json!([{"ip": "10.88.0.5"}]));
        let p = status_patch("u", &running(), &["10.88.0.4".into()]);
        assert_eq!(
            p["status"]["podIPs"],
            json!([{"ip": "10.88.0.5"}, {"$patch": "delete", "ip": "10.88.0.4"}])
        );
        let mut lost = running();
        lost.pod_ip.clear();
        lost.pod_ips.clear();
        let p = status_patch("u", &lost, &[]);
        assert!(p["status"]["podIPs"].is_null());
        assert!(p["status"]["podIP"].is_null());
        let p = status_patch("u", &lost, &["10.88.0.5".into()]);
        assert_eq!(
            p["status"]["podIPs"],
            json!([{"$patch": "delete", "ip": "10.88.0.5"}])
        );
    }

    /// `running()` as the API server shows it after the patch: what it was sent, with
    /// the nulls dropped, and the fields others own beside it.
    fn as_the_api_shows_it() -> Value {
        json!({
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastProbeTime": null,
                 "lastTransitionTime": "2026-12-01T09:59:58Z"},
                {"type": "Ready", "status": "True", "lastProbeTime": null,
                 "lastTransitionTime": "2026-12-01T10:00:00Z"},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                 "lastTransitionTime": "2026-12-01T09:59:57Z"}
            ],
            "hostIP": "192.0.2.1",
            "podIP": "10.88.0.5",
            "podIPs": [{"ip": "10.88.0.5"}],
            "startTime": "2026-12-01T09:59:58Z",
            "containerStatuses": [{"name": "c", "ready": false, "restartCount": 1,
                                   "image": "", "imageID": "", "state": {}, "lastState": {}}],
            "qosClass": "BestEffort"
        })
    }

    #[test]
    fn an_unchanged_status_is_shown_and_a_lost_one_is_not() {
        let p = status_patch("u-1", &running(), &["10.88.0.5".into()]);
        let api = as_the_api_shows_it();
        assert!(shows_status(&api, &p));
        // The node lifecycle controller marked the pod not Ready.
        let mut marked = api.clone();
        marked["conditions"][1]["status"] = json!("False");
        marked["conditions"][1]["reason"] = json!("NodeNotReady");
        assert!(!shows_status(&marked, &p));
        let mut restarted = api.clone();
        restarted["containerStatuses"][0]["restartCount"] = json!(2);
        assert!(!shows_status(&restarted, &p));
        let mut no_ready = api.clone();
        no_ready["conditions"].as_array_mut().unwrap().remove(1);
        assert!(!shows_status(&no_ready, &p));
        // A field the patch clears is still set there.
        let mut reason = api.clone();
        reason["reason"] = json!("OfflineImage");
        assert!(!shows_status(&reason, &p));
        // A pod IP to delete: the patch must go.
        let stale = status_patch("u-1", &running(), &["10.88.0.4".into()]);
        assert!(!shows_status(&api, &stale));
        assert!(!shows_status(&api, &json!({})));
    }

    #[test]
    fn a_refusal_is_failed_with_reason_and_message() {
        let p = refused_patch("u", "UnsupportedPodSpec", "spec.volumes[0]: no");
        assert_eq!(p["status"]["phase"], "Failed");
        assert!(shows_refusal(
            &p["status"],
            "UnsupportedPodSpec",
            "spec.volumes[0]: no"
        ));
        assert!(!shows_refusal(
            &json!({"phase": "Pending"}),
            "UnsupportedPodSpec",
            "spec.volumes[0]: no"
        ));
    }
}
