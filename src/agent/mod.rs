//! The agent: sync loop, per-pod workers, poll-based PLEG, crash-loop backoff.
pub mod actions;
pub mod backoff;
pub mod context;
pub mod host;
pub mod housekeeping;
pub mod image;
pub mod kill;
pub mod observe;
pub mod pleg;
pub mod sync_loop;
pub mod worker;
