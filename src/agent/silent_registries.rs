//! Registry hosts that lately let a pull run into its deadline without an answer.
//!
//! After a reboot behind an uplink that drops packets, the first pull from a host waits
//! `imagePullFallbackTimeout` before its container runs the local copy; every other
//! container that wants a pull from the same host (later in the same pod, init
//! containers included, or in another pod) then runs its local copy at once instead of
//! waiting again. A mark ends when a pull from the host gets any answer (an image or
//! an error), or [`HOLD`] after the last timeout, so a host that has come back costs
//! at most one more short wait.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// How long a timeout marks a host silent when nothing is heard from it meanwhile.
pub const HOLD: Duration = Duration::from_secs(300);

/// The hosts marked silent, with the time of their last timeout. At most one entry per
/// registry host the desired pods name: a handful, so a list is enough.
#[derive(Debug, Default)]
pub struct SilentRegistries {
    hosts: RefCell<Vec<(String, Instant)>>,
}

impl SilentRegistries {
    /// Whether a pull from `host` timed out less than [`HOLD`] before `now` with no
    /// answer from it since.
    pub fn is_silent(&self, host: &str, now: Instant) -> bool {
        let mut hosts = self.hosts.borrow_mut();
        hosts.retain(|(_, at)| now.saturating_duration_since(*at) < HOLD);
        hosts.iter().any(|(h, _)| h == host)
    }

    /// A pull from `host` ran into its deadline at `now`.
    pub fn timed_out(&self, host: &str, now: Instant) {
        let mut hosts = self.hosts.borrow_mut();
        match hosts.iter_mut().find(|(h, _)| h == host) {
            Some((_, at)) => *at = now,
            None => {
                log::warn!("registry {host} does not answer: containers with a local copy of their image run it without waiting for pulls from there");
                hosts.push((host.to_string(), now));
            }
        }
    }

    /// A pull from `host` got an answer (the image, or an error the registry or the
    /// network gave): it is not silent.
    pub fn answered(&self, host: &str) {
        let mut hosts = self.hosts.borrow_mut();
        let before = hosts.len();
        hosts.retain(|(h, _)| h != host);
        if hosts.len() != before {
            log::info!("registry {host} answers again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_marks_a_host_until_it_answers_or_the_hold_ends() {
        let s = SilentRegistries::default();
        let t0 = Instant::now();
        assert!(!s.is_silent("reg:5000", t0));
        s.timed_out("reg:5000", t0);
        assert!(s.is_silent("reg:5000", t0 + Duration::from_secs(10)));
        assert!(!s.is_silent("docker.io", t0), "other hosts are not marked");
        s.answered("reg:5000");
        assert!(!s.is_silent("reg:5000", t0 + Duration::from_secs(10)));
        s.timed_out("reg:5000", t0);
        assert!(s.is_silent("reg:5000", t0 + HOLD - Duration::from_secs(1)));
        assert!(!s.is_silent("reg:5000", t0 + HOLD));
        assert!(s.hosts.borrow().is_empty(), "expired marks are dropped");
        // A later timeout renews the mark.
        s.timed_out("reg:5000", t0);
        s.timed_out("reg:5000", t0 + HOLD);
        assert!(s.is_silent("reg:5000", t0 + HOLD + Duration::from_secs(1)));
    }
}
