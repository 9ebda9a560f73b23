//! The container GC policy as pure functions, as kubelet's container GC decides.
//!
//! - Only objects carrying our pod-uid label are considered; anything else on the
//!   runtime (other kubelets, crictl, nerdctl) is never touched.
//! - A container is evictable when it is not running and was created at least `minAge`
//!   ago. Evictable containers are grouped per (pod uid, container name); the newest
//!   `maxPerPodContainer` of a group stay (restart attempt first, then creation time),
//!   so `tinylet logs --previous` has something to read; older ones go, oldest first.
//!   All evictable containers of pods that are no longer desired go.
//! - A sandbox is removable when it is not ready and no container refers to it. For a
//!   desired pod the newest sandbox always stays; for any other pod every removable
//!   sandbox goes.
//!
//! The caller passes the desired pod UIDs; it must only do so once every pod source has
//! been loaded, or live pods would look deleted.

use crate::config::ContainerGcConfig;
use crate::cri::pb;
use crate::kuberuntime::labels;
use std::collections::{BTreeMap, HashSet};

/// A container the pass should remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Victim<'a> {
    /// Its runtime id.
    pub id: &'a str,
    /// The UID of its pod.
    pub pod_uid: &'a str,
    /// The container's name.
    pub name: &'a str,
    /// Its attempt number.
    pub attempt: u32,
    /// Nanoseconds since the Unix epoch.
    pub created_at: i64,
    /// State UNKNOWN: it may still run, so stop it before removing.
    pub stop_first: bool,
}

/// The pod UID label of an object, if it is ours.
pub fn pod_uid(labels: &BTreeMap<String, String>) -> Option<&str> {
    labels
        .get(labels::POD_UID)
        .map(String::as_str)
        .filter(|u| !u.is_empty())
}

/// Containers to remove this pass, in removal order (per group oldest first).
pub fn containers_to_remove<'a>(
    containers: &'a [pb::Container],
    desired: &HashSet<&str>,
    now_ns: i64,
    cfg: &ContainerGcConfig,
) -> Vec<Victim<'a>> {
    let newest_allowed =
        now_ns.saturating_sub(i64::try_from(cfg.min_age.as_nanos()).unwrap_or(i64::MAX));
    let mut groups: BTreeMap<(&str, &str), Vec<Victim<'a>>> = BTreeMap::new();
    for c in containers {
        let Some(uid) = pod_uid(&c.labels) else {
            continue;
        };
        let state =
            pb::ContainerState::try_from(c.state).unwrap_or(pb::ContainerState::ContainerUnknown);
        if state == pb::ContainerState::ContainerRunning || c.created_at > newest_allowed {
            continue;
        }
        let meta = c.metadata.as_ref();
        let name = meta
            .map(|m| m.name.as_str())
            .filter(|n| !n.is_empty())
            .or_else(|| c.labels.get(labels::CONTAINER_NAME).map(String::as_str))
            .unwrap_or("");
        let attempt = meta.map_or(0, |m| m.attempt);
        let v = Victim {
            id: &c.id,
            pod_uid: uid,
            name,
            attempt,
            created_at: c.created_at,
            stop_first: state == pb::ContainerState::ContainerUnknown,
        };
        groups.entry((uid, name)).or_default().push(v);
    }
    let keep = cfg.max_per_pod_container as usize;
    let mut out = Vec::new();
    for ((uid, _), mut group) in groups {
        let keep = if desired.contains(uid) { keep } else { 0 };
        if group.len() <= keep {
            continue;
        }
        // Oldest first; the last `keep` entries are the newest and stay.
        group.sort_unstable_by_key(|v| (v.attempt, v.created_at));
        let remove = group.len() - keep;
        out.extend(group.into_iter().take(remove));
    }
    out
}

