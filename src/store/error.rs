//! What can go wrong in the store, with enough context to act on.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// An error of the pod cache and status files.
#[derive(Debug)]
pub enum StoreError {
    /// A file or directory could not be read or written.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        err: io::Error,
    },
    /// The object cannot be stored: a bad name or a manifest the model refused.
    Invalid(String),
    /// The object exists only in a read-only manifest directory.
    ReadOnly {
        /// The object.
        what: String,
        /// The manifest file that holds it.
        file: PathBuf,
    },
    /// No such object.
    NotFound(String),
    /// The object is the cluster's (the uplink's cache): change it with kubectl.
    Cluster(String),
}

impl StoreError {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: &Path, err: io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            err,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { path, err } => write!(f, "{}: {err}", path.display()),
            StoreError::Invalid(msg) => f.write_str(msg),
            StoreError::ReadOnly { what, file } => write!(
                f,
                "{what} comes from the read-only manifest file {}; it cannot be deleted \
                 here (remove it from the firmware image, or apply an override)",
                file.display()
            ),
            StoreError::NotFound(what) => write!(f, "{what} not found"),
            StoreError::Cluster(what) => write!(
                f,
                "{what} is managed by the cluster this node has joined: delete it there \
                 with kubectl"
            ),
        }
    }
}

impl std::error::Error for StoreError {}

/// Adds the path to an I/O result.
pub(crate) trait IoContext<T> {
    fn at(self, path: &Path) -> Result<T, StoreError>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|e| StoreError::io(path, e))
    }
}
