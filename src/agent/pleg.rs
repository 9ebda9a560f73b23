//! The pod lifecycle event generator, poll-based as kubelet's generic PLEG: every
//! `plegPeriod` the agent relists sandboxes and containers (two CRI calls), builds a
//! [`Snapshot`] keyed by pod UID, and [`diff`]s it against the previous one. Each change
//! becomes an [`Event`] that wakes only the worker of the pod it concerns.
//!
//! Only objects carrying our `io.kubernetes.pod.uid` label are looked at: anything else
//! on the runtime belongs to someone else and is never touched.
//!
//! Most relists find nothing new. The lists arrive undecoded and their [`fingerprint`]
//! is compared with the last one first: only when it differs are the objects decoded
//! and a snapshot built, so an idle agent allocates almost nothing per period.

use crate::cri::pb;
use bytes::Bytes;
use std::collections::BTreeMap;

/// Label that ties a sandbox or container to its pod.
pub use crate::kuberuntime::labels::POD_UID as POD_UID_LABEL;

/// What a relist saw of one sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxRecord {
    /// Its runtime id.
    pub id: String,
    /// The pod's namespace and name (sandbox metadata): an orphan whose desired file
    /// is damaged is recognised by them.
    pub namespace: String,
    /// The pod's name (sandbox metadata).
    pub name: String,
    /// The sandbox is ready (not stopped).
    pub ready: bool,
    /// Its attempt number.
    pub attempt: u32,
    /// Nanoseconds since the epoch.
    pub created_at: i64,
}

/// What a relist saw of one container.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerRecord {
    /// Its runtime id.
    pub id: String,
    /// The sandbox it runs in.
    pub sandbox_id: String,
    /// The container's name in the pod spec.
    pub name: String,
    /// Its attempt number (restart count).
    pub attempt: u32,
    /// Its state.
    pub state: pb::ContainerState,
    /// Nanoseconds since the epoch.
    pub created_at: i64,
}

/// Everything the runtime holds for one pod UID.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodRecord {
    /// The pod's sandboxes.
    pub sandboxes: Vec<SandboxRecord>,
    /// The pod's containers.
    pub containers: Vec<ContainerRecord>,
}

/// One relist, keyed by pod UID.
pub type Snapshot = BTreeMap<String, PodRecord>;

/// A change between two relists, for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A container started running.
    ContainerStarted {
        /// The pod's UID.
        pod_uid: String,
        /// The container's runtime id.
        container_id: String,
    },
    /// A container exited.
    ContainerDied {
        /// The pod's UID.
        pod_uid: String,
        /// The container's runtime id.
        container_id: String,
    },
    /// A container is no longer listed.
    ContainerRemoved {
        /// The pod's UID.
        pod_uid: String,
        /// The container's runtime id.
        container_id: String,
    },
    /// Created, or a state the agent does not act on directly (UNKNOWN).
    ContainerChanged {
        /// The pod's UID.
        pod_uid: String,
        /// The container's runtime id.
        container_id: String,
    },
    /// A sandbox appeared, disappeared or changed readiness.
    SandboxChanged {
        /// The pod's UID.
        pod_uid: String,
        /// The sandbox's runtime id.
        sandbox_id: String,
    },
}

impl Event {
    /// The event's kind: its index in [`crate::metrics::PLEG_EVENTS`].
    pub fn kind(&self) -> usize {
        match self {
            Event::ContainerStarted { .. } => 0,
            Event::ContainerDied { .. } => 1,
            Event::ContainerRemoved { .. } => 2,
            Event::ContainerChanged { .. } => 3,
            Event::SandboxChanged { .. } => 4,
        }
    }

    /// The UID of the pod the event is about.
    pub fn pod_uid(&self) -> &str {
        match self {
            Event::ContainerStarted { pod_uid, .. }
            | Event::ContainerDied { pod_uid, .. }
            | Event::ContainerRemoved { pod_uid, .. }
            | Event::ContainerChanged { pod_uid, .. }
            | Event::SandboxChanged { pod_uid, .. } => pod_uid,
        }
    }
}

