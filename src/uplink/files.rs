//! Reading the files a kubeconfig names: bounded (never more than `limit` bytes are
//! read, so `/dev/zero` or a huge file cannot exhaust memory), regular files only
//! (opened non-blocking, so a FIFO cannot hang the agent), and, for secrets (private
//! keys, token files, a kubeconfig that embeds one), not readable by group or others.
//! The mode is checked on the opened file, not the path, so a file swapped between the
//! check and the read is still the one checked.

use super::error::SetupError;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
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

/// Reads at most `limit` bytes of a regular file; more is an error, as is a secret
/// file with any group or other read permission.
pub fn read_bounded(path: &Path, limit: usize, secrecy: Secrecy) -> Result<Vec<u8>, SetupError> {
    let io = |source| SetupError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::options()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(SetupError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    check_mode(path, meta.mode(), secrecy)?;
    let mut bytes = Vec::with_capacity((meta.len() as usize).min(limit) + 1);
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() > limit {
        return Err(SetupError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(bytes)
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
