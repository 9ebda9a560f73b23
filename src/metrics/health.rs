//! What `/healthz` judges: when the sync loop last ticked and how its last relist went.
//! The sync loop records; the endpoint reads.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Health {
    last_tick: Cell<Option<Instant>>,
    relist_error: RefCell<Option<String>>,
}

thread_local! {
    static HEALTH: Health = Health::default();
}

/// The sync loop finished a relist: `error` is why it failed, `None` when it worked.
pub fn ticked(error: Option<String>) {
    HEALTH.with(|h| {
        h.last_tick.set(Some(Instant::now()));
        *h.relist_error.borrow_mut() = error;
    })
}

/// Why the agent is not healthy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unhealthy {
    /// No relist finished yet (the runtime has not answered since the start).
    NoRelistYet,
    /// The sync loop's last tick is too long ago.
    Stalled {
        /// How long ago it ticked.
        since: Duration,
        /// Its period (three of them are allowed).
        period: Duration,
    },
    /// The last relist failed, with the runtime's error.
    RelistFailed(String),
}

impl std::fmt::Display for Unhealthy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unhealthy::NoRelistYet => f.write_str("no relist yet (waiting for the runtime)"),
            Unhealthy::Stalled { since, period } => write!(
                f,
                "sync loop last ticked {}s ago (period {period:?})",
                since.as_secs()
            ),
            Unhealthy::RelistFailed(e) => write!(f, "last relist failed: {e}"),
        }
    }
}

impl std::error::Error for Unhealthy {}

/// `Ok` when the loop ticked within `3 * period` and its last relist worked; else why not.
pub fn check(period: Duration) -> Result<(), Unhealthy> {
    HEALTH.with(|h| {
        let Some(at) = h.last_tick.get() else {
            return Err(Unhealthy::NoRelistYet);
        };
        let since = at.elapsed();
        if since > period * 3 {
            return Err(Unhealthy::Stalled { since, period });
        }
        match &*h.relist_error.borrow() {
            Some(e) => Err(Unhealthy::RelistFailed(e.clone())),
            None => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn healthy_only_after_a_recent_successful_relist() {
        let p = Duration::from_millis(100);
        assert!(check(p).unwrap_err().to_string().contains("no relist yet"));
        ticked(Some("connection refused".into()));
        assert!(check(p)
            .unwrap_err()
            .to_string()
            .contains("connection refused"));
        ticked(None);
        assert_eq!(check(p), Ok(()));
        std::thread::sleep(Duration::from_millis(350));
        assert!(check(p).unwrap_err().to_string().contains("last ticked"));
    }
}
