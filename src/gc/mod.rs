//! Garbage collection bounded by size: images, dead containers, container logs.
