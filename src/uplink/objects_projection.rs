//! What the node keeps of an API object: the projection stored in `STATE/cluster/`.
//!
//! Kept: `kind`, `apiVersion` (always `v1`: list items come without them, watch events
//! with them), and of `metadata` the identity and what pods and people read (name,
//! namespace, uid, labels, annotations, creationTimestamp, deletionTimestamp,
//! deletionGracePeriodSeconds, ownerReferences); then a pod's `spec`, a configMap's
//! `data`/`binaryData`/`immutable`, a secret's `type`/`data`/`immutable`. Of a pod's
//! `status` only a terminal `phase` (see [`finished_phase`]); never the rest of it,
//! `resourceVersion`, `managedFields`, `generation` or kubectl's
//! `last-applied-configuration` annotation (a second copy of the whole object): what the
//! API server changes on every write, our own status patches included, is left out, so
//! an object that comes back with only those changed projects to the same bytes and the
//! store writes nothing. Unknown spec fields are kept as sent, so a later tinylet that
//! understands them finds them in the cache.
//!
//! The bytes are pretty JSON with sorted keys (serde_json's map), so equal projections
//! are equal bytes whatever order the server sent.

use crate::store::Kind;
use serde_json::{Map, Value};

/// The metadata fields kept.
const META: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
];

/// kubectl's copy of the whole applied object: large, and of no use on the device.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The top-level fields kept besides metadata, per kind.
fn body_fields(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Pod => &["spec"],
        Kind::ConfigMap => &["data", "binaryData", "immutable"],
        Kind::Secret => &["type", "data", "immutable"],
    }
}

/// The projection of the API object `obj` of `kind`.
pub fn project(kind: Kind, obj: &Value) -> Value {
    let mut meta = Map::new();
    if let Some(m) = obj.get("metadata").and_then(Value::as_object) {
        for key in META {
            if let Some(v) = m.get(key).filter(|v| !v.is_null()) {
                meta.insert(key.to_string(), v.clone());
            }
        }
    }
    if let Some(Value::Object(a)) = meta.get_mut("annotations") {
        a.remove(LAST_APPLIED);
        if a.is_empty() {
            meta.remove("annotations");
        }
    }
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::from("v1"));
    out.insert("kind".into(), Value::from(kind.api_kind()));
    out.insert("metadata".into(), Value::Object(meta));
    for key in body_fields(kind) {
        if let Some(v) = obj.get(*key).filter(|v| !v.is_null()) {
            out.insert(key.to_string(), v.clone());
        }
    }
    if kind == Kind::Pod {
        if let Some(phase) = finished_phase(obj) {
            let status = Map::from_iter([("phase".to_string(), Value::from(phase))]);
            out.insert("status".into(), Value::Object(status));
        }
    }
    Value::Object(out)
}

/// `Succeeded` or `Failed` when the API shows the pod so: the one part of a pod's
/// status the node keeps (it changes once), so a finished pod is never run again.
pub fn finished_phase(obj: &Value) -> Option<&str> {
    obj["status"]["phase"]
        .as_str()
        .filter(|p| matches!(*p, "Succeeded" | "Failed"))
}

/// The stored bytes of a projection: pretty JSON and a final newline, as `apply` writes.
pub fn to_bytes(projection: &Value) -> Vec<u8> {
    let compact = serde_json::to_vec(projection).unwrap_or_default();
    let mut bytes = crate::model::pretty::pretty(&compact).into_bytes();
    bytes.push(b'\n');
    bytes
}

/// `metadata.FIELD` of an API object as a string ("" when absent).
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api_pod(rv: &str, phase: &str) -> Value {
        json!({
            "metadata": {
                "name": "web", "namespace": "default", "uid": "u-1",
                "resourceVersion": rv, "generation": 1,
                "creationTimestamp": "2026-12-01T10:00:00Z",
                "labels": {"app": "web"},
                "annotations": {
                    LAST_APPLIED: "{\"huge\": true}",
                    "example.com/note": "kept"
                },
                "managedFields": [{"manager": "kubelet", "time": rv}],
                "ownerReferences": [{"kind": "DaemonSet", "name": "ds", "uid": "d-1"}],
                "selfLink": "/api/v1/namespaces/default/pods/web"
            },
            "spec": {"nodeName": "gw1", "containers": [{"name": "c", "image": "busybox"}],
                     "tolerations": [{"operator": "Exists"}]},
            "status": {"phase": phase, "podIP": "10.0.0.7"}
        })
    }

    #[test]
    fn status_resource_version_and_managed_fields_are_left_out() {
        let a = to_bytes(&project(Kind::Pod, &api_pod("100", "Pending")));
        let b = to_bytes(&project(Kind::Pod, &api_pod("101", "Running")));
        assert_eq!(a, b, "our own status patch echoed back writes nothing");
        let p: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(p["kind"], "Pod");
        assert_eq!(p["apiVersion"], "v1");
        assert_eq!(p["metadata"]["uid"], "u-1");
        assert_eq!(p["metadata"]["labels"]["app"], "web");
        assert_eq!(
            p["metadata"]["annotations"],
            json!({"example.com/note": "kept"})
        );
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        assert_eq!(
            p["spec"]["tolerations"][0]["operator"], "Exists",
            "unknown fields kept"
        );
        for gone in ["resourceVersion", "managedFields", "generation", "selfLink"] {
            assert!(p["metadata"].get(gone).is_none(), "{gone}");
        }
        assert!(p.get("status").is_none());
    }

    #[test]
    fn deletion_fields_are_kept() {
        let mut pod = api_pod("5", "Running");
        pod["metadata"]["deletionTimestamp"] = json!("2026-12-01T11:00:00Z");
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(7);
        let p = project(Kind::Pod, &pod);
        assert_eq!(p["metadata"]["deletionGracePeriodSeconds"], 7);
        assert_ne!(
            to_bytes(&p),
            to_bytes(&project(Kind::Pod, &api_pod("5", "Running")))
        );
    }

    #[test]
    fn list_items_and_watch_objects_project_alike() {
        let mut from_watch = api_pod("7", "Running");
        from_watch["kind"] = json!("Pod");
        from_watch["apiVersion"] = json!("v1");
        assert_eq!(
            to_bytes(&project(Kind::Pod, &from_watch)),
            to_bytes(&project(Kind::Pod, &api_pod("7", "Running")))
        );
    }

    #[test]
    fn configmaps_and_secrets_keep_their_data_only() {
        let cm = json!({"metadata": {"name": "c", "namespace": "d", "resourceVersion": "1"},
                        "data": {"k": "v"}, "binaryData": {"b": "AA=="}, "immutable": true});
        let p = project(Kind::ConfigMap, &cm);
        assert_eq!(p["data"]["k"], "v");
        assert_eq!(p["binaryData"]["b"], "AA==");
        assert_eq!(p["immutable"], true);
        let s = json!({"metadata": {"name": "s", "namespace": "d"}, "type": "Opaque",
                       "data": {"k": "dg=="}, "spec": {"ignored": 1}});
        let p = project(Kind::Secret, &s);
        assert_eq!(p["type"], "Opaque");
        assert_eq!(p["data"]["k"], "dg==");
        assert!(p.get("spec").is_none());
        let parsed = crate::model::parse_object("t", &to_bytes(&p)).unwrap();
        assert_eq!(parsed.kind(), "Secret");
    }
}
