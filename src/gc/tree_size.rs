//! The size of a directory tree a pod may be writing to (an emptyDir, a deleted pod's
//! directory), measured without following a symlink anywhere.
//!
//! Why through file descriptors: a walk by path re-resolves every parent on each step,
//! so a container that swaps a directory for a link to `/` between two steps would
//! send the agent counting (and spending its thread on) the host's tree. Here each
//! directory is opened relative to its parent's fd with `O_NOFOLLOW`: a swapped-in link
//! fails to open and is skipped. The walk is depth-first, so at most [`MAX_DEPTH`] + 1
//! directories are open at once, and it stops after a given number of entries, so one
//! pass never holds the agent's thread for long.

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use std::path::Path;

/// Deepest directory level entered; deeper entries are not counted.
pub const MAX_DEPTH: usize = 64;

/// What a walk counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TreeSize {
    /// Bytes allocated to every entry (as `du` counts them).
    pub allocated: u64,
    /// Sum of the lengths of the regular files.
    pub file_bytes: u64,
    /// Whether every entry was counted (not cut by the entry or depth bound, no
    /// unreadable directory).
    pub complete: bool,
}

/// Measures the tree below `dir` (whose own path the agent trusts), counting at most
/// `max_entries` entries. A `dir` that cannot be opened counts as empty and incomplete.
pub fn measure(dir: &Path, max_entries: usize) -> TreeSize {
    let mut walk = Walk {
        size: TreeSize {
            complete: true,
            ..TreeSize::default()
        },
        left: max_entries,
    };
    match open_dir(rustix::fs::CWD, dir) {
        Ok(fd) => walk.visit(&fd, 0),
        Err(_) => walk.size.complete = false,
    }
    walk.size
}

struct Walk {
    size: TreeSize,
    /// Entries that may still be counted.
    left: usize,
}

impl Walk {
    fn visit(&mut self, dir: &OwnedFd, depth: usize) {
        let Ok(entries) = Dir::read_from(dir) else {
            self.size.complete = false;
            return;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                self.size.complete = false;
                return;
            };
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            if self.left == 0 {
                self.size.complete = false;
                return;
            }
            self.left -= 1;
            self.entry(dir, name, depth);
        }
    }

    /// Counts one entry of `dir`; enters it when it is a directory.
    fn entry(&mut self, dir: &OwnedFd, name: &std::ffi::CStr, depth: usize) {
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            return; // gone meanwhile
        };
        let blocks = u64::try_from(st.st_blocks).unwrap_or(0);
        self.size.allocated = self
            .size
            .allocated
            .saturating_add(blocks.saturating_mul(512));
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {
                let len = u64::try_from(st.st_size).unwrap_or(0);
                self.size.file_bytes = self.size.file_bytes.saturating_add(len);
            }
            FileType::Directory if depth >= MAX_DEPTH => self.size.complete = false,
            FileType::Directory => match open_dir(dir, name) {
                Ok(sub) => self.visit(&sub, depth + 1),
                // Swapped for a link (ELOOP) or removed since the stat: not ours to count.
                Err(_) => self.size.complete = false,
            },
            _ => {}
        }
    }
}

/// Opens the directory `name` of `at` for reading, refusing a symlink at `name`.
fn open_dir(at: impl AsFd, name: impl rustix::path::Arg) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(at, name, flags, Mode::empty())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("tinylet-tree-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        p
    }

    #[test]
    fn counts_files_and_blocks_and_follows_no_link() {
        let d = scratch("links");
        fs::create_dir_all(d.join("a/b")).unwrap();
        fs::write(d.join("a/b/f"), vec![1u8; 10_000]).unwrap();
        fs::write(d.join("g"), b"xyz").unwrap();
        // Links to a big tree, as a directory and as the tree's root.
        let outside = scratch("outside");
        fs::write(outside.join("big"), vec![1u8; 1 << 20]).unwrap();
        std::os::unix::fs::symlink(&outside, d.join("a/out")).unwrap();
        std::os::unix::fs::symlink(outside.join("big"), d.join("big")).unwrap();
        let t = measure(&d, 100);
        assert_eq!(t.file_bytes, 10_003);
        assert!(t.allocated >= 10_000 && t.allocated < 1 << 20, "{t:?}");
        assert!(t.complete);
        let link = measure(&d.join("a/out"), 100);
        assert_eq!(
            (link.file_bytes, link.complete),
            (0, false),
            "a root that is a link"
        );
        fs::remove_dir_all(&d).unwrap();
        fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn stops_at_the_entry_and_depth_bounds() {
        let d = scratch("bounds");
        for i in 0..10 {
            fs::write(d.join(format!("f{i}")), b"12").unwrap();
        }
        let all = measure(&d, 100);
        assert_eq!((all.file_bytes, all.complete), (20, true));
        let cut = measure(&d, 3);
        assert_eq!((cut.file_bytes, cut.complete), (6, false));
        let mut deep = d.join("deep");
        for _ in 0..=MAX_DEPTH {
            deep = deep.join("d");
        }
        fs::create_dir_all(&deep).unwrap();
        fs::write(deep.join("f"), b"hidden").unwrap();
        let t = measure(&d, 10_000);
        assert_eq!(
            (t.file_bytes, t.complete),
            (20, false),
            "below MAX_DEPTH not counted"
        );
        fs::remove_dir_all(&d).unwrap();
    }
}