/// Sandboxes to remove this pass (stop then remove each). `containers` is the runtime's
/// container list; `removed` the ids this pass already removed (they no longer hold
/// their sandbox).
pub fn sandboxes_to_remove<'a>(
    sandboxes: &'a [pb::PodSandbox],
    containers: &[pb::Container],
    removed: &HashSet<&str>,
    desired: &HashSet<&str>,
) -> Vec<&'a str> {
    let held: HashSet<&str> = containers
        .iter()
        .filter(|c| !removed.contains(c.id.as_str()))
        .map(|c| c.pod_sandbox_id.as_str())
        .collect();
    // uid -> [(attempt, created_at, id, active)]
    let mut by_pod: BTreeMap<&str, Vec<(u32, i64, &'a str, bool)>> = BTreeMap::new();
    for s in sandboxes {
        let Some(uid) = pod_uid(&s.labels) else {
            continue;
        };
        let ready = s.state == pb::PodSandboxState::SandboxReady as i32;
        let active = ready || held.contains(s.id.as_str());
        let attempt = s.metadata.as_ref().map_or(0, |m| m.attempt);
        by_pod
            .entry(uid)
            .or_default()
            .push((attempt, s.created_at, &s.id, active));
    }
    let mut out = Vec::new();
    for (uid, mut list) in by_pod {
        list.sort_unstable_by_key(|&(attempt, created, _, _)| (attempt, created));
        if desired.contains(uid) {
            list.pop(); // the newest stays
        }
        out.extend(list.into_iter().filter(|s| !s.3).map(|s| s.2));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const S: i64 = 1_000_000_000;

    fn labels(uid: &str) -> BTreeMap<String, String> {
        let mut l = BTreeMap::new();
        if !uid.is_empty() {
            l.insert(labels::POD_UID.to_string(), uid.to_string());
        }
        l
    }

    fn ctr(
        id: &str,
        uid: &str,
        name: &str,
        attempt: u32,
        state: pb::ContainerState,
        created_s: i64,
    ) -> pb::Container {
        pb::Container {
            id: id.into(),
            pod_sandbox_id: format!("sb-{uid}"),
            metadata: Some(pb::ContainerMetadata {
                name: name.into(),
                attempt,
            }),
            state: state as i32,
            created_at: created_s * S,
            labels: labels(uid),
            ..Default::default()
        }
    }

    fn cfg(max: u32, min_age_s: u64) -> ContainerGcConfig {
        ContainerGcConfig {
            max_per_pod_container: max,
            min_age: Duration::from_secs(min_age_s),
            ..Default::default()
        }
    }

    use pb::ContainerState::{
        ContainerCreated as Created, ContainerExited as Exited, ContainerRunning as Running,
        ContainerUnknown as Unknown,
    };

    fn ids<'a>(v: &[Victim<'a>]) -> Vec<&'a str> {
        v.iter().map(|v| v.id).collect()
    }

    #[test]
    fn keeps_the_newest_dead_per_container_and_removes_oldest_first() {
        let cs = [
            ctr("a0", "u1", "app", 0, Exited, 10),
            ctr("a2", "u1", "app", 2, Exited, 30),
            ctr("a1", "u1", "app", 1, Exited, 20),
            ctr("a3", "u1", "app", 3, Running, 40),
            ctr("s0", "u1", "side", 0, Exited, 10),
            ctr("f0", "", "foreign", 0, Exited, 1),
        ];
        let desired = HashSet::from(["u1"]);
        let v = containers_to_remove(&cs, &desired, 100 * S, &cfg(1, 0));
        assert_eq!(ids(&v), ["a0", "a1"]);
        let v = containers_to_remove(&cs, &desired, 100 * S, &cfg(0, 0));
        assert_eq!(ids(&v), ["a0", "a1", "a2", "s0"]);
        let v = containers_to_remove(&cs, &desired, 100 * S, &cfg(5, 0));
        assert!(v.is_empty());
    }

    #[test]
    fn min_age_and_states() {
        let cs = [
            ctr("old", "u1", "app", 0, Exited, 10),
            ctr("young", "u1", "app", 1, Exited, 95),
            ctr("created", "u2", "app", 0, Created, 10),
            ctr("unknown", "u2", "app", 1, Unknown, 20),
        ];
        let v = containers_to_remove(&cs, &HashSet::new(), 100 * S, &cfg(1, 10));
        assert_eq!(ids(&v), ["old", "created", "unknown"]);
        assert!(v[2].stop_first && !v[0].stop_first);
    }

    #[test]
    fn pods_no_longer_desired_lose_all_dead_containers() {
        let cs = [
            ctr("d0", "gone", "app", 0, Exited, 10),
            ctr("d1", "gone", "app", 1, Exited, 20),
            ctr("r", "gone", "web", 0, Running, 20),
        ];
        let v = containers_to_remove(&cs, &HashSet::from(["other"]), 100 * S, &cfg(1, 0));
        assert_eq!(ids(&v), ["d0", "d1"]);
    }

    fn sb(id: &str, uid: &str, attempt: u32, ready: bool, created_s: i64) -> pb::PodSandbox {
        pb::PodSandbox {
            id: id.into(),
            metadata: Some(pb::PodSandboxMetadata {
                uid: uid.into(),
                attempt,
                ..Default::default()
            }),
            state: if ready {
                pb::PodSandboxState::SandboxReady
            } else {
                pb::PodSandboxState::SandboxNotready
            } as i32,
            created_at: created_s * S,
            labels: labels(uid),
            ..Default::default()
        }
    }

    #[test]
    fn sandboxes() {
        let sbs = [
            sb("p-old", "p", 0, false, 10),
            sb("p-mid", "p", 1, false, 20),
            sb("p-new", "p", 2, false, 30),
            sb("q-held", "q", 0, false, 10),
            sb("q-ready", "q", 1, true, 20),
            sb("foreign", "", 0, false, 1),
        ];
        let mut holder = ctr("c", "q", "app", 0, Exited, 5);
        holder.pod_sandbox_id = "q-held".into();
        let cs = [holder];
        // p desired: its newest sandbox stays even though not ready.
        let mut v = sandboxes_to_remove(&sbs, &cs, &HashSet::new(), &HashSet::from(["p", "q"]));
        v.sort();
        assert_eq!(v, ["p-mid", "p-old"]);
        // Nothing desired: every inactive sandbox goes; a held one stays until its
        // container is removed.
        let mut v = sandboxes_to_remove(&sbs, &cs, &HashSet::new(), &HashSet::new());
        v.sort();
        assert_eq!(v, ["p-mid", "p-new", "p-old"]);
        let mut v = sandboxes_to_remove(&sbs, &cs, &HashSet::from(["c"]), &HashSet::new());
        v.sort();
        assert_eq!(v, ["p-mid", "p-new", "p-old", "q-held"]);
    }
}
