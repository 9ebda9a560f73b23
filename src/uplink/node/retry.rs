//! How the node's requests fail softly: when to try again and what to log.
//!
//! - API server unreachable: again after 1 s. The client itself spaces connection
//!   attempts (1-8 s, 1-30 s after two minutes, jittered) and a request waits for the
//!   next one, so this is no busy loop, and the first request after the link is back
//!   goes out at once.
//! - Refused (401/403, 422, other 4xx): logged once, tried again every minute, never a
//!   crash loop; a fixed cluster (RBAC, a new certificate) is picked up by itself.
//! - Anything else (5xx, 429, a bad answer): back-off from 1 s to 8 s, jittered: the
//!   Lease must be renewed within the node lifecycle controller's 40 s grace (kubelet's
//!   lease controller tries again every 7 s at most).
//!
//! A failure is logged at warn the first time it is seen and at debug while it repeats;
//! the recovery is logged once at info.

use crate::uplink::{backoff, ApiError};
use std::time::{Duration, Instant};

/// The pause after a refusal that retrying will not fix by itself.
pub const SLOW: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub struct Retry {
    what: &'static str,
    failures: u32,
    since: Option<Instant>,
    last_kind: Option<String>,
}

impl Retry {
    /// Pacing for the requests of `what` ("lease", "node status", ...).
    pub fn new(what: &'static str) -> Retry {
        Retry {
            what,
            failures: 0,
            since: None,
            last_kind: None,
        }
    }

    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Records a failure; returns how long to wait before the next attempt.
    pub fn failed(&mut self, e: &ApiError) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.since.get_or_insert_with(Instant::now);
        let kind = kind(e);
        if self.last_kind.as_deref() == Some(kind.as_str()) {
            log::debug!("{}: {e} (failure {} in a row)", self.what, self.failures);
        } else {
            log::warn!("{}: {e}{}; trying again", self.what, hint(e));
            self.last_kind = Some(kind);
        }
        delay(e, self.failures)
    }

    /// Records a success; logs the recovery after failures.
    pub fn succeeded(&mut self) {
        if let Some(since) = self.since.take() {
            log::info!(
                "{}: working again after {} failed attempts over {:.0?}",
                self.what,
                self.failures,
                since.elapsed()
            );
        }
        self.failures = 0;
        self.last_kind = None;
    }
}

/// The class of a failure, for logging it once.
fn kind(e: &ApiError) -> String {
    match e {
        ApiError::Status(s) => format!("{} {}", s.code, s.reason),
        ApiError::Unavailable(_) | ApiError::Timeout(_) => "unavailable".into(),
        ApiError::TooLarge { .. } => "too large".into(),
        ApiError::Decode(_) | ApiError::Protocol(_) => "bad answer".into(),
        ApiError::Request(_) => "request".into(),
    }
}

fn hint(e: &ApiError) -> &'static str {
    match e.code() {
        Some(401) => " (the API server does not accept the kubeconfig's credentials)",
        Some(403) => {
            " (refused: is the kubeconfig's user system:node:NODE in group system:nodes, \
             with NODE this node's name?)"
        }
        _ => "",
    }
}

/// The wait before trying again after the `failures`-th failure in a row.
pub fn delay(e: &ApiError, failures: u32) -> Duration {
    match e {
        ApiError::Unavailable(_) | ApiError::Timeout(_) => Duration::from_secs(1),
        ApiError::Status(s) if (400..500).contains(&s.code) && s.code != 429 => SLOW,
        _ => backoff::short_delay(failures, backoff::random()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uplink::ConnectError;

    #[test]
    fn pacing() {
        let away = ApiError::Unavailable(ConnectError::TimedOut);
        assert_eq!(delay(&away, 9), Duration::from_secs(1));
        assert_eq!(delay(&ApiError::with_code(403), 1), SLOW);
        assert_eq!(delay(&ApiError::with_code(422), 1), SLOW);
        for code in [429, 500, 503] {
            let d = delay(&ApiError::with_code(code), 1);
            assert!(d >= Duration::from_secs(1) && d <= Duration::from_secs(2));
            let late = delay(&ApiError::with_code(code), 9);
            assert!(late >= Duration::from_secs(6) && late <= Duration::from_secs(10));
        }
        let mut r = Retry::new("test");
        r.failed(&away);
        r.failed(&ApiError::with_code(403));
        assert_eq!(r.failures(), 2);
        r.succeeded();
        assert_eq!(r.failures(), 0);
    }
}
