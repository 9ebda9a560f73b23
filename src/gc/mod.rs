//! Garbage collection bounded by size: images, dead containers, container logs.
//!
//! - [`image`]: the image GC pass (CRI + statvfs + records).
//! - [`image_ref`]: matching image references to the runtime's images.
//! - [`image_policy`]: the image GC rule (how much to free, what is protected, LRU order).
//! - [`image_records`]: first-seen / last-used times, persisted sparingly.
//! - [`container_policy`]: which dead containers and sandboxes go.
//! - [`container`]: the container GC pass (removals through CRI, leftovers on disk).
//! - [`leftovers`]: volume and log directories of deleted pods.
//! - [`logs`]: container log rotation (rename + ReopenContainerLog).

pub mod container;
pub mod container_policy;
pub mod image;
pub mod image_policy;
pub mod image_records;
pub mod image_ref;
pub mod leftovers;
pub mod logs;
