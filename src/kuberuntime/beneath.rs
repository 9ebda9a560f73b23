//! Paths beneath a trusted directory, resolved without following any symlink: how every
//! path a pod can write is looked up (a subPath inside a volume, a hostPath below its
//! allowed prefix).
//!
//! A pod that can write a directory can plant a symlink in it (`ln -s / esc`) and can
//! swap a component between a check and a use. So such a path is never resolved as a
//! string: it is opened relative to an fd of the trusted root, refusing `..`, absolute
//! paths and every symlink (a trailing one too, and one that would stay inside), and
//! what is used afterwards is the opened fd, never the path again.
//!
//! [`open`] is one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)` (Linux 5.6); where the kernel lacks it (ENOSYS, older OpenWrt
//! kernels; or a seccomp filter refuses it) it is [`walk`]: one `O_PATH | O_NOFOLLOW` open per component, each checked
//! with fstat. `O_PATH` opens never block (not on a FIFO, not on a device) and never
//! open the object for I/O. [`make_dirs`] and [`create_file`] create what is missing the
//! same way, one component at a time, with the exact mode asked for (set through the
//! new object's fd, so the umask does not matter).

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once openat2 answered ENOSYS (the kernel has none) or EPERM (a seccomp filter,
/// e.g. systemd's `SystemCallFilter` of an older systemd that does not know it): walk
/// from then on.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// openat2 answers EAGAIN when a rename or mount raced with the lookup; tries this often.
const OPENAT2_TRIES: usize = 8;

/// Opens a trusted directory (one the admin or the agent named: symlinks in it are
/// followed) as the root to resolve beneath.
pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The type of what `fd` refers to.
pub fn file_type(fd: impl AsFd) -> io::Result<FileType> {
    Ok(FileType::from_raw_mode(rustix::fs::fstat(fd)?.st_mode))
}

/// Opens `rel` beneath `root` as an `O_PATH` fd, following no symlink and never leaving
/// `root`. An empty `rel` is `root` itself.
pub fn open(root: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    if names(rel)?.is_empty() {
        return reopen(root);
    }
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        for _ in 0..OPENAT2_TRIES {
            // No O_NOFOLLOW: with it, a trailing symlink would be opened as the link;
            // without it, RESOLVE_NO_SYMLINKS refuses it (ELOOP).
            let flags = OFlags::PATH | OFlags::CLOEXEC;
            match rustix::fs::openat2(root, rel, flags, Mode::empty(), resolve) {
                Ok(fd) => return not_a_symlink(fd),
                Err(Errno::AGAIN) => continue,
                Err(Errno::NOSYS | Errno::PERM) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    return walk(root, rel);
                }
                Err(e) => return Err(e.into()),
            }
        }
        return Err(Errno::AGAIN.into());
    }
    walk(root, rel)
}

/// [`open`] without openat2: one `O_PATH | O_NOFOLLOW` open per component, relative to
/// the previous one, refusing a symlink anywhere and a non-directory before the end.
pub fn walk(root: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    let names = names(rel)?;
    let mut cur = reopen(root)?;
    for (i, name) in names.iter().enumerate() {
        let fd = rustix::fs::openat(
            &cur,
            *name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let fd = not_a_symlink(fd)?;
        if i + 1 < names.len() && file_type(&fd)? != FileType::Directory {
            return Err(Errno::NOTDIR.into());
        }
        cur = fd;
    }
    Ok(cur)
}

/// Makes the directory `rel` beneath `root`, creating each missing component with
/// exactly `mode`; returns an fd of the last one. A symlink anywhere is refused (ELOOP),
/// as is a component that exists and is not a directory (ENOTDIR).
pub fn make_dirs(root: BorrowedFd<'_>, rel: &Path, mode: u32) -> io::Result<OwnedFd> {
    let mut cur = reopen(root)?;
    for name in names(rel)? {
        cur = make_dir(cur.as_fd(), name, mode)?.0;
    }
    Ok(cur)
}

/// Makes the directory `name` in `dir` with exactly `mode` unless it exists; returns
/// its fd and whether it was created here. Never follows a symlink at `name`.
pub fn make_dir(dir: BorrowedFd<'_>, name: &OsStr, mode: u32) -> io::Result<(OwnedFd, bool)> {
    let created = match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode)) {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(e) => return Err(e.into()),
    };
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    match file_type(&fd)? {
        FileType::Directory => {}
        FileType::Symlink => return Err(Errno::LOOP.into()),
        _ => return Err(Errno::NOTDIR.into()),
    }
    if created {
        // fchmod needs a real open; "." of a directory fd cannot be a symlink.
        let dir = rustix::fs::openat(
            &fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        rustix::fs::fchmod(&dir, Mode::from_raw_mode(mode))?;
    }
    Ok((fd, created))
}

/// Creates the regular file `rel` beneath `root` with exactly `mode`, or opens it when
/// a regular file is there already; its directory must exist. Returns an fd of it and
/// whether it was created here. A symlink anywhere is refused (ELOOP), as is anything
/// but a regular file at `rel`.
pub fn create_file(root: BorrowedFd<'_>, rel: &Path, mode: u32) -> io::Result<(OwnedFd, bool)> {
    let all = names(rel)?;
    let Some((name, parents)) = all.split_last() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty path"));
    };
    let dir = open(root, &parents.iter().collect::<std::path::PathBuf>())?;
    // O_EXCL never follows a symlink: one at `name` is EEXIST, then seen below.
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
    match rustix::fs::openat(
        &dir,
        *name,
        flags | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    ) {
        Ok(fd) => {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
            Ok((fd, true))
        }
        Err(Errno::EXIST) => {
            let fd = open(dir.as_fd(), Path::new(name))?;
            if file_type(&fd)? != FileType::RegularFile {
                return Err(io::Error::other("exists and is not a regular file"));
            }
            Ok((fd, false))
        }
        Err(e) => Err(e.into()),
    }
}

/// What went wrong with a path resolved here, in words for a pod's waiting message.
pub fn describe(e: &io::Error) -> String {
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::LOOP) => {
            "is or passes through a symlink (not followed: a pod may have planted it)".into()
        }
        Some(Errno::XDEV) => "leads outside its root".into(),
        Some(Errno::NOTDIR) => "a component is not a directory".into(),
        Some(Errno::NOENT) => "does not exist".into(),
        _ => e.to_string(),
    }
}

/// Whether `e` says a symlink or a way out was refused (an escape attempt).
pub fn is_escape(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(Errno::from_raw_os_error),
        Some(Errno::LOOP | Errno::XDEV)
    )
}

/// The names of a relative path: `.` skipped; `..`, a root or a prefix refused.
fn names(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{rel:?} must be relative without '..'"),
            )),
        })
        .collect()
}

/// A fresh `O_PATH` fd of the directory `root`.
fn reopen(root: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        root,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// `fd` unless it refers to a symlink (ELOOP then).
fn not_a_symlink(fd: OwnedFd) -> io::Result<OwnedFd> {
    if file_type(&fd)? == FileType::Symlink {
        return Err(Errno::LOOP.into());
    }
    Ok(fd)
}

#[cfg(test)]
mod tests;
