//! Crash-safe file replacement: write a temp file in the same directory, fsync it, rename
//! it over the target, fsync the directory.
//!
//! After a crash at any point the target holds either its old content or its new content,
//! never a mix: the rename is atomic on every POSIX filesystem, and the two fsyncs order
//! the data before the rename and make the rename itself durable. What a crash can leave
//! behind is a temp file; temp names start with [`TEMP_PREFIX`], readers skip them and
//! [`remove_stale_temps`] deletes those whose writer is gone.
//!
//! Temp names are `.tmp-PID-SEQ`: short (so the target may use up to 255 bytes of name),
//! unique per process (a sequence number) and per writer (the pid), and they tell
//! [`remove_stale_temps`] whether their writer might still be running.

use rustix::fs::{Mode, OFlags};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Every temp file's name starts with this; no stored object's name can (names are
/// DNS-1123, which never start with a dot).
pub const TEMP_PREFIX: &str = ".tmp-";

/// Mode of files holding secrets; directories holding them get [`SECRET_DIR_MODE`].
pub const SECRET_FILE_MODE: u32 = 0o600;
/// Mode of every other stored file.
pub const PLAIN_FILE_MODE: u32 = 0o644;
/// Mode of directories holding secrets, and of the state directory when it is created.
pub const SECRET_DIR_MODE: u32 = 0o700;
/// Mode of every other store directory.
pub const PLAIN_DIR_MODE: u32 = 0o755;

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Replaces `dir/name` with `bytes`, durably and atomically; the file gets `mode` (the
/// temp file is created with it, so a secret is never readable by others, not even for
/// a moment). Returns the number of bytes written.
pub fn write_file(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<u64> {
    replace(dir, name, bytes, mode, true)
}

/// Replaces `dir/name` with `bytes` atomically but without fsync: readers see the old
/// or the new content, never a mix, but after a power cut the file may hold the old
/// content, or (on some filesystems) be empty. Only for derived data that the agent
/// rewrites anyway (pod status): it keeps the disk flush off the agent's path.
pub fn replace_file(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<u64> {
    replace(dir, name, bytes, mode, false)
}

/// Temp file, rename; with `durable`, fsync of the file before and of `dir` after.
fn replace(dir: &Path, name: &str, bytes: &[u8], mode: u32, durable: bool) -> io::Result<u64> {
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!("{TEMP_PREFIX}{}-{seq}", std::process::id()));
    let result = write_temp(&tmp, bytes, mode, durable)
        .and_then(|()| std::fs::rename(&tmp, dir.join(name)))
        .and_then(|()| if durable { sync_dir(dir) } else { Ok(()) });
    if result.is_err() {
        // Best effort: the temp file may not exist, or may already be renamed.
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| {
        crate::metrics::state_written(bytes.len() as u64);
        bytes.len() as u64
    })
}

/// Creates `path` (which must not exist) with `mode`, writes `bytes`, fsyncs it when
/// `durable`.
fn write_temp(path: &Path, bytes: &[u8], mode: u32, durable: bool) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    f.write_all(bytes)?;
    if durable {
        f.sync_all()?;
    }
    Ok(())
}

/// Removes `dir/name` durably. Returns false when it did not exist.
pub fn remove_file(dir: &Path, name: &str) -> io::Result<bool> {
    match std::fs::remove_file(dir.join(name)) {
        Ok(()) => sync_dir(dir).map(|()| true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Moves `from_dir/from` to `to_dir/to` (same filesystem) and makes both directory
/// entries durable.
pub fn move_file(from_dir: &Path, from: &str, to_dir: &Path, to: &str) -> io::Result<()> {
    std::fs::rename(from_dir.join(from), to_dir.join(to))?;
    sync_dir(to_dir)?;
    sync_dir(from_dir)
}

/// fsyncs a directory, so the renames and unlinks in it survive a power cut.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::fsync(&fd)?;
    Ok(())
}

/// Creates `dir` (and missing parents) if needed and gives it `mode` when it is created
/// here. With `enforce`, an existing directory whose mode differs is changed to `mode`
/// (used for secret directories: they must never be readable by others).
pub fn ensure_dir(dir: &Path, mode: u32, enforce: bool) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other("exists and is not a directory"));
    }
    if enforce && meta.permissions().mode() & 0o7777 != mode {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Whether `name` is one of our temp files (readers skip these).
pub fn is_temp(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

/// Deletes temp files in `dir` left by writers that are gone (a crash or a kill between
/// creating the temp file and renaming it). A temp file of a process that still runs is
/// kept: it may be an `apply` in flight. Returns how many were removed.
pub fn remove_stale_temps(dir: &Path) -> io::Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| is_temp(n)) else {
            continue;
        };
        if writer_alive(name) {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    if removed > 0 {
        sync_dir(dir)?;
    }
    Ok(removed)
}

/// Whether the process that named temp file `name` may still be writing it. Our own
/// process counts as gone: a store opens before it writes anything.
fn writer_alive(name: &str) -> bool {
    let pid = name
        .strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.split('-').next())
        .and_then(|p| p.parse::<i32>().ok())
        .and_then(rustix::process::Pid::from_raw);
    match pid {
        Some(pid) if pid.as_raw_nonzero().get() as u32 != std::process::id() => {
            // EPERM means it exists but belongs to someone else: still alive.
            !matches!(
                rustix::process::test_kill_process(pid),
                Err(rustix::io::Errno::SRCH)
            )
        }
        _ => false,
    }
}

/// The largest file the store reads back by default: every object is at most
/// [`crate::model::MAX_MANIFEST_BYTES`], and nothing it writes is larger.
pub const MAX_FILE_BYTES: usize = crate::model::MAX_MANIFEST_BYTES;

/// Reads a whole file of at most [`MAX_FILE_BYTES`] (never more than that and a byte:
/// see [`super::bounded`]); `Ok(None)` when it does not exist.
pub fn read_optional(path: &Path) -> io::Result<Option<Vec<u8>>> {
    super::bounded::read_optional(path, MAX_FILE_BYTES)
}

/// The JSON `what` in the file at `path` (at most [`MAX_FILE_BYTES`] read);
/// `None` when there is none or it cannot be read or parsed (logged: such files are
/// derived data, shown or rewritten, never acted on).
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Option<T> {
    let bytes = match read_optional(path) {
        Ok(b) => b?,
        Err(e) => {
            log::warn!("{}: {e}", path.display());
            return None;
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            log::warn!("{}: not {what}: {e}", path.display());
            None
        }
    }
}

/// Opens `dir` for locking with [`lock_exclusive`].
pub fn open_dir(dir: &Path) -> io::Result<File> {
    File::open(dir)
}

/// Takes an exclusive advisory lock on `f` (released when `f` is dropped), so two
/// `apply` commands never interleave their read-modify-write of the same object.
/// Locks live in memory only: they cost no flash write.
pub fn lock_exclusive(f: &File) -> io::Result<()> {
    rustix::fs::flock(f, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tinylet-atomic-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn write_replaces_and_leaves_no_temp() {
        let d = scratch("write");
        assert_eq!(write_file(&d, "a.json", b"one", 0o644).unwrap(), 3);
        assert_eq!(write_file(&d, "a.json", b"three", 0o600).unwrap(), 5);
        assert_eq!(std::fs::read(d.join("a.json")).unwrap(), b"three");
        let mode = std::fs::metadata(d.join("a.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.json"]);
        assert!(remove_file(&d, "a.json").unwrap());
        assert!(!remove_file(&d, "a.json").unwrap());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn stale_temps_of_dead_writers_are_removed_live_ones_kept() {
        let d = scratch("stale");
        // pid 0x7ffffffe is far above pid_max: no such process.
        std::fs::write(d.join(".tmp-2147483646-0"), b"x").unwrap();
        std::fs::write(d.join(".tmp-garbage"), b"x").unwrap();
        // pid 1 always exists (EPERM or Ok): its temp file is kept.
        std::fs::write(d.join(".tmp-1-0"), b"x").unwrap();
        std::fs::write(d.join("keep.json"), b"{}").unwrap();
        assert_eq!(remove_stale_temps(&d).unwrap(), 2);
        let mut names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [".tmp-1-0", "keep.json"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn secret_dirs_are_forced_to_0700() {
        let d = scratch("dirs");
        let s = d.join("secrets");
        std::fs::create_dir(&s).unwrap();
        std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_dir(&s, SECRET_DIR_MODE, true).unwrap();
        let mode = std::fs::metadata(&s).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
