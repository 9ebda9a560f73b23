//! kubelet's placement predicates at admission: the pod's `nodeSelector` and required
//! node affinity must match this node's labels (`NodeAffinity`), and a cluster pod's
//! `nodeName` must be this node's (`NodeName`). The scheduler checked them already for
//! the pods it placed; a pod made with `nodeName` set skips the scheduler, and the
//! node's labels may have changed since.

use super::{NodeView, Refusal};
use crate::model::Pod;

/// The reason of a refusal for the node's labels (selector, required affinity).
pub const REASON: &str = "NodeAffinity";

/// Checks the pod's placement against the node.
pub fn check(pod: &Pod, from_cluster: bool, node: &NodeView<'_>) -> Result<(), Refusal> {
    if !matches_node(pod, node) {
        return Err(Refusal::new(REASON, "Predicate NodeAffinity failed"));
    }
    let name = &pod.spec.node_name;
    if from_cluster && !name.is_empty() && name != node.name {
        return Err(Refusal::new("NodeName", "Predicate NodeName failed"));
    }
    Ok(())
}

/// Whether the node's labels meet the pod's node selector and required node affinity.
pub fn matches_node(pod: &Pod, node: &NodeView<'_>) -> bool {
    let labels = node.labels;
    let selector = pod
        .spec
        .node_selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v));
    let required = pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let affinity = required.is_none_or(|r| {
        r.node_selector_terms
            .iter()
            .any(|t| t.matches(labels, node.name))
    });
    selector && affinity
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::affinity::{
        Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    };
    use crate::model::NodeResources;
    use std::collections::BTreeMap;

    #[test]
    fn selector_affinity_and_name() {
        let labels: BTreeMap<String, String> = [
            ("kubernetes.io/hostname".to_string(), "gw1".to_string()),
            ("site".to_string(), "hall-3".to_string()),
        ]
        .into();
        let node = NodeView {
            name: "gw1",
            labels: &labels,
            allocatable: NodeResources::default(),
            memory_pressure: false,
            disk_pressure: false,
        };
        let mut p = Pod::default();
        assert!(check(&p, true, &node).is_ok());
        p.spec.node_selector = [("site".to_string(), "hall-4".to_string())].into();
        let e = check(&p, true, &node).unwrap_err();
        assert_eq!(e.reason, "NodeAffinity");
        assert_eq!(e.message, "Pod Predicate NodeAffinity failed");
        p.spec.node_selector = [("site".to_string(), "hall-3".to_string())].into();
        p.spec.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: vec![NodeSelectorRequirement {
                            key: "site".into(),
                            operator: "NotIn".into(),
                            values: vec!["hall-3".into()],
                        }],
                        match_fields: vec![],
                    }],
                }),
            }),
        });
        assert!(check(&p, true, &node).is_err());
        p.spec.affinity = None;
        p.spec.node_name = "gw2".into();
        assert_eq!(check(&p, true, &node).unwrap_err().reason, "NodeName");
        assert!(
            check(&p, false, &node).is_ok(),
            "a local pod's nodeName is its own affair"
        );
    }
}
