//! The labels the API shows on this Node, as admission matches a pod's node selector
//! and required node affinity against them ([`super::admission::node_labels`]).
//!
//! The uplink sets them at registration and from its watch of the Node, so a label an
//! admin sets (`kubectl label node gw1 site=hall-3`) counts for the next pod within the
//! watch's latency. A copy is kept on flash (`STATE/cluster/node/NODE_labels.json`,
//! written only when the labels changed: nothing at idle) and read at the agent's start
//! before the first admission, so a restart without the API server judges the cached
//! pods by the labels they were admitted with, not by none. A copy that cannot be read
//! is logged naming the file and taken as absent (the labels then come from the API
//! once it answers).

#[cfg(feature = "uplink")]
use crate::store::kept::Kept;
#[cfg(feature = "uplink")]
use crate::store::Store;
use smol::channel::{Receiver, Sender};
use std::cell::{Ref, RefCell};
use std::collections::BTreeMap;

#[cfg(feature = "uplink")]
/// The name part of the kept copy (`NODE_labels.json`; the node's name is the other
/// part, so a copy made under another node name is never used).
pub const KEPT_NAME: &str = "labels";

/// The Node's labels as the API last showed them, and whether they changed since the
/// sync loop last looked.
pub struct NodeLabels {
    labels: RefCell<BTreeMap<String, String>>,
    changed: std::cell::Cell<bool>,
    wake: (Sender<()>, Receiver<()>),
}

impl Default for NodeLabels {
    fn default() -> NodeLabels {
        NodeLabels::new(BTreeMap::new())
    }
}

impl NodeLabels {
    /// Starts from `labels` (the kept copy), not counted as a change.
    pub fn new(labels: BTreeMap<String, String>) -> NodeLabels {
        NodeLabels {
            labels: RefCell::new(labels),
            changed: Default::default(),
            wake: smol::channel::bounded(1),
        }
    }

    /// The labels now.
    pub fn borrow(&self) -> Ref<'_, BTreeMap<String, String>> {
        self.labels.borrow()
    }

    /// Replaces the labels; true (and the sync loop woken) when they differ.
    pub fn set(&self, labels: BTreeMap<String, String>) -> bool {
        if *self.labels.borrow() == labels {
            return false;
        }
        *self.labels.borrow_mut() = labels;
        self.changed.set(true);
        let _ = self.wake.0.try_send(());
        true
    }

    /// Whether the labels changed since the last call.
    pub fn take_changed(&self) -> bool {
        self.changed.replace(false)
    }

    /// Returns once the labels changed.
    pub async fn changed_wait(&self) {
        let _ = self.wake.1.recv().await;
    }
}

#[cfg(feature = "uplink")]
/// The kept copy's bytes.
pub fn encode(labels: &BTreeMap<String, String>) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "labels": labels })).unwrap_or_default()
}

#[cfg(feature = "uplink")]
/// The labels in a kept copy; an error for bytes that are not one.
pub fn decode(bytes: &[u8]) -> Result<BTreeMap<String, String>, serde_json::Error> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Copy {
        labels: BTreeMap<String, String>,
    }
    serde_json::from_slice::<Copy>(bytes).map(|c| c.labels)
}

#[cfg(feature = "uplink")]
/// The labels kept for node `node`; none when there is no copy or it is damaged (said
/// in the log, naming the file).
pub fn load(store: &Store, node: &str) -> BTreeMap<String, String> {
    let Some(bytes) = store.kept(Kept::Node, node, KEPT_NAME) else {
        return BTreeMap::new();
    };
    match decode(&bytes) {
        Ok(labels) => labels,
        Err(e) => {
            log::warn!(
                "{}: not the Node's labels ({e}); ignored: admission uses the labels the \
                 API shows once it answers",
                store.kept_path(Kept::Node, node, KEPT_NAME).display()
            );
            BTreeMap::new()
        }
    }
}

#[cfg(feature = "uplink")]
/// Keeps `labels` as node `node`'s copy, when they differ from it.
pub fn keep(store: &mut Store, node: &str, labels: &BTreeMap<String, String>) {
    match store.put_kept(Kept::Node, node, KEPT_NAME, &encode(labels)) {
        Ok(true) => log::debug!("node {node}: labels kept ({})", labels.len()),
        Ok(false) => {}
        Err(e) => log::warn!("node {node}: cannot keep a copy of its labels: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_change_is_noted_once_and_only_when_the_labels_differ() {
        let n = NodeLabels::new(labels(&[("site", "hall-2")]));
        assert!(!n.take_changed());
        assert!(!n.set(labels(&[("site", "hall-2")])));
        assert!(!n.take_changed());
        assert!(n.set(labels(&[("site", "hall-3")])));
        assert_eq!(n.borrow().get("site").map(String::as_str), Some("hall-3"));
        assert!(n.take_changed());
        assert!(!n.take_changed());
        smol::block_on(n.changed_wait());
    }

    #[cfg(feature = "uplink")]
    #[test]
    fn the_copy_round_trips_and_damage_is_an_error() {
        let l = labels(&[("site", "hall-3"), ("kubernetes.io/os", "linux")]);
        assert_eq!(decode(&encode(&l)).unwrap(), l);
        assert!(decode(b"{\"labels\": {\"site\": 3}}").is_err());
        assert!(decode(b"{\"labels\": {\"site\": \"hall").is_err());
        assert!(decode(b"{\"labelz\": {}}").is_err());
        assert!(decode(b"").is_err());
    }

    #[cfg(feature = "uplink")]
    #[test]
    fn kept_on_flash_only_when_changed_and_damage_reads_as_none() {
        let dir = std::env::temp_dir().join(format!("tinylet-node-labels-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut s = Store::open_at(&dir, &[]).unwrap();
        assert!(load(&s, "gw1").is_empty());
        let l = labels(&[("site", "hall-3")]);
        keep(&mut s, "gw1", &l);
        let written = s.bytes_written();
        assert!(written > 0);
        keep(&mut s, "gw1", &l);
        assert_eq!(s.bytes_written(), written, "unchanged: nothing written");
        assert_eq!(load(&s, "gw1"), l);
        assert!(
            load(&s, "gw2").is_empty(),
            "another node's copy is not used"
        );
        std::fs::write(s.kept_path(Kept::Node, "gw1", KEPT_NAME), b"{\"labels\":").unwrap();
        assert!(load(&s, "gw1").is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
