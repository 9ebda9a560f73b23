//! The flat-file store: desired objects and status files, written atomically.
