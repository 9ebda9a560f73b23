//! Garbage collection bounded by size: images, dead containers, container logs.
//!
//! How the agent drives it (each pass is one async call on the agent's executor; a pass
//! that fails is logged by the caller and simply runs again next period, never fatal):
//! - [`image::ImageGc::new`] once, then [`image::ImageGc::pass`] every `imageGC.period`
//!   with the image references of every container of every desired pod.
//! - [`container::pass`] every `containerGC.period` with the UIDs of the desired pods
//!   (only once every pod source is loaded).
//! - [`empty_dir_limit::SizeLimits::check`] on the container GC period with the desired
//!   pods (a warning per disk emptyDir over its `sizeLimit`).
//! - [`logs::LogRotator::new`] once, then [`logs::LogRotator::pass`] every
//!   [`logs::PERIOD`].
//!
//! - [`image`]: the image GC pass (CRI + statvfs + records).
//! - [`image_ref`]: matching image references to the runtime's images.
//! - [`image_policy`]: the image GC rule (how much to free, what is protected, LRU order).
//! - [`image_records`]: first-seen / last-used times, persisted sparingly.
//! - [`container_policy`]: which dead containers and sandboxes go.
//! - [`container`]: the container GC pass (removals through CRI, leftovers on disk).
//! - [`leftovers`]: volume and log directories of deleted pods.
//! - [`empty_dir_limit`]: disk emptyDir usage against `sizeLimit` (warn, not evict).
//! - [`logs`]: container log rotation (rename + ReopenContainerLog).
//! - [`tree_size`]: the size of a tree a pod may write, measured without following links.
//! - [`error`]: why a removal or rotation failed (its step and cause).

pub mod container;
pub mod container_policy;
pub mod empty_dir_limit;
pub mod error;
pub mod image;
pub mod image_policy;
pub mod image_records;
pub mod image_ref;
pub mod leftovers;
pub mod logs;
pub mod tree_size;
