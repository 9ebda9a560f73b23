//! The agent: sync loop, per-pod workers, poll-based PLEG, crash-loop backoff.
pub mod actions;
pub mod backoff;
pub mod pleg;
