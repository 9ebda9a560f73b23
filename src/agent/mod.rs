//! The agent: sync loop, per-pod workers, poll-based PLEG, crash-loop backoff, probes
//! and lifecycle hooks.
pub mod actions;
pub mod backoff;
pub mod context;
pub mod deadline;
#[cfg(feature = "uplink")]
pub mod events;
pub mod handler;
pub mod hooks;
pub mod host;
pub mod housekeeping;
pub mod http_get;
pub mod image;
pub mod image_fs;
pub mod image_refresh;
pub mod kill;
pub mod observe;
pub mod pleg;
pub mod pressure_check;
pub mod probe;
pub mod silent_registries;
pub mod sync_loop;
#[cfg(feature = "uplink")]
pub mod tokens;
pub mod worker;
