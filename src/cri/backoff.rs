//! Spacing of connection attempts to a runtime that is down: 100 ms after the first
//! failure, doubling up to 5 s. Calls made while waiting fail at once (with the time of
//! the next attempt) instead of hammering a missing socket.

use std::time::{Duration, Instant};

const INITIAL: Duration = Duration::from_millis(100);
const MAX: Duration = Duration::from_secs(5);

/// Consecutive connection failures and when the next attempt may be made.
#[derive(Debug, Default)]
pub struct Backoff {
    failures: u32,
    retry_at: Option<Instant>,
    last_error: String,
}

impl Backoff {
    /// `Ok` if a connection attempt may be made at `now`; otherwise how long to wait and
    /// why the last attempt failed.
    pub fn check(&self, now: Instant) -> Result<(), (Duration, &str)> {
        match self.retry_at {
            Some(at) if at > now => Err((at - now, &self.last_error)),
            _ => Ok(()),
        }
    }

    /// Records a failed attempt (or a connection that broke before answering anything).
    pub fn failed(&mut self, now: Instant, error: String) {
        self.failures = self.failures.saturating_add(1);
        self.retry_at = Some(now + delay(self.failures));
        self.last_error = error;
    }

    /// The runtime answered: the next failure starts again from the shortest delay.
    pub fn succeeded(&mut self) {
        self.failures = 0;
        self.retry_at = None;
        self.last_error.clear();
    }
}

/// The wait after `failures` consecutive failures (at least 1).
fn delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    INITIAL.saturating_mul(1 << doublings).min(MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_five_seconds() {
        let got: Vec<u128> = (1..=9).map(|n| delay(n).as_millis()).collect();
        assert_eq!(got, [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
        assert_eq!(delay(u32::MAX), MAX);
    }

    #[test]
    fn check_waits_until_the_retry_time() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        assert!(b.check(t0).is_ok());
        b.failed(t0, "no such file".into());
        let (wait, why) = b.check(t0).unwrap_err();
        assert_eq!((wait, why), (INITIAL, "no such file"));
        assert!(b.check(t0 + INITIAL).is_ok());
        b.failed(t0, "again".into());
        assert_eq!(b.check(t0).unwrap_err().0, 2 * INITIAL);
        b.succeeded();
        assert!(b.check(t0).is_ok());
        b.failed(t0, "x".into());
        assert_eq!(b.check(t0).unwrap_err().0, INITIAL);
    }
}
