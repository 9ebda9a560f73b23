//! What the fleet runs: in namespace [`NS`], a DaemonSet per kind of node (its pods
//! read the ConfigMap [`CONFIG`], so every node holds that one name-scoped watch, as
//! the Node authorizer allows) and `pods_per_node` plain pods bound to each node. No
//! service-account token volume (`automountServiceAccountToken: false`): the nodes'
//! own traffic is what is measured. Everything tolerates every taint, so an uplink cut
//! evicts nothing.

use crate::admin::Admin;
use crate::common::kube::Kube;
use crate::options::Kind;
use serde_json::{json, Value};
use tinylet::uplink::resource_path;

pub const NS: &str = "fleet";
pub const CONFIG: &str = "fleet-config";

/// The DaemonSet's image before and after the rollout.
pub fn ds_image(generation: u32) -> String {
    format!("fake.local/ds:{generation}")
}

/// The namespace and the ConfigMap, ready for pods.
pub fn prepare(kube: &Kube) {
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}).to_string(),
    );
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": CONFIG, "namespace": NS},
                "data": {"MODE": "fleet"}})
        .to_string(),
    );
    kube.wait_namespace(NS);
}

fn ds_name(kind: Kind) -> String {
    format!("ds-{}", kind.label())
}

/// The DaemonSet of `kind`'s nodes; all its old pods replaced at once on an update, so
/// a rollout's time per node is the nodes' and the controllers', not a queue's.
fn daemonset(kind: Kind) -> Value {
    let name = ds_name(kind);
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
            "template": {
                "metadata": {"labels": {"app": name, "fleet": kind.label()}},
                "spec": pod_spec(&ds_image(1), json!({"nodeSelector": {"fleet": kind.label()}}), true),
            },
        },
    })
}

/// A pod spec running `image`, `extra` merged in; the DaemonSet's reads the ConfigMap.
fn pod_spec(image: &str, extra: Value, reads_config: bool) -> Value {
    let mut c = json!({"name": "app", "image": image});
    if reads_config {
        c["envFrom"] = json!([{"configMapRef": {"name": CONFIG}}]);
    }
    let mut spec = json!({
        "containers": [c],
        "automountServiceAccountToken": false,
        "terminationGracePeriodSeconds": 5,
        "tolerations": [{"operator": "Exists"}],
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    spec
}

/// The plain pods of node `node`.
fn node_pods(kind: Kind, node: &str, count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| {
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{node}-{i}"), "namespace": NS,
                             "labels": {"fleet": kind.label()}},
                "spec": pod_spec("fake.local/app:1", json!({"nodeName": node}), false),
            })
        })
        .collect()
}

/// Makes the DaemonSet and every node's pods.
pub fn start(admin: &Admin, kind: Kind, nodes: &[String], per_node: usize) -> Result<(), String> {
    let dss = resource_path("apps/v1", Some(NS), "daemonsets", None, None);
    admin.create_all(&dss, &[daemonset(kind)])?;
    let pods: Vec<Value> = nodes
        .iter()
        .flat_map(|n| node_pods(kind, n, per_node))
        .collect();
    admin.create_all(&resource_path("v1", Some(NS), "pods", None, None), &pods)
}

/// The DaemonSet's pods to image `generation`.
pub fn roll(admin: &Admin, kind: Kind, generation: u32) -> Result<(), String> {
    let path = resource_path(
        "apps/v1",
        Some(NS),
        "daemonsets",
        Some(&ds_name(kind)),
        None,
    );
    let body = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": ds_image(generation)}]}}}});
    admin.patch(&path, &body)
}

/// Removes what `kind`'s fleet left: the DaemonSet, its pods and the nodes' pods, the
/// Nodes (their Leases go with them: the Node owns each).
pub fn remove(admin: &Admin, kind: Kind) -> Result<(), String> {
    let ds = resource_path(
        "apps/v1",
        Some(NS),
        "daemonsets",
        Some(&ds_name(kind)),
        None,
    );
    admin.delete_all(&ds, "")?;
    let selector = format!("fleet={}", kind.label());
    admin.delete_all(
        &resource_path("v1", Some(NS), "pods", None, None),
        &selector,
    )?;
    admin.delete_all(&resource_path("v1", None, "nodes", None, None), &selector)
}
