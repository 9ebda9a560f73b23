//! Small pieces the agent benches (benches/agent.rs, benches/uplink.rs, benches/hot_code.rs)
//! share: their `main`, percentiles, the target verdict, numeric settings from the
//! environment.

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

/// A bench's `main`: runs `run` only under `cargo bench` (`cargo test --all-targets` runs
/// bench targets too, without `--bench`, and these need a release agent and minutes of
/// wall time), and exits 1 with its error. What `run` starts lives in it, so it is torn
/// down (Drop) before the exit code.
pub fn bench_main(name: &str, make_target: &str, run: impl FnOnce() -> Result<(), String>) {
    if !std::env::args().any(|a| a == "--bench") {
        println!("{name}: skipped outside `cargo bench` (run `make {make_target}`)");
        return;
    }
    if let Err(e) = run() {
        eprintln!("{name}: error: {e}");
        std::process::exit(1);
    }
}

/// How long to wait for the agent's first trim of its code pages
/// (`tinylet::code_pages`, counted on its `/metrics`).
pub const FIRST_TRIM_WAIT: Duration =
    Duration::from_secs(tinylet::code_pages::FIRST_TRIM.as_secs() + 60);
