//! Which CRI objects on the runtime are this agent's. Another agent may share the
//! runtime (a second tinylet with its own state directory, a kubelet, k3s): their
//! sandboxes and containers carry kubelet's `io.kubernetes.pod.uid` label as ours do,
//! and must never be adopted or removed as orphans here.
//!
//! Every sandbox and container this agent makes carries the label [`AGENT`] whose value
//! is the agent's mark: its state directory's path. The state directory is what makes
//! an agent (its pods, their uids and status live there, and a lock keeps a second
//! agent out of it), and its path stays the same across agent restarts and reboots.
//! The node name is not part of it: it follows the host name when unset, and a renamed
//! host would otherwise disown its running pods.
//!
//! Objects an older tinylet made carry no mark: a sandbox without one is this agent's
//! when it has tinylet's sandbox-hash annotation (kubelet and k3s never set it), so an
//! upgrade adopts the pods it finds rather than removing them; a container without one
//! is this agent's when its sandbox is.

use super::labels;
use crate::cri::pb;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// Label on every sandbox and container: the agent that made it (see the module doc).
pub const AGENT: &str = "tinylet.io/agent";

/// The mark of the agent whose state directory is `state_dir` (an absolute path, the
/// config checks): the path in its plain spelling, so `/var/lib/tinylet/` or
/// `/var/lib//tinylet` in an edited config is the same agent.
pub fn mark(state_dir: &Path) -> String {
    state_dir
        .components()
        .collect::<std::path::PathBuf>()
        .to_string_lossy()
        .into_owned()
}

/// Whether a sandbox with these labels and annotations is the agent's with `mark`.
pub fn owns_sandbox(
    mark: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> bool {
    match labels.get(AGENT) {
        Some(m) => m == mark,
        None => annotations.contains_key(labels::SANDBOX_HASH),
    }
}

/// Whether a container with these labels, in a sandbox that is or is not the agent's
/// (`sandbox_ours`), is the agent's with `mark`.
pub fn owns_container(mark: &str, labels: &BTreeMap<String, String>, sandbox_ours: bool) -> bool {
    match labels.get(AGENT) {
        Some(m) => m == mark,
        None => sandbox_ours,
    }
}

/// Keeps of two list answers only the agent's sandboxes and containers.
pub fn retain_ours(
    mark: &str,
    sandboxes: &mut Vec<pb::PodSandbox>,
    containers: &mut Vec<pb::Container>,
) {
    sandboxes.retain(|s| owns_sandbox(mark, &s.labels, &s.annotations));
    let ours: HashSet<&str> = sandboxes.iter().map(|s| s.id.as_str()).collect();
    containers
        .retain(|c| owns_container(mark, &c.labels, ours.contains(c.pod_sandbox_id.as_str())));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const ME: &str = "/var/lib/tinylet";

    #[test]
    fn marked_objects_are_ours_only_with_our_mark() {
        let uid = ("io.kubernetes.pod.uid", "u1");
        let mine = map(&[uid, (AGENT, ME)]);
        let other = map(&[uid, (AGENT, "/srv/tinylet-b")]);
        let hash = map(&[(labels::SANDBOX_HASH, "h")]);
        assert!(owns_sandbox(ME, &mine, &BTreeMap::new()));
        // Another tinylet's sandbox has the hash annotation too: the mark decides.
        assert!(!owns_sandbox(ME, &other, &hash));
        assert!(owns_container(ME, &mine, false));
        assert!(!owns_container(ME, &other, true));
        assert_eq!(mark(Path::new(ME)), ME);
        assert_eq!(mark(Path::new("/var/lib//tinylet/./")), ME);
    }

    #[test]
    fn unmarked_sandboxes_are_ours_only_as_an_older_tinylet_made_them() {
        // kubelet's (or k3s') sandbox: its labels and annotations, no tinylet hash.
        let kubelet = map(&[
            ("io.kubernetes.pod.uid", "u1"),
            ("io.kubernetes.pod.name", "web"),
            ("io.kubernetes.container.type", "podsandbox"),
        ]);
        let seen = map(&[("kubernetes.io/config.seen", "2026-12-01T00:00:00Z")]);
        assert!(!owns_sandbox(ME, &kubelet, &seen));
        // An older tinylet's: no mark, its sandbox-hash annotation.
        let old = map(&[(labels::SANDBOX_HASH, "h")]);
        assert!(owns_sandbox(ME, &kubelet, &old));
        // Unmarked containers follow their sandbox.
        assert!(owns_container(ME, &kubelet, true));
        assert!(!owns_container(ME, &kubelet, false));
    }

    #[test]
    fn list_answers_keep_only_ours() {
        let sb = |id: &str, labels, annotations| pb::PodSandbox {
            id: id.into(),
            labels,
            annotations,
            ..Default::default()
        };
        let ctr = |id: &str, sandbox: &str, labels| pb::Container {
            id: id.into(),
            pod_sandbox_id: sandbox.into(),
            labels,
            ..Default::default()
        };
        let mut sandboxes = vec![
            sb("mine", map(&[(AGENT, ME)]), BTreeMap::new()),
            sb("old", BTreeMap::new(), map(&[(labels::SANDBOX_HASH, "h")])),
            sb(
                "kubelet",
                map(&[("io.kubernetes.pod.uid", "u")]),
                BTreeMap::new(),
            ),
        ];
        let mut containers = vec![
            ctr("c-mine", "mine", map(&[(AGENT, ME)])),
            ctr("c-old", "old", BTreeMap::new()),
            ctr(
                "c-kubelet",
                "kubelet",
                map(&[("io.kubernetes.pod.uid", "u")]),
            ),
        ];
        retain_ours(ME, &mut sandboxes, &mut containers);
        let ids = |v: Vec<String>| v.join(",");
        assert_eq!(
            ids(sandboxes.into_iter().map(|s| s.id).collect()),
            "mine,old"
        );
        assert_eq!(
            ids(containers.into_iter().map(|c| c.id).collect()),
            "c-mine,c-old"
        );
    }
}
