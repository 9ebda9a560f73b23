//! Registration as kubelet v1.20 does it (`initialNode`, `tryRegisterWithAPIServer`):
//! create the Node with kubelet's default labels (`kubernetes.io/hostname`, `/os`,
//! `/arch`, and the `beta.kubernetes.io/os` and `/arch` kubelet still sets), the
//! configured `nodeLabels` over them, `registerWithTaints` as its taints, and its status.
//! When it exists already (409), it is read and only kubelet's own default labels are
//! brought back to what this node says; the configured labels and taints count only at
//! creation (kubelet's rule: an existing Node's labels and taints belong to its
//! operators). kubelet also zeroes extended resources of a re-created node when its
//! device plugins lost their checkpoint; tinylet has no device plugins, so, like
//! kubelet's stub device manager, it leaves them alone.

use super::machine::Machine;
use super::status::{self, NodeStatus, PriorCondition};
use crate::agent::host::go_arch;
use crate::config::ApiServerConfig;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What registration needs of an existing Node.
#[derive(Debug, Default)]
pub struct ExistingNode {
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    pub conditions: Vec<PriorCondition>,
}

impl ExistingNode {
    /// Picks it out of the Node's JSON (missing fields are empty).
    pub fn from_json(v: &Value) -> ExistingNode {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let labels = v["metadata"]["labels"].as_object();
        ExistingNode {
            uid: text(&v["metadata"]["uid"]),
            labels: labels
                .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
                .unwrap_or_default(),
            conditions: status::priors_from_json(&v["status"]["conditions"]),
        }
    }
}

/// kubelet's default labels and their values on this node.
pub fn default_labels(m: &Machine) -> BTreeMap<String, String> {
    let arch = go_arch();
    [
        ("kubernetes.io/hostname", m.hostname.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", arch),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", arch),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The Node this agent registers.
pub fn new_node(m: &Machine, api: &ApiServerConfig, status: &NodeStatus) -> Value {
    let mut labels = default_labels(m);
    for (k, v) in &api.node_labels {
        if let Some(old) = labels.insert(k.clone(), v.clone()) {
            log::warn!("apiServer.nodeLabels: {k}={v} overrides kubelet's default {k}={old}");
        }
    }
    let mut node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": m.hostname, "labels": labels},
        "spec": {},
        "status": status,
    });
    if !api.register_with_taints.is_empty() {
        node["spec"]["taints"] = json!(api.register_with_taints);
    }
    node
}

/// The label changes that bring an existing Node's default labels back to this node's
/// values (kubelet's `updateDefaultLabels`); empty when there is nothing to do.
pub fn label_fixes(m: &Machine, existing: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    default_labels(m)
        .into_iter()
        .filter(|(k, v)| existing.get(k) != Some(v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Taint;
    use crate::uplink::node::status::{build, Observed};
    use serde_json::json;

    const ONE_CPU: crate::model::NodeResources = crate::model::NodeResources {
        cpu_milli: 1000,
        memory: 0,
        pids: 0,
        ephemeral_storage: 0,
    };

    fn machine() -> Machine {
        Machine {
            hostname: "gw1".into(),
            capacity: ONE_CPU,
            allocatable: ONE_CPU,
            max_pods: 110,
            ..Default::default()
        }
    }

    #[test]
    fn the_node_kubelet_would_create() {
        let m = machine();
        let api = ApiServerConfig {
            node_labels: [
                ("example.com/site".to_string(), "north".to_string()),
                (
                    "kubernetes.io/hostname".to_string(),
                    "gateway-1".to_string(),
                ),
            ]
            .into(),
            register_with_taints: vec![Taint {
                key: "example.com/edge".into(),
                value: String::new(),
                effect: "NoSchedule".into(),
            }],
            ..Default::default()
        };
        let status = build(&m, &Observed::default(), &[], "T");
        let v = new_node(&m, &api, &status);
        let arch = go_arch();
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["kind"], "Node");
        assert_eq!(
            v["metadata"],
            json!({"name": "gw1", "labels": {
                "beta.kubernetes.io/arch": arch, "beta.kubernetes.io/os": "linux",
                "example.com/site": "north", "kubernetes.io/arch": arch,
                "kubernetes.io/hostname": "gateway-1", "kubernetes.io/os": "linux"}})
        );
        assert_eq!(
            v["spec"],
            json!({"taints": [{"key": "example.com/edge", "effect": "NoSchedule"}]})
        );
        assert_eq!(v["status"]["capacity"]["pods"], "110");
        let plain = ApiServerConfig::default();
        let v = new_node(&m, &plain, &status);
        assert_eq!(v["spec"], json!({}));
    }

    #[test]
    fn only_default_labels_are_reconciled() {
        let m = machine();
        let mut existing = default_labels(&m);
        existing.insert("example.com/site".into(), "south".into());
        assert!(label_fixes(&m, &existing).is_empty());
        existing.insert("kubernetes.io/arch".into(), "s390x".into());
        existing.remove("beta.kubernetes.io/os");
        let fixes = label_fixes(&m, &existing);
        assert_eq!(
            fixes,
            [
                ("beta.kubernetes.io/os".to_string(), "linux".to_string()),
                ("kubernetes.io/arch".to_string(), go_arch().to_string()),
            ]
            .into()
        );
        let e = ExistingNode::from_json(&json!({"metadata": {"uid": "u", "labels": {"a": "b"}},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown",
                "lastTransitionTime": "T"}], "images": []}}));
        assert_eq!(e.uid, "u");
        assert_eq!(e.labels["a"], "b");
        assert_eq!(e.conditions[0].status, "Unknown");
        assert_eq!(e.conditions[0].since, "T");
        let empty = ExistingNode::from_json(&json!({}));
        assert!(empty.uid.is_empty() && empty.labels.is_empty() && empty.conditions.is_empty());
    }
}
