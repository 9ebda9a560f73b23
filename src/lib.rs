//! tinylet: a tiny kubelet for constrained ARM gateways.
//!
//! Module map (one concept per module; see docs/design.md for the architecture):
//! - [`bounded`]: reading files someone else controls with a size limit.
//! - [`config`]: the agent's JSON config.
//! - [`cri`]: the hand-written CRI `runtime.v1` client (gRPC over h2 on a Unix socket).
//! - [`model`]: the Kubernetes v1 objects the agent reads (Pod, ConfigMap, Secret),
//!   quantities and validation.
//! - [`store`]: the flat-file pod cache and status files (atomic, crash-safe).
//! - [`kuberuntime`]: turning pods into CRI sandboxes/containers and back into status.
//! - [`agent`]: the sync loop, pod workers, PLEG and backoff.
//! - [`gc`]: image GC, container GC, container log rotation.
//! - [`node`]: pod cgroups and node allocatable (kubelet's container manager).
//! - [`logs`]: reading CRI container log files (`tinylet logs`).
//! - [`cli`]: the `tinylet` subcommands.
//! - [`metrics`]: the agent's counters; [`server`]: the local status endpoint
//!   (`/healthz`, `/pods`, `/metrics`).
//! - [`answers`]: what the node answers about itself the same on the status endpoint
//!   and the kubelet API (`/healthz`, `/pods`, `/metrics/resource`, in the
//!   Prometheus text format).
//! - [`sdnotify`]: systemd readiness notification (`READY=1`), by hand.
//! - [`rt`]: the one-thread executor every task runs on (smol's `LocalExecutor`).
//! - [`http`]: the HTTP/1.1 both local servers share (the status endpoint and the
//!   kubelet API): request heads, answers, the bounded accept loop, query decoding.
//! - `tls` (feature `uplink`): TLS and the node's identity (the kubeconfig, its files,
//!   TLS over an async-io socket, who a certificate names), shared by the uplink and the
//!   kubelet API.
//! - `uplink` (feature `uplink`): joining a cluster as a Node: the Kubernetes API
//!   client, registration, lease and node status, the cluster's pods and their
//!   objects, status up; for the kubelet API, its authorizer and its serving
//!   certificate's CSRs.
//! - `kubelet_api` (feature `uplink`): the kubelet API on :10250 for the API server
//!   (`kubectl logs`, `exec`, `top`), beside the uplink, not on it: the agent hands it
//!   who authorizes and who signs its certificate.
//!
//! - [`code_pages`]: giving back the pages of the binary's code the agent no longer
//!   runs (after the start, and periodically).
//!
//! No `unsafe` (denied below) but for one call: system calls go through rustix's safe
//! API. The exception is `madvise` in [`code_pages`], which rustix cannot make safe (it
//! drops whatever is mapped in the range); that module checks what it drops.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod answers;
pub mod bounded;
pub mod cli;
pub mod code_pages;
pub mod config;
pub mod cri;
pub mod gc;
pub mod http;
#[cfg(feature = "uplink")]
pub mod kubelet_api;
pub mod kuberuntime;
pub mod logs;
pub mod metrics;
pub mod model;
pub mod node;
pub mod rt;
pub mod sdnotify;
pub mod server;
pub mod store;
#[cfg(feature = "uplink")]
pub mod tls;
#[cfg(feature = "uplink")]
pub mod uplink;

/// Test-only: the time bound `d` of a test that checks work stays small (no blow-up),
/// scaled for slow runs: the ARM unit tests under qemu (cross/build.sh sets
/// `TINYLET_TEST_TIME_FACTOR`) run many times slower than the host.
#[cfg(test)]
pub(crate) fn test_time_limit(d: std::time::Duration) -> std::time::Duration {
    let factor = std::env::var("TINYLET_TEST_TIME_FACTOR")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(1);
    d * factor.max(1)
}
