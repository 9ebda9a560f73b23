//! What a mirror pod is: kubelet shows each static pod in the API as a *mirror pod*,
//! and tinylet does the same for its local pods (`tinylet apply`, firmware manifests),
//! so `kubectl get pods` sees everything the node runs. Facts carried over from kubelet
//! (v1.20):
//! - the name is `NAME-NODENAME` (kubelet names its static pods so), in the local pod's
//!   namespace, with `spec.nodeName` this node;
//! - annotations `kubernetes.io/config.mirror` and `kubernetes.io/config.hash`, both
//!   the hash of the local pod (a changed local pod is a new hash: its mirror is deleted
//!   and made again), and `kubernetes.io/config.source: file`;
//! - one owner reference, the Node (`controller: true`, no `blockOwnerDeletion`, the
//!   Node's uid: NodeRestriction checks all of it), so the garbage collector removes the
//!   mirrors of a deleted Node.
//!
//! The API server refuses a mirror pod that references other API objects
//! (NodeRestriction and the ServiceAccount admission): configMaps and secrets (volumes,
//! projected sources, `env` valueFrom, `envFrom`, `imagePullSecrets`), a service account
//! (`serviceAccountName`, or a projected `serviceAccountToken`) and
//! persistentVolumeClaims. The model has no PVC volume, so [`refusal`] checks the rest.

use super::objects::references;
use crate::model::Pod;
use serde_json::{json, Map, Value};

/// kubelet's annotation of a mirror pod (value: the hash of its static pod).
pub const MIRROR: &str = "kubernetes.io/config.mirror";
/// kubelet's annotation of a static pod's hash.
pub const HASH: &str = "kubernetes.io/config.hash";

/// The API name of the mirror of local pod `local` on node `node`.
pub fn mirror_name(local: &str, node: &str) -> String {
    format!("{local}-{node}")
}

/// The local pod a mirror pod of node `node` stands for, by its API name; `None` when
/// the name cannot be one of this node's mirrors.
pub fn local_name<'a>(mirror: &'a str, node: &str) -> Option<&'a str> {
    mirror
        .strip_suffix(node)?
        .strip_suffix('-')
        .filter(|n| !n.is_empty())
}

/// The hash of a local pod, from its store digest (32 hex digits, as kubelet's).
pub fn hash(digest: u128) -> String {
    crate::store::local_pods::hash_text(digest)
}

/// The mirror annotation of an API pod, when it is a mirror pod.
pub fn mirror_hash(obj: &Value) -> Option<&str> {
    obj["metadata"]["annotations"][MIRROR].as_str()
}

/// Why the API server would refuse a mirror of `pod`, when it would.
pub fn refusal(pod: &Pod) -> Option<String> {
    // Projected sources first: their message names the volume too.
    let first = projected_reference(pod)
        .or_else(|| references(pod).into_iter().next().map(|r| r.to_string()))?;
    Some(format!(
        "it references {first}, and the API server accepts no mirror pod that references \
         configmaps, secrets, persistentvolumeclaims or service accounts (NodeRestriction)"
    ))
}

/// The first API object a projected volume or the service account fields name.
fn projected_reference(pod: &Pod) -> Option<String> {
    let ns = &pod.metadata.namespace;
    let sources = pod
        .spec
        .volumes
        .iter()
        .filter_map(|v| Some((&v.name, v.projected.as_ref()?)))
        .flat_map(|(v, p)| p.sources.iter().map(move |s| (v, s)));
    for (volume, s) in sources {
        let named = match (&s.config_map, &s.secret, &s.service_account_token) {
            (Some(c), _, _) => format!("configmap {ns}/{}", c.name),
            (_, Some(c), _) => format!("secret {ns}/{}", c.name),
            (_, _, Some(_)) => "a service account token".to_string(),
            _ => continue,
        };
        return Some(format!("{named} (projected volume {volume})"));
    }
    let sa = &pod.spec.service_account_name;
    (!sa.is_empty()).then(|| format!("service account {ns}/{sa}"))
}

