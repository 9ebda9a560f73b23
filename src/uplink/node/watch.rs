//! This node's own Node, watched: `nodes?fieldSelector=metadata.name=NODE`, its
//! metadata only (`PartialObjectMetadata`: labels are metadata; 2.3 KB an event where
//! the whole Node is 4 KB), listed then watched on the uplink's one connection
//! ([`crate::uplink::list_watch`]), so labels an
//! admin sets or removes count for admission within the watch's latency, as kubelet's
//! informer on its Node does. Only the labels are used (admission matches node
//! selectors and required node affinity against them; kubelet's admission reads no
//! taint). They go to [`crate::agent::node_labels`], which keeps a copy on flash when
//! they changed and wakes the sync loop.
//!
//! Cost: one long-lived stream on the existing HTTP/2 connection; an event each time
//! the Node object changes (a status patch changes its resourceVersion, so also a
//! metadata-only watch sees it), which at idle is this node's own status report (every
//! `nodeStatusReportFrequency`, 5 min by default, see [`super`]: a status is sent only
//! when it changed), and labels or taints an admin changes; and the server's
//! bookmarks (about one a minute, 154 bytes each).
//! A deleted Node is left to the status task, which registers it again: its labels
//! stay as they were until then.

use crate::agent::node_labels;
use crate::uplink::agent::Uplink;
use crate::uplink::list_watch::{self, Keep};
use crate::uplink::objects_projection::meta_str;
use crate::uplink::{resource_path, EventType, ListParams};
use serde_json::Value;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Follows the Node's labels, forever.
pub async fn run(up: Rc<Uplink>) {
    let path = resource_path("v1", None, "nodes", None, None);
    let params = ListParams {
        field_selector: Some(format!("metadata.name={}", up.node_name)),
        metadata_only: true,
        ..Default::default()
    };
    let mut keep = NodeKeep { up: up.clone() };
    list_watch::run(&up.client, &path, &params, &mut keep).await
}

struct NodeKeep {
    up: Rc<Uplink>,
}

impl Keep for NodeKeep {
    fn what(&self) -> String {
        format!("the Node {}", self.up.node_name)
    }

    fn listed(&mut self, items: &[Value]) {
        if let Some(n) = items
            .iter()
            .find(|n| meta_str(n, "name") == self.up.node_name)
        {
            keep_labels(&self.up, labels(n));
        }
    }

    fn event(&mut self, kind: EventType, object: &Value) {
        let ours = meta_str(object, "name") == self.up.node_name;
        if ours && matches!(kind, EventType::Added | EventType::Modified) {
            keep_labels(&self.up, labels(object));
        }
    }
}

/// The labels of a Node's JSON (a value that is not a string is taken as empty: the
/// API server never sends one).
pub fn labels(node: &Value) -> BTreeMap<String, String> {
    node["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Makes `labels` (as the API shows them on the Node) what admission uses, and keeps
/// the copy on flash current (written only when it differs).
pub fn keep_labels(up: &Uplink, labels: BTreeMap<String, String>) {
    let before = up.ctx.node_labels.borrow().clone();
    if up.ctx.node_labels.set(labels.clone()) {
        log::info!(
            "node {}: labels changed: {}",
            up.node_name,
            describe_change(&before, &labels)
        );
    }
    node_labels::keep(&mut up.ctx.store.borrow_mut(), &up.node_name, &labels);
}

/// `site=hall-3 added, zone removed` for a log line.
fn describe_change(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> String {
    let mut parts: Vec<String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    parts.extend(
        before
            .keys()
            .filter(|k| !after.contains_key(*k))
            .map(|k| format!("{k} removed")),
    );
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_of_a_node_and_what_changed() {
        let n = json!({"metadata": {"name": "gw1", "labels": {"site": "hall-3", "x": 1}}});
        let l = labels(&n);
        assert_eq!(l.get("site").map(String::as_str), Some("hall-3"));
        assert_eq!(l.get("x").map(String::as_str), Some(""));
        assert!(labels(&json!({"metadata": {}})).is_empty());
        let before = [("zone".to_string(), "a".to_string())].into();
        assert_eq!(
            describe_change(&before, &l),
            "site=hall-3, x=, zone removed"
        );
    }
}
