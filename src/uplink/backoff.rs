//! Spacing of connection attempts to an API server that is away: 1 s after the first
//! failure, doubling to 8 s; once the server has been away for 2 minutes, doubling on
//! to 30 s. Each delay is jittered by ±25 % (kept within 1-30 s) so a fleet of gateways
//! that lost the server together does not reconnect in lockstep. Attempts go on
//! forever; one success resets the delay.
//!
//! Why two caps: an API server restart takes about a minute, and a node whose Lease is
//! not renewed within the node lifecycle controller's 40 s grace after it is back is
//! marked NotReady (and its pods not Ready). With attempts 6-10 s apart every node is
//! back within 10 s of the server (kubelet's lease controller retries every 7 s, without
//! jitter), and the reconnects of a fleet spread over those seconds. An uplink down for
//! hours costs an attempt every 22-37 s instead.
//!
//! A server that is up but overloaded answers 429 (or 503) with `Retry-After`: the
//! whole connection then waits that long ([`retry_after`]), stretched by up to half
//! again at random, so the nodes it turned away do not all come back in the same
//! second.

use rustix::time::ClockId;
use std::hash::{DefaultHasher, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const INITIAL: Duration = Duration::from_secs(1);
/// The cap while the server has been away for less than [`LONG_OUTAGE`].
const SHORT_MAX: Duration = Duration::from_secs(8);
const MAX: Duration = Duration::from_secs(30);
/// How long the server must have been away before attempts are spaced up to [`MAX`].
const LONG_OUTAGE: Duration = Duration::from_secs(120);

#[derive(Debug, Default)]
pub struct Backoff {
    failures: u32,
    /// When the first of the failures in a row was.
    since: Option<Instant>,
    retry_at: Option<Instant>,
}

impl Backoff {
    /// When the next attempt may be made (`None`: now).
    pub fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }

    /// Records a failed attempt at `now`; `random` is any random number (the jitter).
    pub fn failed(&mut self, now: Instant, random: u32) {
        self.failures = self.failures.saturating_add(1);
        let since = *self.since.get_or_insert(now);
        let wait = if now.saturating_duration_since(since) >= LONG_OUTAGE {
            delay(self.failures, random)
        } else {
            short_delay(self.failures, random)
        };
        self.retry_at = Some(now + wait);
    }

    /// A connection was made: the next failure starts from 1 s again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
        self.since = None;
        self.retry_at = None;
    }
}

/// The wait after `failures` (>= 1) consecutive failures, jittered by `random`: 1 s
/// doubling to 30 s.
pub fn delay(failures: u32, random: u32) -> Duration {
    capped(failures, MAX, random)
}

/// As [`delay`], doubling to 8 s only: for the first minutes of an outage (see the
/// module docs) and the node's heartbeat.
pub fn short_delay(failures: u32, random: u32) -> Duration {
    capped(failures, SHORT_MAX, random)
}

fn capped(failures: u32, cap: Duration, random: u32) -> Duration {
    let base = INITIAL
        .saturating_mul(1 << failures.saturating_sub(1).min(5))
        .min(cap);
    // A factor in [0.75, 1.25).
    let factor = 0.75 + f64::from(random % 1000) / 2000.0;
    base.mul_f64(factor).clamp(INITIAL, MAX)
}

/// Longest `Retry-After` honoured: a server asking for more is asked again then.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// The wait a `Retry-After: seconds` asks for, stretched by `random` to up to 1.5 times
/// (at least 1 s, at most [`MAX_RETRY_AFTER`]); `None` for a value that is not whole
/// seconds (the HTTP-date form, which the API server does not send).
pub fn retry_after(header: &str, random: u32) -> Option<Duration> {
    let secs: u64 = header.trim().parse().ok()?;
    let asked = Duration::from_secs(secs).clamp(INITIAL, MAX_RETRY_AFTER);
    // A factor in [1, 1.5).
    let factor = 1.0 + f64::from(random % 1000) / 2000.0;
    Some(asked.mul_f64(factor).min(MAX_RETRY_AFTER))
}

/// A random number for the jitter and DNS query ids: the kernel's, or, while its pool
/// is not ready yet (early in boot, `getrandom` without blocking fails), the next of
/// [`fallback`]'s numbers. Never a constant: a fleet that lost power together must not
/// reconnect together.
pub fn random() -> u32 {
    let mut b = [0u8; 4];
    match rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::NONBLOCK) {
        Ok(4) => u32::from_ne_bytes(b),
        _ => fallback(),
    }
}

/// The fallback generator's state (0: not seeded yet). One thread uses it; an atomic
/// is just the simplest safe static.
static STATE: AtomicU64 = AtomicU64::new(0);

/// Numbers from a seed that differs per device and boot: a hash of the kernel's boot
/// id, the machine id, the process id and both clocks in nanoseconds, stepped by
/// splitmix64 with the monotonic clock mixed in at each call. Not for secrets: only
/// for spreading retries and query ids apart.
fn fallback() -> u32 {
    let mut state = STATE.load(Ordering::Relaxed);
    if state == 0 {
        state = seed(&device_and_boot());
    }
    let (next, out) = splitmix64(state ^ now_nanos(ClockId::Monotonic).rotate_left(32));
    STATE.store(next.max(1), Ordering::Relaxed);
    (out >> 32) as u32
}

