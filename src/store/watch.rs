//! A cheap "did any desired object change?" check for the agent's poll loop.
//!
//! Chosen: one inotify fd watching each desired-object directory and each existing
//! manifest directory for entries moved in or out, deleted, or closed after writing.
//! Temp files are ignored, so an atomic write counts once (its final rename). Cost: one
//! fd, one kernel watch per directory (a few hundred bytes each), and per poll one
//! non-blocking `read` that normally returns `EAGAIN` - no file is opened or stat'ed.
//! The fd can also be handed to the reactor (see [`Watch::fd`]) to wake on change
//! instead of polling.
//!
//! Fallback, when inotify is unavailable (a kernel without `CONFIG_INOTIFY_USER`, or the
//! watch limit reached): the modification times of the watched directories, compared
//! to the last poll. That sees every create, rename and delete (each changes its
//! directory's mtime), but not a file rewritten in place, and on filesystems with
//! one-second timestamps two changes in the same second may be seen as one.
//!
//! A manifest directory that does not exist when the store opens is not watched;
//! firmware directories are fixed at boot.

use super::atomic::is_temp;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::time::SystemTime;

/// Watches a set of directories for changes to their entries.
pub struct Watch {
    dirs: Vec<PathBuf>,
    inotify: Option<OwnedFd>,
    /// Fallback state: each directory's last seen mtime.
    mtimes: Vec<Option<SystemTime>>,
    /// True until the first poll: the first poll always reports a change.
    fresh: bool,
}

impl Watch {
    /// Watches `dirs`; directories that do not exist are skipped.
    pub fn new(dirs: Vec<PathBuf>) -> Watch {
        let dirs: Vec<PathBuf> = dirs.into_iter().filter(|d| d.is_dir()).collect();
        let inotify = match Self::init_inotify(&dirs) {
            Ok(fd) => Some(fd),
            Err(e) => {
                log::warn!(
                    "inotify unavailable ({e}); polling directory mtimes to notice manifest changes"
                );
                None
            }
        };
        let mtimes = vec![None; dirs.len()];
        Watch {
            dirs,
            inotify,
            mtimes,
            fresh: true,
        }
    }

    fn init_inotify(dirs: &[PathBuf]) -> rustix::io::Result<OwnedFd> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        let mask = WatchFlags::MOVED_TO
            | WatchFlags::MOVED_FROM
            | WatchFlags::DELETE
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR;
        for d in dirs {
            inotify::add_watch(&fd, d, mask)?;
        }
        Ok(fd)
    }

    /// Whether anything changed since the last call (the first call says yes). Never
    /// blocks; errors count as a change, so the caller rereads rather than misses one.
    pub fn changed(&mut self) -> bool {
        let mut changed = std::mem::take(&mut self.fresh);
        match &self.inotify {
            Some(fd) => changed |= drain(fd),
            None => changed |= self.mtimes_moved(),
        }
        changed
    }

    /// The inotify fd (readable when a change is pending), for registering with the
    /// reactor; `None` in fallback mode. Call [`Watch::changed`] after it turns readable.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.inotify.as_ref().map(|fd| fd.as_fd())
    }

    /// Whether inotify is in use (false: mtime fallback).
    pub fn uses_inotify(&self) -> bool {
        self.inotify.is_some()
    }

    fn mtimes_moved(&mut self) -> bool {
        let mut moved = false;
        for (dir, last) in self.dirs.iter().zip(self.mtimes.iter_mut()) {
            let now = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
            if now != *last || now.is_none() {
                moved = true;
                *last = now;
            }
        }
        moved
    }
}

/// Reads every pending event; true when one of them is about a non-temp entry, the
/// queue overflowed, or reading failed.
fn drain(fd: &OwnedFd) -> bool {
    let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
    let mut reader = inotify::Reader::new(fd, &mut buf);
    let mut changed = false;
    loop {
        match reader.next() {
            Ok(ev) => {
                let temp = ev
                    .file_name()
                    .and_then(|n| n.to_str().ok())
                    .is_some_and(is_temp);
                let overflow = ev.events().contains(ReadFlags::QUEUE_OVERFLOW);
                changed |= overflow || !temp;
            }
            Err(rustix::io::Errno::AGAIN) => return changed,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                log::warn!("reading inotify events: {e}");
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sees_renames_and_deletes_but_not_temp_files() {
        let d = std::env::temp_dir().join(format!("tinylet-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let mut w = Watch::new(vec![d.clone(), d.join("missing")]);
        assert!(w.uses_inotify());
        assert!(w.changed(), "first poll reports a change");
        assert!(!w.changed());
        std::fs::write(d.join(".tmp-1-1"), b"x").unwrap();
        assert!(!w.changed(), "temp files do not count");
        std::fs::rename(d.join(".tmp-1-1"), d.join("a_b.json")).unwrap();
        assert!(w.changed());
        assert!(!w.changed());
        std::fs::remove_file(d.join("a_b.json")).unwrap();
        assert!(w.changed());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
