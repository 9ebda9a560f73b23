//! One agent per state directory: `tinylet run` holds an exclusive `flock` on the state
//! directory itself for its whole life, and a second agent on the same directory exits
//! at once naming the holder. Two agents would each take the other's pods for orphans
//! and remove them.
//!
//! The lock is on the directory's own fd, so it writes nothing (no lock file on flash),
//! and the kernel drops it when the holder dies, however it dies (SIGKILL, power loss
//! leaves no lock behind). The CLI commands never take it: `apply`, `get` and `delete`
//! keep working beside the agent (they lock the kind directories for their own short
//! read-modify-write, a different inode). The fd is close-on-exec, so no child process
//! can keep the lock alive after the agent.
//!
//! The holder's pid comes from `/proc/locks` (read only when the lock is refused); a
//! filesystem without `flock` support is logged and the agent runs unguarded rather than
//! not at all.

use super::atomic;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct AgentLock {
    _dir: Option<File>,
}

/// Takes the agent's lock on `state_dir` (created 0700 if missing). The error says the
/// directory is in use and by which process, when that can be found.
pub fn acquire(state_dir: &Path) -> Result<AgentLock, LockError> {
    let show = state_dir.display();
    atomic::ensure_dir(state_dir, atomic::SECRET_DIR_MODE, false)
        .map_err(|e| LockError::Dir(state_dir.into(), e))?;
    let dir = atomic::open_dir(state_dir).map_err(|e| LockError::Dir(state_dir.into(), e))?;
    use rustix::fs::{flock, FlockOperation};
    match flock(&dir, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(AgentLock { _dir: Some(dir) }),
        Err(rustix::io::Errno::WOULDBLOCK) => {
            let holder = dir
                .metadata()
                .ok()
                .and_then(|m| holder_of(m.dev(), m.ino()))
                .map_or_else(
                    || "another process".to_string(),
                    |(pid, comm)| format!("pid {pid} ({comm})"),
                );
            Err(LockError::InUse(state_dir.into(), holder))
        }
        Err(e) => {
            log::warn!(
                "state directory {show}: cannot lock it ({e}); nothing stops a second agent here"
            );
            Ok(AgentLock { _dir: None })
        }
    }
}

/// Why the agent's lock cannot be had.
#[derive(Debug)]
pub enum LockError {
    /// The state directory cannot be made or opened.
    Dir(PathBuf, std::io::Error),
    /// Another process holds the lock (`pid N (comm)`, or "another process").
    InUse(PathBuf, String),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::Dir(dir, e) => write!(f, "state directory {}: {e}", dir.display()),
            LockError::InUse(dir, holder) => write!(
                f,
                "state directory {} is in use by {holder}: only one `tinylet run` may \
                 use a state directory (the operator commands apply, get and delete work \
                 beside it)",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::Dir(_, e) => Some(e),
            LockError::InUse(..) => None,
        }
    }
}

/// The pid and command name of the process holding a `flock` on `file`'s inode.
pub fn holder_of_file(file: &File) -> Option<(u32, String)> {
    let m = file.metadata().ok()?;
    holder_of(m.dev(), m.ino())
}

/// The pid and command name of the process holding a `flock` on the inode `dev`/`ino`,
/// from `/proc/locks`.
fn holder_of(dev: u64, ino: u64) -> Option<(u32, String)> {
    let text = std::fs::read_to_string("/proc/locks").ok()?;
    let pid = flock_holder(&text, dev, ino)?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim_end().to_string())
        .unwrap_or_else(|_| "?".to_string());
    Some((pid, comm))
}

/// Finds the holder of a `FLOCK` on `dev`/`ino` in the text of `/proc/locks`, whose
/// lines read `N: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE START END` (major and minor
/// in hex, inode in decimal); waiters (`N: -> FLOCK ...`) are skipped.
fn flock_holder(text: &str, dev: u64, ino: u64) -> Option<u32> {
    let want = format!(
        "{:02x}:{:02x}:{ino}",
        rustix::fs::major(dev),
        rustix::fs::minor(dev)
    );
    text.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&want.as_str()))
            .then(|| f.get(4)?.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holder_is_read_from_proc_locks_lines() {
        let text = "1: POSIX  ADVISORY  WRITE 77 fe:00:42 0 EOF\n\
                    2: -> FLOCK  ADVISORY  WRITE 99 fe:00:42 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 1234 fe:00:42 0 EOF\n\
                    4: FLOCK  ADVISORY  WRITE 55 fe:00:420 0 EOF\n";
        let dev = rustix::fs::makedev(0xfe, 0);
        assert_eq!(flock_holder(text, dev, 42), Some(1234));
        assert_eq!(flock_holder(text, dev, 420), Some(55));
        assert_eq!(flock_holder(text, dev, 7), None);
    }

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let d = std::env::temp_dir().join(format!("tinylet-agentlock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let first = acquire(&d.join("state")).unwrap();
        // flock locks belong to the open file: a second open in this process conflicts.
        let e = acquire(&d.join("state")).unwrap_err().to_string();
        assert!(e.contains(&d.join("state").display().to_string()), "{e}");
        assert!(
            e.contains(&format!("pid {}", std::process::id())),
            "names the holder: {e}"
        );
        drop(first);
        acquire(&d.join("state")).expect("free again once the first is dropped");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
