//! Crash-loop and image-pull backoff, as kubelet does it: per key (pod uid + container
//! name), the delay starts at `initial` and doubles after each failure up to `max`; a
//! key whose last failure is older than `reset_after` starts over. Time is passed in, so
//! the rules are tested without sleeping.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// kubelet's crash-loop numbers: 10 s doubling to 5 min, forgotten after 10 min.
pub const CRASH_INITIAL: Duration = Duration::from_secs(10);
/// Longest crash-loop back-off (kubelet's `MaxContainerBackOff`).
pub const CRASH_MAX: Duration = Duration::from_secs(300);
/// A container that ran this long without failing starts its back-off afresh.
pub const CRASH_RESET: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy)]
struct Entry {
    delay: Duration,
    last_failure: Instant,
}

/// Exponential back-off per key (a pod's container, image, sandbox): doubled per failure up
/// to a maximum, forgotten after a quiet while.
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    reset_after: Duration,
    entries: HashMap<String, Entry>,
}

impl Backoff {
    /// A back-off starting at `initial`, doubling up to `max`, reset once `reset_after`
    /// passed since the last failure.
    pub fn new(initial: Duration, max: Duration, reset_after: Duration) -> Self {
        Backoff {
            initial,
            max,
            reset_after,
            entries: HashMap::new(),
        }
    }

    /// kubelet's crash-loop backoff.
    pub fn crash_loop() -> Self {
        Self::new(CRASH_INITIAL, CRASH_MAX, CRASH_RESET)
    }

    /// Records a failure of `key` at `now` and returns the delay before the next try.
    pub fn fail(&mut self, key: &str, now: Instant) -> Duration {
        let (initial, max, reset) = (self.initial, self.max, self.reset_after);
        let entry = self
            .entries
            .entry(key.to_string())
            .and_modify(|e| {
                e.delay = if now.saturating_duration_since(e.last_failure) > reset {
                    initial
                } else {
                    (e.delay * 2).min(max)
                };
                e.last_failure = now;
            })
            .or_insert(Entry {
                delay: initial,
                last_failure: now,
            });
        entry.delay
    }

    /// The time before which `key` must not be retried, if it is backing off.
    pub fn until(&self, key: &str, now: Instant) -> Option<Instant> {
        let e = self.entries.get(key)?;
        let ready_at = e.last_failure + e.delay;
        (ready_at > now).then_some(ready_at)
    }

    /// kubelet's crash-loop rule: a container that exited at `exited` may start again
    /// once the current delay has passed since that exit, not since the previous restart
    /// (a slow create or a long run must not eat into the back-off). Returns when it
    /// may, if that is after `now`. A key quiet for `reset_after` is not backing off.
    pub fn until_since(&self, key: &str, exited: Instant, now: Instant) -> Option<Instant> {
        let e = self.entries.get(key)?;
        if exited.saturating_duration_since(e.last_failure) > self.reset_after {
            return None;
        }
        let ready_at = exited + e.delay;
        (ready_at > now).then_some(ready_at)
    }

    /// The current delay of `key` (what a CrashLoopBackOff message shows).
    pub fn delay(&self, key: &str) -> Option<Duration> {
        self.entries.get(key).map(|e| e.delay)
    }

    /// Forgets `key` (the container ran cleanly for long enough, or was deleted).
    pub fn reset(&mut self, key: &str) {
        self.entries.remove(key);
    }

    /// Drops entries whose last failure is older than twice the reset time, so a
    /// long-running agent does not accumulate keys of pods long gone.
    pub fn gc(&mut self, now: Instant) {
        let horizon = self.reset_after * 2;
        self.entries
            .retain(|_, e| now.saturating_duration_since(e.last_failure) <= horizon);
    }

    /// How many keys are held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn doubles_to_the_cap() {
        let mut b = Backoff::crash_loop();
        let t0 = Instant::now();
        let delays: Vec<u64> = (0..8).map(|i| b.fail("c", t0 + S(i)).as_secs()).collect();
        assert_eq!(delays, [10, 20, 40, 80, 160, 300, 300, 300]);
    }

    #[test]
    fn until_is_last_failure_plus_delay() {
        let mut b = Backoff::crash_loop();
        let t0 = Instant::now();
        b.fail("c", t0);
        assert_eq!(b.until("c", t0 + S(3)), Some(t0 + S(10)));
        assert_eq!(b.until("c", t0 + S(10)), None);
        assert_eq!(b.until("other", t0), None);
    }

    #[test]
    fn until_since_counts_from_the_exit() {
        let mut b = Backoff::crash_loop();
        let t0 = Instant::now();
        assert_eq!(
            b.until_since("c", t0, t0),
            None,
            "first exit: restart at once"
        );
        b.fail("c", t0);
        // Restarted at t0; it ran 15 s and exited at t0+15: wait 10 s from the exit.
        assert_eq!(b.until_since("c", t0 + S(15), t0 + S(16)), Some(t0 + S(25)));
        assert_eq!(b.until_since("c", t0 + S(15), t0 + S(25)), None);
        b.fail("c", t0 + S(15));
        assert_eq!(b.until_since("c", t0 + S(16), t0 + S(17)), Some(t0 + S(36)));
        // Ran cleanly for longer than the reset time: no back-off.
        assert_eq!(b.until_since("c", t0 + S(15) + S(601), t0 + S(700)), None);
    }

    #[test]
    fn resets_after_a_quiet_period() {
        let mut b = Backoff::crash_loop();
        let t0 = Instant::now();
        b.fail("c", t0);
        b.fail("c", t0 + S(20));
        assert_eq!(b.fail("c", t0 + S(20) + S(601)), S(10));
    }

    #[test]
    fn keys_are_independent_and_gc_drops_old_ones() {
        let mut b = Backoff::crash_loop();
        let t0 = Instant::now();
        b.fail("a", t0);
        b.fail("a", t0);
        b.fail("b", t0 + S(1300));
        assert_eq!(b.delay("a"), Some(S(20)));
        assert_eq!(b.delay("b"), Some(S(10)));
        b.gc(t0 + S(1300));
        assert_eq!((b.delay("a"), b.len()), (None, 1));
        b.reset("b");
        assert!(b.is_empty());
    }
}
