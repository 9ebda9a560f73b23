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
//!
//! [`Watch::poll`] also says *which* directories changed (by their index in the list
//! given to [`Watch::new`]), so the agent can tell a pod change from a configMap or
//! secret change and wake only the workers that need it.
//!
//! One directory may be watched for its files' content as well
//! ([`Watch::with_files`]: the status directory, whose files the agent repairs when
//! someone else changes them): in-place writes (`IN_MODIFY`) count there too, and the
//! names of the changed files are kept for [`Watch::take_files`] (at most
//! [`MAX_NAMES`]; beyond that, or after a queue overflow, in fallback mode and on the
//! first poll, the answer is "every file"). The mtime fallback sees only files created,
//! renamed or deleted there, not a file rewritten in place.

use super::atomic::is_temp;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use std::collections::BTreeSet;
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::time::SystemTime;

/// The most file names kept between two polls; more count as "every file".
pub const MAX_NAMES: usize = 256;

/// Which of the watched directories changed: bit `i` is the directory at index `i` of
/// the list given to [`Watch::new`] (directories past 63 share bit 63).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Changed(u64);

impl Changed {
    /// Every directory (first poll, overflow, read error: look at everything).
    pub const ALL: Changed = Changed(u64::MAX);

    fn bit(index: usize) -> u64 {
        1 << index.min(63)
    }

    /// Whether anything changed.
    pub fn any(self) -> bool {
        self.0 != 0
    }

    /// Whether directory `index` changed.
    pub fn dir(self, index: usize) -> bool {
        self.0 & Self::bit(index) != 0
    }

    fn mark(&mut self, index: usize) {
        self.0 |= Self::bit(index);
    }
}

/// Watches a set of directories for changes to their entries.
pub struct Watch {
    /// Every directory given, missing ones included, so indices stay stable.
    dirs: Vec<PathBuf>,
    inotify: Option<OwnedFd>,
    /// The inotify watch descriptor of each directory (`None`: missing, not watched).
    wds: Vec<Option<i32>>,
    /// Fallback state: each directory's last seen mtime.
    mtimes: Vec<Option<SystemTime>>,
    /// True until the first poll: the first poll always reports a change.
    fresh: bool,
    /// The directory whose changed file names are kept ([`Watch::with_files`]).
    files_of: Option<usize>,
    /// Its changed files since the last [`Watch::take_files`].
    files: Pending,
}

/// Changed files of the [`Watch::with_files`] directory not yet taken.
#[derive(Debug, PartialEq, Eq)]
enum Pending {
    Nothing,
    Names(BTreeSet<String>),
    /// Unknown which: every file may have changed.
    All,
}

impl Pending {
    fn add(&mut self, name: &str) {
        match self {
            Pending::Nothing => *self = Pending::Names(BTreeSet::from([name.to_string()])),
            Pending::Names(n) if n.len() < MAX_NAMES => {
                n.insert(name.to_string());
            }
            Pending::Names(_) => *self = Pending::All,
            Pending::All => {}
        }
    }

    fn merge(self, other: Pending) -> Pending {
        match (self, other) {
            (Pending::Nothing, x) | (x, Pending::Nothing) => x,
            (Pending::Names(mut a), Pending::Names(b)) if a.len() + b.len() <= MAX_NAMES => {
                a.extend(b);
                Pending::Names(a)
            }
            _ => Pending::All,
        }
    }
}

impl Watch {
    /// Watches `dirs`; directories that do not exist are skipped (they never change).
    pub fn new(dirs: Vec<PathBuf>) -> Watch {
        Self::build(dirs, None)
    }

    /// Watches `dirs`, and the files of `dirs[files_of]` for content changes too (see
    /// the module doc and [`Watch::take_files`]).
    pub fn with_files(dirs: Vec<PathBuf>, files_of: usize) -> Watch {
        Self::build(dirs, Some(files_of))
    }

    fn build(dirs: Vec<PathBuf>, files_of: Option<usize>) -> Watch {
        let mut wds = vec![None; dirs.len()];
        let inotify = match Self::init_inotify(&dirs, files_of, &mut wds) {
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
            wds,
            mtimes,
            fresh: true,
            files_of,
            files: Pending::Nothing,
        }
    }

    fn init_inotify(
        dirs: &[PathBuf],
        files_of: Option<usize>,
        wds: &mut [Option<i32>],
    ) -> rustix::io::Result<OwnedFd> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        let mask = WatchFlags::MOVED_TO
            | WatchFlags::MOVED_FROM
            | WatchFlags::DELETE
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR;
        for (i, (d, wd)) in dirs.iter().zip(wds.iter_mut()).enumerate() {
            let mask = if files_of == Some(i) {
                mask | WatchFlags::MODIFY
            } else {
                mask
            };
            if d.is_dir() {
                *wd = Some(inotify::add_watch(&fd, d, mask)?);
            }
        }
        Ok(fd)
    }

    /// Whether anything changed since the last call (the first call says yes). Never
    /// blocks; errors count as a change, so the caller rereads rather than misses one.
    pub fn changed(&mut self) -> bool {
        self.poll().any()
    }

    /// Which directories changed since the last call (the first call says all). Never
    /// blocks; errors count as a change of every directory.
    pub fn poll(&mut self) -> Changed {
        if std::mem::take(&mut self.fresh) {
            // Consume what is pending, so the next poll starts from now.
            self.poll_now();
            if self.files_of.is_some() {
                self.files = Pending::All;
            }
            return Changed::ALL;
        }
        self.poll_now()
    }

    fn poll_now(&mut self) -> Changed {
        let wd = self.files_of.and_then(|i| *self.wds.get(i)?);
        let mut names = Pending::Nothing;
        let changed = match &self.inotify {
            Some(fd) => drain(fd, &self.wds, wd, &mut names),
            None => self.mtimes_moved(),
        };
        if self.files_of.is_some_and(|i| changed.dir(i)) {
            // Fallback, overflow, read error: which files is unknown.
            if self.inotify.is_none() || changed == Changed::ALL || names == Pending::Nothing {
                names = Pending::All;
            }
            self.files = std::mem::replace(&mut self.files, Pending::Nothing).merge(names);
        }
        changed
    }

    /// The files of the [`Watch::with_files`] directory that changed since the last
    /// call (only [`Watch::poll`] notices them): `Some(names)` (empty: none), or `None`
    /// for "any of them" (see the module doc).
    pub fn take_files(&mut self) -> Option<BTreeSet<String>> {
        match std::mem::replace(&mut self.files, Pending::Nothing) {
            Pending::Nothing => Some(BTreeSet::new()),
            Pending::Names(n) => Some(n),
            Pending::All => None,
        }
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

    fn mtimes_moved(&mut self) -> Changed {
        let mut moved = Changed::default();
        for (i, (dir, last)) in self.dirs.iter().zip(self.mtimes.iter_mut()).enumerate() {
            let now = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
            if now != *last {
                moved.mark(i);
                *last = now;
            }
        }
        moved
    }
}

