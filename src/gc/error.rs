//! Why one removal or rotation of a GC pass failed: what it was doing and the cause
//! (the runtime's error, with its gRPC code, or the system's). The pass logs it, notes
//! it in its report and goes on; the next pass tries again.

use crate::cri::CriError;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A failed step of a GC pass.
#[derive(Debug)]
pub enum GcError {
    /// A CRI call failed.
    Cri {
        /// What the pass was doing (empty when the call says it all).
        doing: String,
        /// The runtime's error.
        source: CriError,
    },
    /// A file operation failed.
    Io {
        /// What the pass was doing, naming the file.
        doing: String,
        /// The system's error.
        source: io::Error,
    },
    /// A log path the runtime gave that cannot be rotated, and why.
    LogPath(PathBuf, &'static str),
}

impl GcError {
    /// A failed CRI call, while `doing` (empty: no words needed).
    pub fn cri(doing: impl Into<String>, source: CriError) -> GcError {
        GcError::Cri {
            doing: doing.into(),
            source,
        }
    }

    /// A failed file operation, while `doing`.
    pub fn io(doing: impl Into<String>, source: io::Error) -> GcError {
        GcError::Io {
            doing: doing.into(),
            source,
        }
    }

    /// A failed file operation on `path`.
    pub fn at(path: &Path, source: io::Error) -> GcError {
        GcError::io(path.display().to_string(), source)
    }
}

impl fmt::Display for GcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (doing, source): (&str, &dyn fmt::Display) = match self {
            GcError::Cri { doing, source } => (doing, source),
            GcError::Io { doing, source } => (doing, source),
            GcError::LogPath(path, why) => return write!(f, "{}: {why}", path.display()),
        };
        if doing.is_empty() {
            source.fmt(f)
        } else {
            write!(f, "{doing}: {source}")
        }
    }
}

impl std::error::Error for GcError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GcError::Cri { source, .. } => Some(source),
            GcError::Io { source, .. } => Some(source),
            GcError::LogPath(..) => None,
        }
    }
}