/// The mirror pod of `pod` (hash `hash`) on node `node` whose Node has uid `node_uid`.
pub fn body(pod: &Pod, node: &str, node_uid: &str, hash: &str) -> Value {
    // Through bytes, as the status patches: the pod's serializer and the JSON reader are
    // in the binary anyway.
    let bytes = serde_json::to_vec(pod).unwrap_or_default();
    let mut obj = match serde_json::from_slice(&bytes) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let m = &pod.metadata;
    let mut annotations = m.annotations.clone();
    annotations.insert(MIRROR.into(), hash.into());
    annotations.insert(HASH.into(), hash.into());
    obj.insert("apiVersion".into(), "v1".into());
    obj.insert("kind".into(), "Pod".into());
    obj.insert(
        "metadata".into(),
        json!({
            "name": mirror_name(&m.name, node),
            "namespace": m.namespace,
            "labels": m.labels,
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
                                 "uid": node_uid, "controller": true}],
        }),
    );
    obj.remove("status");
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        spec.insert("nodeName".into(), node.into());
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse_pod;

    fn pod(spec: Value) -> Pod {
        let p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "d", "uid": "local-uid",
                         "labels": {"app": "web"},
                         "annotations": {"kubernetes.io/config.source": "file"},
                         "creationTimestamp": "2026-12-01T10:00:00Z"},
            "spec": spec});
        parse_pod("test", &serde_json::to_vec(&p).unwrap()).unwrap()
    }

    fn busybox() -> Value {
        json!({"name": "main", "image": "busybox"})
    }

    #[test]
    fn names_are_kubelets_static_pod_names() {
        assert_eq!(mirror_name("web", "gw1"), "web-gw1");
        assert_eq!(local_name("web-gw1", "gw1"), Some("web"));
        assert_eq!(local_name("a-gw1-gw1", "gw1"), Some("a-gw1"));
        for not in ["web-gw2", "gw1", "-gw1", "webgw1"] {
            assert_eq!(local_name(not, "gw1"), None, "{not}");
        }
        assert_eq!(hash(0xab), format!("{:0>32}", "ab"));
    }

    #[test]
    fn the_body_is_the_pod_bound_to_the_node_and_owned_by_it() {
        let b = body(
            &pod(json!({"containers": [busybox()]})),
            "gw1",
            "n-uid",
            "h1",
        );
        let m = &b["metadata"];
        assert_eq!(m["name"], "web-gw1");
        assert_eq!(m["namespace"], "d");
        assert_eq!(m["labels"], json!({"app": "web"}));
        assert_eq!(m["annotations"][MIRROR], "h1");
        assert_eq!(m["annotations"][HASH], "h1");
        assert_eq!(m["annotations"]["kubernetes.io/config.source"], "file");
        assert_eq!(
            m["ownerReferences"],
            json!([{"apiVersion": "v1", "kind": "Node", "name": "gw1", "uid": "n-uid",
                    "controller": true}])
        );
        for gone in ["uid", "creationTimestamp", "resourceVersion"] {
            assert!(m.get(gone).is_none(), "{gone}: {m}");
        }
        assert_eq!(b["spec"]["nodeName"], "gw1");
        assert_eq!(b["spec"]["containers"][0]["image"], "busybox");
        assert!(b.get("status").is_none());
        assert_eq!(mirror_hash(&b), Some("h1"));
        assert_eq!(mirror_hash(&json!({"metadata": {}})), None);
    }

    #[test]
    fn references_to_api_objects_refuse_the_mirror() {
        assert_eq!(refusal(&pod(json!({"containers": [busybox()]}))), None);
        let host = json!({"containers": [busybox()],
            "volumes": [{"name": "h", "hostPath": {"path": "/tmp"}}, {"name": "e", "emptyDir": {}}]});
        assert_eq!(refusal(&pod(host)), None);
        let cm = json!({"containers": [busybox()],
            "volumes": [{"name": "c", "configMap": {"name": "settings"}}]});
        let why = refusal(&pod(cm)).unwrap();
        assert!(why.contains("configmap d/settings"), "{why}");
        let mut env = busybox();
        env["env"] =
            json!([{"name": "P", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "p"}}}]);
        let why = refusal(&pod(json!({"containers": [env]}))).unwrap();
        assert!(why.contains("secret d/creds"), "{why}");
        let pull = json!({"containers": [busybox()], "imagePullSecrets": [{"name": "reg"}]});
        assert!(refusal(&pod(pull)).is_some());
    }

    #[test]
    fn projected_sources_and_service_accounts_refuse_the_mirror() {
        let projected = |source: Value| {
            json!({"containers": [busybox()], "volumes": [{"name": "p",
                "projected": {"sources": [{"downwardAPI": {"items": [
                    {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
                    source]}}]})
        };
        let why = refusal(&pod(projected(json!({"configMap": {"name": "ca"}})))).unwrap();
        assert!(why.contains("configmap d/ca (projected volume p)"), "{why}");
        let why = refusal(&pod(projected(json!({"secret": {"name": "s"}})))).unwrap();
        assert!(why.contains("secret d/s (projected volume p)"), "{why}");
        let token = json!({"serviceAccountToken": {"path": "token"}});
        let why = refusal(&pod(projected(token))).unwrap();
        assert!(why.contains("a service account token"), "{why}");
        let down = json!({"downwardAPI": {"items": [
            {"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}});
        assert_eq!(
            refusal(&pod(projected(down))),
            None,
            "downwardAPI is no object"
        );
        let sa = json!({"containers": [busybox()], "serviceAccountName": "robot"});
        let why = refusal(&pod(sa)).unwrap();
        assert!(why.contains("service account d/robot"), "{why}");
    }
}