/// Reads every pending event; marks the directory of each event about a non-temp
/// entry, and every directory when the queue overflowed or reading failed. Names of
/// entries of the directory watched as `files_wd` go to `names`.
fn drain(fd: &OwnedFd, wds: &[Option<i32>], files_wd: Option<i32>, names: &mut Pending) -> Changed {
    let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
    let mut reader = inotify::Reader::new(fd, &mut buf);
    let mut changed = Changed::default();
    loop {
        match reader.next() {
            Ok(ev) => {
                if ev.events().contains(ReadFlags::QUEUE_OVERFLOW) {
                    changed = Changed::ALL;
                    continue;
                }
                let name = ev.file_name().map(|n| n.to_str().unwrap_or(""));
                if name.is_some_and(is_temp) {
                    continue;
                }
                if Some(ev.wd()) == files_wd {
                    match name {
                        Some(n) if !n.is_empty() => names.add(n),
                        // About the directory itself, or a name that is not UTF-8.
                        _ => *names = Pending::All,
                    }
                }
                match wds.iter().position(|w| *w == Some(ev.wd())) {
                    Some(i) => changed.mark(i),
                    // Not one of ours (cannot happen): look at everything.
                    None => changed = Changed::ALL,
                }
            }
            Err(rustix::io::Errno::AGAIN) => return changed,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                log::warn!("reading inotify events: {e}");
                return Changed::ALL;
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

    #[test]
    fn says_which_directory_changed() {
        let d = std::env::temp_dir().join(format!("tinylet-watch-dirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let (a, b) = (d.join("a"), d.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        // The missing directory in the middle keeps its index: b stays index 2.
        let mut w = Watch::new(vec![a.clone(), d.join("missing"), b.clone()]);
        assert_eq!(w.poll(), Changed::ALL, "first poll");
        assert!(!w.poll().any());
        std::fs::write(b.join("x_y.json"), b"{}").unwrap();
        let c = w.poll();
        assert!(c.dir(2) && !c.dir(0) && !c.dir(1), "{c:?}");
        std::fs::write(a.join("x_y.json"), b"{}").unwrap();
        std::fs::write(b.join(".tmp-1-1"), b"x").unwrap();
        let c = w.poll();
        assert!(c.dir(0) && !c.dir(2), "temp files do not count: {c:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn names_the_changed_files_of_the_files_directory_in_place_writes_too() {
        use std::io::Write;
        let d = std::env::temp_dir().join(format!("tinylet-watch-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let (a, st) = (d.join("a"), d.join("status"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&st).unwrap();
        std::fs::write(st.join("x_y.json"), b"{}").unwrap();
        let mut w = Watch::with_files(vec![a.clone(), st.clone()], 1);
        assert_eq!(w.poll(), Changed::ALL);
        assert_eq!(w.take_files(), None, "first poll: every file");
        assert!(!w.poll().any());
        assert_eq!(w.take_files(), Some(BTreeSet::new()));
        // Rewritten in place, without closing: seen (IN_MODIFY), and named.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(st.join("x_y.json"))
            .unwrap();
        f.write_all(b"garbage").unwrap();
        std::fs::write(st.join(".tmp-1-1"), b"temp files do not count").unwrap();
        std::fs::write(a.join("p_q.json"), b"{}").unwrap();
        let c = w.poll();
        assert!(c.dir(1) && c.dir(0), "{c:?}");
        assert_eq!(
            w.take_files(),
            Some(BTreeSet::from(["x_y.json".to_string()]))
        );
        drop(f);
        std::fs::remove_file(st.join("x_y.json")).unwrap();
        std::fs::write(st.join("z_z.json"), b"{}").unwrap();
        w.poll();
        // Two polls before a take: the names add up.
        std::fs::write(st.join("n_n.json"), b"{}").unwrap();
        w.poll();
        let names: Vec<String> = w.take_files().unwrap().into_iter().collect();
        assert_eq!(names, ["n_n.json", "x_y.json", "z_z.json"]);
        // Plain directories never collect names.
        std::fs::write(a.join("p_q.json"), b"{ }").unwrap();
        assert!(w.poll().dir(0));
        assert_eq!(w.take_files(), Some(BTreeSet::new()));
        // Too many to name: every file.
        for i in 0..=MAX_NAMES {
            std::fs::write(st.join(format!("f_{i}.json")), b"{}").unwrap();
        }
        w.poll();
        assert_eq!(w.take_files(), None);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
