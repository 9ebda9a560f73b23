//! Reading CRI container log files, for `tinylet logs`.
//!
//! - [`line`]: one CRI log record (`<time> <stream> <P|F> <msg>`).
//! - [`lines`]: splitting a file into lines with a bounded buffer.
//! - [`join`]: joining partial records into logical lines.
//! - [`files`]: a container's log files (per restart, rotated ones) in reading order.
//! - [`read`]: read, tail and follow across rotations.

pub mod files;
pub mod join;
pub mod line;
pub mod lines;
pub mod read;