/// A digest of two list answers that does not depend on the order of their items
/// (runtimes list from hash maps): equal answers give equal fingerprints, and any
/// change to an item changes the fingerprint but for a 2^-64 chance.
pub fn fingerprint(sandboxes: &[Bytes], containers: &[Bytes]) -> u64 {
    let sum = |items: &[Bytes]| {
        items
            .iter()
            .fold(0u64, |acc, item| acc.wrapping_add(mix(fnv1a64(item))))
    };
    // Different multipliers keep a sandbox and a container with equal bytes apart.
    sum(sandboxes)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(sum(containers))
        ^ ((sandboxes.len() as u64) << 32 | containers.len() as u64)
}

/// 64-bit FNV-1a.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A finalizer (splitmix64's) so that sums of digests do not cancel in simple ways.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Decodes the items of a list answer; the error names the first bad item.
pub fn decode<M: prost::Message + Default>(items: &[Bytes]) -> Result<Vec<M>, BadItem> {
    items
        .iter()
        .enumerate()
        .map(|(index, b)| M::decode(b.clone()).map_err(|source| BadItem { index, source }))
        .collect()
}

/// An item of a list answer that does not decode: its index and prost's error.
#[derive(Debug)]
pub struct BadItem {
    /// Its index in the list.
    pub index: usize,
    /// Why it does not decode.
    pub source: prost::DecodeError,
}

impl std::fmt::Display for BadItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "item {}: {}", self.index, self.source)
    }
}

impl std::error::Error for BadItem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Builds a snapshot from the two list answers, which the caller has cut to this agent's
/// objects ([`crate::kuberuntime::agent_mark::retain_ours`]). Objects without the pod
/// UID label are skipped.
pub fn snapshot(sandboxes: &[pb::PodSandbox], containers: &[pb::Container]) -> Snapshot {
    let mut snap = Snapshot::new();
    for s in sandboxes {
        let Some(uid) = s.labels.get(POD_UID_LABEL) else {
            continue;
        };
        snap.entry(uid.clone())
            .or_default()
            .sandboxes
            .push(SandboxRecord {
                id: s.id.clone(),
                namespace: s
                    .metadata
                    .as_ref()
                    .map_or_else(String::new, |m| m.namespace.clone()),
                name: s
                    .metadata
                    .as_ref()
                    .map_or_else(String::new, |m| m.name.clone()),
                ready: s.state == pb::PodSandboxState::SandboxReady as i32,
                attempt: s.metadata.as_ref().map_or(0, |m| m.attempt),
                created_at: s.created_at,
            });
    }
    for c in containers {
        let Some(uid) = c.labels.get(POD_UID_LABEL) else {
            continue;
        };
        let meta = c.metadata.as_ref();
        snap.entry(uid.clone())
            .or_default()
            .containers
            .push(ContainerRecord {
                id: c.id.clone(),
                sandbox_id: c.pod_sandbox_id.clone(),
                name: meta.map_or_else(String::new, |m| m.name.clone()),
                attempt: meta.map_or(0, |m| m.attempt),
                state: pb::ContainerState::try_from(c.state)
                    .unwrap_or(pb::ContainerState::ContainerUnknown),
                created_at: c.created_at,
            });
    }
    snap
}

/// The events that turn `old` into `new`, grouped by pod in UID order.
pub fn diff(old: &Snapshot, new: &Snapshot) -> Vec<Event> {
    let empty = PodRecord::default();
    let mut events = Vec::new();
    let uids = old
        .keys()
        .chain(new.keys().filter(|k| !old.contains_key(*k)));
    for uid in uids {
        let (o, n) = (
            old.get(uid).unwrap_or(&empty),
            new.get(uid).unwrap_or(&empty),
        );
        if o != n {
            diff_pod(uid, o, n, &mut events);
        }
    }
    events
}

