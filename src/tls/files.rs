//! Reading the files a kubeconfig names: bounded (never more than `limit` bytes are
//! read, so `/dev/zero` or a huge file cannot exhaust memory), regular files only
//! (opened non-blocking, so a FIFO cannot hang the agent), and, for secrets (private
//! keys, token files, a kubeconfig that embeds one), not readable by group or others.
//! The mode is checked on the opened file, not the path, so a file swapped between the
//! check and the read is still the one checked.

use super::error::SetupError;
use crate::store::bounded;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Largest kubeconfig, certificate, CA bundle or key file read.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// Largest token file read.
pub const MAX_TOKEN_BYTES: usize = 64 << 10;

/// Whether the file holds a secret, which must not be readable by group or others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secrecy {
    /// Anyone may read it (a certificate).
    Public,
    /// Only its owner may read it (a key, a token).
    Secret,
}

/// Reads at most `limit` bytes of a regular file (the store's bounded reader); more is
/// an error, as is a secret file with any group or other read permission.
pub fn read_bounded(path: &Path, limit: usize, secrecy: Secrecy) -> Result<Vec<u8>, SetupError> {
    let path_buf = || path.to_path_buf();
    let io = |source: std::io::Error| match source.kind() {
        ErrorKind::InvalidInput => SetupError::NotRegular { path: path_buf() },
        ErrorKind::FileTooLarge => SetupError::TooLarge {
            path: path_buf(),
            limit,
        },
        _ => SetupError::Io {
            path: path_buf(),
            source,
        },
    };
    let (file, meta) = bounded::open_regular(path).map_err(io)?;
    check_mode(path, meta.mode(), secrecy)?;
    bounded::read_open(file, limit).map_err(io)
}

/// Refuses a secret file that group or others may read.
pub fn check_mode(path: &Path, mode: u32, secrecy: Secrecy) -> Result<(), SetupError> {
    if secrecy == Secrecy::Secret && mode & 0o044 != 0 {
        return Err(SetupError::NotPrivate {
            path: path.to_path_buf(),
            mode: mode & 0o7777,
        });
    }
    Ok(())
}
