//! Where a pod may run: `spec.nodeSelector` and the required node affinity
//! (`affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`), read so the
//! node can check them itself at admission (a pod bound by `nodeName` bypasses the
//! scheduler). Pod (anti-)affinity and preferred terms are the scheduler's business and
//! not read.

// Fields are the Kubernetes API fields of the same name.
#![allow(missing_docs)]

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `spec.affinity` (only its node affinity).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Affinity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
}

/// `affinity.nodeAffinity` (only its required terms).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeAffinity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
}

/// Terms ORed: the node must match one of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelector {
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

/// Requirements ANDed: on the node's labels (`matchExpressions`) and fields
/// (`matchFields`: only `metadata.name`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelectorTerm {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// `key OPERATOR values`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelectorRequirement {
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`.
    pub operator: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// The operators the API server accepts.
pub const OPERATORS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

impl NodeSelectorRequirement {
    /// Whether `value` (the node's label, or field, if it has one) meets it, as the
    /// scheduler decides.
    pub fn matches(&self, value: Option<&str>) -> bool {
        let int = |s: &str| s.parse::<i64>().ok();
        match (self.operator.as_str(), value) {
            ("In", Some(v)) => self.values.iter().any(|x| x == v),
            ("In", None) => false,
            ("NotIn", Some(v)) => !self.values.iter().any(|x| x == v),
            ("NotIn", None) => true,
            ("Exists", v) => v.is_some(),
            ("DoesNotExist", v) => v.is_none(),
            ("Gt" | "Lt", Some(v)) => match (int(v), self.values.first().and_then(|x| int(x))) {
                (Some(a), Some(b)) if self.operator == "Gt" => a > b,
                (Some(a), Some(b)) => a < b,
                _ => false,
            },
            _ => false,
        }
    }
}

impl NodeSelectorTerm {
    /// Whether a node with `labels` and `name` meets every requirement of the term (an
    /// empty term matches nothing, as in the scheduler).
    pub fn matches(&self, labels: &BTreeMap<String, String>, name: &str) -> bool {
        if self.match_expressions.is_empty() && self.match_fields.is_empty() {
            return false;
        }
        let exprs = self
            .match_expressions
            .iter()
            .all(|r| r.matches(labels.get(&r.key).map(String::as_str)));
        let fields = self
            .match_fields
            .iter()
            .all(|r| r.matches((r.key == "metadata.name").then_some(name)));
        exprs && fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn operators_as_the_scheduler_reads_them() {
        assert!(req("k", "In", &["a", "b"]).matches(Some("b")));
        assert!(!req("k", "In", &["a"]).matches(None));
        assert!(req("k", "NotIn", &["a"]).matches(None));
        assert!(!req("k", "NotIn", &["a"]).matches(Some("a")));
        assert!(req("k", "Exists", &[]).matches(Some("")));
        assert!(req("k", "DoesNotExist", &[]).matches(None));
        assert!(req("k", "Gt", &["3"]).matches(Some("4")));
        assert!(!req("k", "Gt", &["3"]).matches(Some("x")));
        assert!(req("k", "Lt", &["3"]).matches(Some("-1")));
        assert!(!req("k", "Bogus", &[]).matches(Some("a")));
    }

    #[test]
    fn a_term_needs_every_requirement_and_fields_see_the_name() {
        let labels: BTreeMap<String, String> = [("zone".to_string(), "hall-3".to_string())].into();
        let term = NodeSelectorTerm {
            match_expressions: vec![req("zone", "In", &["hall-3"])],
            match_fields: vec![req("metadata.name", "In", &["gw1"])],
        };
        assert!(term.matches(&labels, "gw1"));
        assert!(!term.matches(&labels, "gw2"));
        assert!(!NodeSelectorTerm::default().matches(&labels, "gw1"));
    }
}
