//! Small pieces both agent benches (benches/agent.rs, benches/uplink.rs) print their
//! figures with: percentiles, the target verdict, numeric settings from the environment.

use std::time::Duration;

/// The `p`-th percentile of `v` (nearest rank); zero for an empty `v`.
pub fn pct(v: &[Duration], p: usize) -> Duration {
    let mut s = v.to_vec();
    s.sort_unstable();
    let rank = (s.len() * p).div_ceil(100).max(1);
    s.get(rank - 1).copied().unwrap_or_default()
}

/// "ok" when a target is met, else "MISS".
pub fn verdict(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "MISS"
    }
}

/// The number in environment variable `key`, `default` when it is unset.
pub fn env_u64(key: &str, default: u64) -> Result<u64, String> {
    match std::env::var(key) {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("{key}={v:?}: expected a number")),
        Err(_) => Ok(default),
    }
}
