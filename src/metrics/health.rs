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

/// `Ok` when the loop ticked within `3 * period` and its last relist worked; else why not.
pub fn check(period: Duration) -> Result<(), String> {
    HEALTH.with(|h| {
        let Some(at) = h.last_tick.get() else {
            return Err("no relist yet (waiting for the runtime)".into());
        };
        let since = at.elapsed();
        if since > period * 3 {
            return Err(format!(
                "sync loop last ticked {}s ago (period {period:?})",
                since.as_secs()
            ));
        }
        match &*h.relist_error.borrow() {
            Some(e) => Err(format!("last relist failed: {e}")),
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
        assert!(check(p).unwrap_err().contains("no relist yet"));
        ticked(Some("connection refused".into()));
        assert!(check(p).unwrap_err().contains("connection refused"));
        ticked(None);
        assert_eq!(check(p), Ok(()));
        std::thread::sleep(Duration::from_millis(350));
        assert!(check(p).unwrap_err().contains("last ticked"));
    }
}
