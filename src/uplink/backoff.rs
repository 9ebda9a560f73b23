//! Spacing of connection attempts to an API server that is away: 1 s after the first
//! failure, doubling to 30 s, each delay jittered by ±25 % (kept within 1-30 s) so a
//! fleet of gateways that lost the uplink together does not reconnect in lockstep.
//! Attempts go on forever; one success resets the delay.

use std::time::{Duration, Instant};

const INITIAL: Duration = Duration::from_secs(1);
const MAX: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
pub struct Backoff {
    failures: u32,
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
        self.retry_at = Some(now + delay(self.failures, random));
    }

    /// A connection was made: the next failure starts from 1 s again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
        self.retry_at = None;
    }
}

/// The wait after `failures` (>= 1) consecutive failures, jittered by `random`.
pub fn delay(failures: u32, random: u32) -> Duration {
    let base = INITIAL
        .saturating_mul(1 << failures.saturating_sub(1).min(5))
        .min(MAX);
    // A factor in [0.75, 1.25).
    let factor = 0.75 + f64::from(random % 1000) / 2000.0;
    base.mul_f64(factor).clamp(INITIAL, MAX)
}

/// A random number for the jitter (the kernel's; 0 if it cannot give one).
pub fn random() -> u32 {
    let mut b = [0u8; 4];
    match rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::NONBLOCK) {
        Ok(4) => u32::from_ne_bytes(b),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_to_thirty_seconds_jittered() {
        for r in [0, 499, 999, u32::MAX] {
            let got: Vec<Duration> = (1..=8).map(|n| delay(n, r)).collect();
            assert!(got.iter().all(|d| *d >= INITIAL && *d <= MAX), "{got:?}");
            assert!(got.windows(2).all(|w| w[0] <= w[1]), "{got:?}");
            assert_eq!(delay(u32::MAX, r), delay(6, r));
        }
        assert_eq!(delay(1, 0), INITIAL); // 0.75 s kept at the 1 s floor
        assert_eq!(delay(2, 0), Duration::from_millis(1500));
        assert_eq!(delay(2, 999), Duration::from_millis(2499));
        assert_eq!(delay(9, 999), MAX);
        assert_eq!(delay(9, 0), Duration::from_millis(22_500));
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
