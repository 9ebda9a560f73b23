//! kubelet's event aggregation (client-go's aggregator): events of one pod with the same
//! type and reason but different messages are "similar". Once [`MAX_SIMILAR`] different
//! messages were seen with no gap of more than [`WINDOW`] between similar events, each
//! further one is folded into one event whose message is the latest, prefixed with
//! [`PREFIX`] (so a pod whose probe fails with a new message each time makes one event
//! with a count, not an object per message). Messages are remembered as hashes, at most
//! [`MAX_SIMILAR`] per group, for at most [`MAX_GROUPS`] groups.

use super::lru::Lru;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// Different messages that make similar events combined (client-go's default).
pub const MAX_SIMILAR: usize = 10;
/// Longest gap between similar events that still counts them together (client-go's).
pub const WINDOW: Duration = Duration::from_secs(600);
/// The start of a combined event's message (kubelet's spelling).
pub const PREFIX: &str = "(combined from similar events): ";
/// Groups (pod, type, reason) remembered (client-go keeps 4,096; a gateway's pods make
/// far fewer, and a forgotten group only starts counting again).
pub const MAX_GROUPS: usize = 256;

/// What makes events similar: the pod's UID, warning or not, the reason.
pub type Group = (String, bool, &'static str);

/// The messages of a group seen lately, oldest first, and when the last came.
struct Seen {
    messages: Vec<u64>,
    last: Instant,
}

/// The groups of similar events seen lately.
pub struct Aggregator {
    groups: Lru<Group, Seen>,
}

impl Default for Aggregator {
    fn default() -> Aggregator {
        Aggregator {
            groups: Lru::new(MAX_GROUPS),
        }
    }
}

impl Aggregator {
    /// Notes an event of `group` with `message` at `now`; whether it is to be combined.
    pub fn combine(&mut self, group: &Group, message: &str, now: Instant) -> bool {
        let seen = self.groups.get_or_insert_with(group, || Seen {
            messages: Vec::new(),
            last: now,
        });
        if now.saturating_duration_since(seen.last) > WINDOW {
            seen.messages.clear();
        }
        seen.last = seen.last.max(now);
        let h = hash(message);
        if !seen.messages.contains(&h) {
            seen.messages.push(h);
        }
        if seen.messages.len() < MAX_SIMILAR {
            return false;
        }
        // Bounded: the oldest message makes room for the next different one.
        seen.messages.remove(0);
        true
    }
}

fn hash(message: &str) -> u64 {
    let mut h = DefaultHasher::new();
    message.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(reason: &'static str) -> Group {
        ("uid".to_string(), true, reason)
    }

    #[test]
    fn the_tenth_different_message_within_the_window_is_combined() {
        let mut a = Aggregator::default();
        let t0 = Instant::now();
        let g = group("Unhealthy");
        for i in 0..MAX_SIMILAR - 1 {
            let at = t0 + Duration::from_secs(60 * i as u64);
            assert!(!a.combine(&g, &format!("probe failed: {i}"), at));
            // The same message again is not a new one.
            assert!(!a.combine(&g, &format!("probe failed: {i}"), at));
        }
        let at = t0 + Duration::from_secs(600);
        assert!(a.combine(&g, "probe failed: 9", at));
        assert!(a.combine(&g, "probe failed: 10", at));
        // Another reason of the same pod is another group.
        assert!(!a.combine(&group("BackOff"), "probe failed: 11", at));
    }

    #[test]
    fn a_gap_longer_than_the_window_starts_again() {
        let mut a = Aggregator::default();
        let t0 = Instant::now();
        let g = group("Failed");
        for i in 0..MAX_SIMILAR - 1 {
            assert!(!a.combine(&g, &format!("m{i}"), t0));
        }
        let late = t0 + WINDOW + Duration::from_secs(1);
        assert!(!a.combine(&g, "m9", late));
        // Gaps within the window keep the group going, however long it lasts.
        let mut at = late;
        for i in 10..=18 {
            at += WINDOW;
            assert_eq!(a.combine(&g, &format!("m{i}"), at), i >= 18, "{i}");
        }
    }

    #[test]
    fn remembered_groups_are_bounded() {
        let mut a = Aggregator::default();
        let t0 = Instant::now();
        for i in 0..MAX_GROUPS * 2 {
            a.combine(&(format!("uid-{i}"), false, "Pulled"), "m", t0);
        }
        assert_eq!(a.groups.len(), MAX_GROUPS);
    }
}
