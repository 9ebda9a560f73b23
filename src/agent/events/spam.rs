//! kubelet's event spam filter (client-go's per source+object filter): each pod has a
//! token bucket of [`BURST`] events, refilled by one every [`REFILL`]. An occurrence
//! without a token is not sent (its count still grows, and goes out with the next
//! occurrence that has one), so a pod that fails forever costs the API server and the
//! uplink one write per [`REFILL`] once its burst is spent. The source is always this
//! node's kubelet, so the pod's UID is the key.

use super::lru::Lru;
use std::time::{Duration, Instant};

/// Events a pod may send in a burst (client-go's default).
pub const BURST: u32 = 25;
/// Time to earn one more token (client-go's default: 1/300 per second).
pub const REFILL: Duration = Duration::from_secs(300);
/// Pods whose buckets are remembered (client-go keeps 4,096; a gateway runs far fewer
/// pods, and a forgotten bucket only starts full again).
pub const MAX_PODS: usize = 256;

/// A pod's bucket, in time rather than tokens (exact, no float): `credit` as of `at`,
/// where a token is worth [`REFILL`] and the bucket holds [`BURST`] of them.
struct Bucket {
    credit: Duration,
    at: Instant,
}

/// The token buckets of the pods seen lately.
pub struct SpamFilter {
    buckets: Lru<String, Bucket>,
}

impl Default for SpamFilter {
    fn default() -> SpamFilter {
        SpamFilter {
            buckets: Lru::new(MAX_PODS),
        }
    }
}

impl SpamFilter {
    /// Whether an event about pod `uid` at `now` may be sent (takes a token if so).
    pub fn allow(&mut self, uid: &str, now: Instant) -> bool {
        let full = REFILL * BURST;
        let b = self
            .buckets
            .get_or_insert_with(&uid.to_string(), || Bucket {
                credit: full,
                at: now,
            });
        // A clock read earlier than the last one earns nothing rather than panicking.
        let earned = now.saturating_duration_since(b.at);
        b.credit = b.credit.saturating_add(earned).min(full);
        b.at = b.at.max(now);
        match b.credit.checked_sub(REFILL) {
            Some(left) => {
                b.credit = left;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_bursts_25_then_earns_one_event_per_5_minutes() {
        let mut f = SpamFilter::default();
        let t0 = Instant::now();
        let allowed = (0..100).filter(|_| f.allow("a", t0)).count();
        assert_eq!(allowed, BURST as usize);
        // Another pod has its own bucket.
        assert!(f.allow("b", t0));
        assert!(!f.allow("a", t0 + REFILL - Duration::from_secs(1)));
        assert!(f.allow("a", t0 + REFILL));
        assert!(!f.allow("a", t0 + REFILL + Duration::from_secs(10)));
        // Ten quiet refill periods give back ten tokens, no more than the burst.
        let later = t0 + REFILL * 11;
        assert_eq!((0..100).filter(|_| f.allow("a", later)).count(), 10);
        let much_later = t0 + REFILL * 1000;
        let n = (0..100).filter(|_| f.allow("a", much_later)).count();
        assert_eq!(n, BURST as usize);
    }

    #[test]
    fn remembered_pods_are_bounded() {
        let mut f = SpamFilter::default();
        let t0 = Instant::now();
        for i in 0..MAX_PODS * 3 {
            f.allow(&format!("pod-{i}"), t0);
        }
        assert_eq!(f.buckets.len(), MAX_PODS);
    }
}
