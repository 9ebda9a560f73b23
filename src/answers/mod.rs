//! What the node answers about itself over HTTP, the same on both endpoints that serve
//! it: the local status endpoint (`crate::server`) and the kubelet API
//! (`crate::kubelet_api`). `/healthz` ([`healthz`]), `/pods` ([`pods`]) and the
//! containers' and the node's CPU and memory ([`resource`]), written in the Prometheus
//! text format ([`prom_text`]) from kernel figures ([`process`]).

pub mod pods;
pub mod process;
pub mod prom_text;
pub mod resource;

use crate::http::Answer;

/// `/healthz`: 200 `ok` while the sync loop ticks and relists; 503 with the reason
/// otherwise.
pub fn healthz(cfg: &crate::config::Config) -> Answer {
    match crate::metrics::health::check(cfg.pleg_period) {
        Ok(()) => Answer::text(200, "ok\n"),
        Err(why) => Answer::text(503, &format!("{why}\n")),
    }
}
