//! The flat-file store: desired objects and status files, written atomically.

pub mod atomic;
pub mod digest;
pub mod layout;
pub mod uid;
pub mod watch;