/// What tells this device and boot from another: boot id, machine id, process id,
/// monotonic and real-time clocks.
fn device_and_boot() -> Vec<u8> {
    let mut parts = Vec::new();
    for file in [
        "/proc/sys/kernel/random/boot_id",
        "/etc/machine-id",
        "/var/lib/dbus/machine-id",
    ] {
        parts.extend(crate::bounded::read(Path::new(file), 256).unwrap_or_default());
    }
    parts.extend(std::process::id().to_ne_bytes());
    parts.extend(now_nanos(ClockId::Monotonic).to_ne_bytes());
    parts.extend(now_nanos(ClockId::Realtime).to_ne_bytes());
    parts
}

/// A non-zero seed from `parts` (std's SipHash as the mixer).
fn seed(parts: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(parts);
    h.finish().max(1)
}

/// One step of splitmix64: (next state, output).
fn splitmix64(state: u64) -> (u64, u64) {
    let next = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = next;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (next, z ^ (z >> 31))
}

/// A clock's reading in nanoseconds (wrapping).
fn now_nanos(clock: ClockId) -> u64 {
    let t = rustix::time::clock_gettime(clock);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_to_eight_seconds_then_to_thirty_jittered() {
        for r in [0, 499, 999, u32::MAX] {
            for f in [short_delay as fn(u32, u32) -> Duration, delay] {
                let got: Vec<Duration> = (1..=8).map(|n| f(n, r)).collect();
                assert!(got.iter().all(|d| *d >= INITIAL && *d <= MAX), "{got:?}");
                assert!(got.windows(2).all(|w| w[0] <= w[1]), "{got:?}");
                assert_eq!(f(u32::MAX, r), f(6, r));
            }
            assert!(short_delay(9, r) <= SHORT_MAX.mul_f64(1.25));
        }
        assert_eq!(short_delay(1, 0), INITIAL); // 0.75 s kept at the 1 s floor
        assert_eq!(short_delay(2, 0), Duration::from_millis(1500));
        assert_eq!(short_delay(2, 999), Duration::from_millis(2499));
        assert_eq!(short_delay(9, 0), Duration::from_secs(6));
        assert_eq!(short_delay(9, 999), Duration::from_millis(9_996));
        assert_eq!(delay(9, 999), MAX);
        assert_eq!(delay(9, 0), Duration::from_millis(22_500));
    }

    #[test]
    fn attempts_are_spaced_to_thirty_seconds_only_after_two_minutes() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        let mut now = t0;
        let mut waits = Vec::new();
        while now < t0 + Duration::from_secs(300) {
            b.failed(now, 500);
            let at = b.retry_at().unwrap();
            waits.push((now - t0, at - now));
            now = at;
        }
        for (when, wait) in &waits {
            let cap = if *when < LONG_OUTAGE { SHORT_MAX } else { MAX };
            assert!(*wait <= cap, "{wait:?} after {when:?}: {waits:?}");
        }
        assert!(waits.iter().any(|(_, w)| *w == MAX), "{waits:?}");
    }

    #[test]
    fn retry_after_is_honoured_and_spread() {
        assert_eq!(retry_after("1", 0), Some(Duration::from_secs(1)));
        assert_eq!(retry_after(" 2 ", 999), Some(Duration::from_millis(2999)));
        assert_eq!(retry_after("0", 0), Some(INITIAL));
        assert_eq!(retry_after("100000", 999), Some(MAX_RETRY_AFTER));
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 0), None);
        assert_eq!(retry_after("-1", 0), None);
    }

    #[test]
    fn the_fallback_differs_per_call_device_and_boot() {
        let got: Vec<u32> = (0..64).map(|_| fallback()).collect();
        let mut distinct = got.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() >= 60, "{got:?}");
        let delays: Vec<Duration> = got.iter().map(|&r| short_delay(3, r)).collect();
        assert!(delays.iter().any(|d| *d != delays[0]), "the jitter varies");
        // Another boot id, machine id or process gives another seed.
        let mut parts = device_and_boot();
        let s = seed(&parts);
        parts[0] ^= 1;
        assert_ne!(seed(&parts), s);
        assert_ne!(seed(&[]), 0);
        assert!(!device_and_boot().is_empty());
    }

    #[test]
    fn splitmix64_steps() {
        // The reference output for seed 0 (Vigna's splitmix64.c).
        assert_eq!(splitmix64(0).1, 0xe220_a839_7b1d_cdaf);
        let (next, _) = splitmix64(0);
        assert_ne!(splitmix64(next).1, splitmix64(0).1);
    }

    #[test]
    fn success_resets() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        assert_eq!(b.retry_at(), None);
        b.failed(t0, 500);
        b.failed(t0, 500);
        assert_eq!(b.retry_at(), Some(t0 + Duration::from_secs(2)));
        b.succeeded();
        assert_eq!(b.retry_at(), None);
        b.failed(t0, 500);
        assert_eq!(b.retry_at(), Some(t0 + Duration::from_secs(1)));
    }
}