fn diff_pod(uid: &str, old: &PodRecord, new: &PodRecord, out: &mut Vec<Event>) {
    for s in &new.sandboxes {
        if old
            .sandboxes
            .iter()
            .find(|o| o.id == s.id)
            .is_none_or(|o| o.ready != s.ready)
        {
            out.push(Event::SandboxChanged {
                pod_uid: uid.into(),
                sandbox_id: s.id.clone(),
            });
        }
    }
    for s in old
        .sandboxes
        .iter()
        .filter(|o| !new.sandboxes.iter().any(|n| n.id == o.id))
    {
        out.push(Event::SandboxChanged {
            pod_uid: uid.into(),
            sandbox_id: s.id.clone(),
        });
    }
    for c in &new.containers {
        let before = old
            .containers
            .iter()
            .find(|o| o.id == c.id)
            .map(|o| o.state);
        if let Some(e) = container_event(uid, &c.id, before, Some(c.state)) {
            out.push(e);
        }
    }
    for c in old
        .containers
        .iter()
        .filter(|o| !new.containers.iter().any(|n| n.id == o.id))
    {
        out.push(Event::ContainerRemoved {
            pod_uid: uid.into(),
            container_id: c.id.clone(),
        });
    }
}

/// The event for one container whose state went from `before` to `after`, as kubelet's
/// generic PLEG: a container that started and exited between two relists is reported
/// as died (the exit is what the worker must act on).
fn container_event(
    uid: &str,
    id: &str,
    before: Option<pb::ContainerState>,
    after: Option<pb::ContainerState>,
) -> Option<Event> {
    use pb::ContainerState::*;
    if before == after {
        return None;
    }
    let (pod_uid, container_id) = (uid.to_string(), id.to_string());
    Some(match after {
        Some(ContainerRunning) => Event::ContainerStarted {
            pod_uid,
            container_id,
        },
        Some(ContainerExited) => Event::ContainerDied {
            pod_uid,
            container_id,
        },
        None => Event::ContainerRemoved {
            pod_uid,
            container_id,
        },
        Some(ContainerCreated) | Some(ContainerUnknown) => Event::ContainerChanged {
            pod_uid,
            container_id,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::ContainerState::*;

    fn sandbox(id: &str, uid: &str, ready: bool) -> pb::PodSandbox {
        let state = if ready {
            pb::PodSandboxState::SandboxReady
        } else {
            pb::PodSandboxState::SandboxNotready
        };
        pb::PodSandbox {
            id: id.into(),
            state: state as i32,
            labels: [(POD_UID_LABEL.to_string(), uid.to_string())].into(),
            ..Default::default()
        }
    }

    fn container(id: &str, uid: &str, state: pb::ContainerState) -> pb::Container {
        pb::Container {
            id: id.into(),
            pod_sandbox_id: "s1".into(),
            metadata: Some(pb::ContainerMetadata {
                name: "app".into(),
                attempt: 2,
            }),
            state: state as i32,
            labels: [(POD_UID_LABEL.to_string(), uid.to_string())].into(),
            ..Default::default()
        }
    }

    fn ev(kind: &str, uid: &str, id: &str) -> Event {
        let (pod_uid, container_id) = (uid.to_string(), id.to_string());
        match kind {
            "started" => Event::ContainerStarted {
                pod_uid,
                container_id,
            },
            "died" => Event::ContainerDied {
                pod_uid,
                container_id,
            },
            "removed" => Event::ContainerRemoved {
                pod_uid,
                container_id,
            },
            "changed" => Event::ContainerChanged {
                pod_uid,
                container_id,
            },
            _ => Event::SandboxChanged {
                pod_uid,
                sandbox_id: container_id,
            },
        }
    }

    #[test]
    fn snapshot_groups_by_uid_and_skips_foreign_objects() {
        let mut foreign = container("x", "u", ContainerRunning);
        foreign.labels.clear();
        let snap = snapshot(
            &[sandbox("s1", "u1", true)],
            &[container("c1", "u1", ContainerRunning), foreign],
        );
        assert_eq!(snap.len(), 1);
        let rec = &snap["u1"];
        assert_eq!((rec.sandboxes.len(), rec.containers.len()), (1, 1));
        assert_eq!(
            (rec.containers[0].name.as_str(), rec.containers[0].attempt),
            ("app", 2)
        );
        assert!(rec.sandboxes[0].ready);
    }

    #[test]
    fn unknown_state_numbers_do_not_panic() {
        let mut c = container("c1", "u1", ContainerRunning);
        c.state = 99;
        c.metadata = None;
        let snap = snapshot(&[], &[c]);
        assert_eq!(snap["u1"].containers[0].state, ContainerUnknown);
    }

    #[test]
    fn fingerprint_ignores_order_and_sees_changes() {
        use prost::Message;
        let enc = |m: &dyn Fn() -> pb::Container| Bytes::from(m().encode_to_vec());
        let a = enc(&|| container("c1", "u1", ContainerRunning));
        let b = enc(&|| container("c2", "u1", ContainerRunning));
        let b_exited = enc(&|| container("c2", "u1", ContainerExited));
        let s = Bytes::from(sandbox("s1", "u1", true).encode_to_vec());
        let (sa, ab, ba) = (
            vec![s.clone()],
            vec![a.clone(), b.clone()],
            vec![b, a.clone()],
        );
        let fp = fingerprint(&sa, &ab);
        assert_eq!(fp, fingerprint(&sa, &ba));
        assert_ne!(fp, fingerprint(&sa, &[a.clone(), b_exited]));
        assert_ne!(fp, fingerprint(&sa, &ab[..1]));
        assert_ne!(fp, fingerprint(&[], &ab));
        assert_ne!(
            fingerprint(&ab[..1], &ba[..1]),
            fingerprint(&ba[..1], &ab[..1])
        );
        let decoded: Vec<pb::Container> = decode(&ab).unwrap();
        assert_eq!(decoded[1].id, "c2");
        assert!(decode::<pb::Container>(&[Bytes::from_static(&[0x0b])]).is_err());
    }

    #[test]
    fn identical_relists_give_no_events() {
        let s = snapshot(
            &[sandbox("s1", "u1", true)],
            &[container("c1", "u1", ContainerRunning)],
        );
        assert!(diff(&s, &s.clone()).is_empty());
    }

    #[test]
    fn container_transitions() {
        let sb = [sandbox("s1", "u1", true)];
        let old = snapshot(
            &sb,
            &[
                container("run", "u1", ContainerRunning),
                container("gone", "u1", ContainerExited),
                container("new", "u1", ContainerCreated),
            ],
        );
        let new = snapshot(
            &sb,
            &[
                container("run", "u1", ContainerExited),
                container("new", "u1", ContainerRunning),
                container("flash", "u1", ContainerExited),
            ],
        );
        assert_eq!(
            diff(&old, &new),
            [
                ev("died", "u1", "run"),
                ev("started", "u1", "new"),
                ev("died", "u1", "flash"),
                ev("removed", "u1", "gone")
            ]
        );
    }

    #[test]
    fn sandbox_readiness_and_pods_appearing_and_vanishing() {
        let old = snapshot(
            &[sandbox("s1", "u1", true), sandbox("s2", "u2", true)],
            &[container("c2", "u2", ContainerRunning)],
        );
        let new = snapshot(
            &[sandbox("s1", "u1", false), sandbox("s3", "u3", true)],
            &[],
        );
        assert_eq!(
            diff(&old, &new),
            [
                ev("sandbox", "u1", "s1"),
                ev("sandbox", "u2", "s2"),
                ev("removed", "u2", "c2"),
                ev("sandbox", "u3", "s3")
            ]
        );
    }
}
