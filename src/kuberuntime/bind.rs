//! Bind mounts that hand containerd exactly the object the agent checked.
//!
//! A subPath, and every hostPath, is opened with [`super::beneath`] (no symlink
//! followed). containerd cannot be given that fd: CRI takes a host path, and containerd
//! resolves the symlinks of host paths itself (EvalSymlinks), so even `/proc/PID/fd/N`
//! would become the path the object has *now*, looked up again. Instead the agent
//! bind-mounts `/proc/self/fd/N` (mount(2) follows that magic link to the very object
//! that was opened: whatever a pod swapped since is not what gets mounted) onto a target
//! only the agent writes, `podsDir/UID/volume-subpaths/VOLUME/CONTAINER/INDEX`
//! (kubelet's layout; INDEX is the mount's place in `volumeMounts`; a directory or an
//! empty file, as the source is), and gives containerd the target. The bind is
//! recursive, as containerd's own bind of a host path is, so a hostPath keeps the mounts
//! below it.
//!
//! Each container creation binds afresh (a stale bind at the target is unmounted first);
//! pod removal and the leftovers sweep unmount them all ([`unmount_all`]).

use super::beneath;
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;
use rustix::mount::UnmountFlags;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};

/// The directory of a pod's bind targets, in the pod's directory.
pub const DIR: &str = "volume-subpaths";
/// Mode of the target directories (root's; containers see only what is mounted).
const DIR_MODE: u32 = 0o750;
/// Mode of an empty target file.
const FILE_MODE: u32 = 0o640;
/// Most mounts stacked on one target that are unmounted before giving up.
const MAX_STACK: usize = 16;

/// Where a mount of a container is bound.
pub struct Target<'a> {
    /// The agent's pods directory.
    pub pods_dir: &'a Path,
    /// The pod's UID.
    pub uid: &'a str,
    /// The volume's name.
    pub volume: &'a str,
    /// The container's name.
    pub container: &'a str,
    /// The mount's index in the container's `volumeMounts`.
    pub index: usize,
}

/// Binds what `source` refers to onto `t`'s target (made or remade to match its type)
/// and returns the target's path, for containerd.
pub fn bind(source: BorrowedFd<'_>, t: &Target<'_>) -> io::Result<PathBuf> {
    let is_dir = beneath::file_type(source)? == FileType::Directory;
    let pod = super::pod_dir::open(t.pods_dir, t.uid)?;
    let rel: PathBuf = [DIR, t.volume, t.container].iter().collect();
    let parent = beneath::make_dirs(pod.as_fd(), &rel, DIR_MODE)?;
    let name = t.index.to_string();
    let target = t.pods_dir.join(t.uid).join(&rel).join(&name);
    unmount(&target)?;
    fresh(parent.as_fd(), &name, is_dir)?;
    let proc_path = format!("/proc/self/fd/{}", source.as_raw_fd());
    rustix::mount::mount_bind_recursive(proc_path.as_str(), &target)?;
    Ok(target)
}

/// Unmounts whatever is mounted on `target` (stacked mounts too; detached, so a busy
/// one goes when its last user does). True when something was.
pub fn unmount(target: &Path) -> io::Result<bool> {
    let mut any = false;
    for _ in 0..MAX_STACK {
        match rustix::mount::unmount(target, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW) {
            Ok(()) => any = true,
            // Not a mount point (or not there): done.
            Err(Errno::INVAL | Errno::NOENT) => return Ok(any),
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other(format!(
        "{}: still mounted after {MAX_STACK} unmounts",
        target.display()
    )))
}

/// Unmounts every bind target of the pod directory `pod_dir`; returns those unmounted.
pub fn unmount_all(pod_dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut done = Vec::new();
    for volume in subdirs(&pod_dir.join(DIR))? {
        for container in subdirs(&volume)? {
            for entry in std::fs::read_dir(&container)? {
                let target = entry?.path();
                if unmount(&target)? {
                    done.push(target);
                }
            }
        }
    }
    Ok(done)
}

/// The directories in `dir` (none when it does not exist); symlinks are not followed.
fn subdirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            out.push(entry.path());
        }
    }
    Ok(out)
}

/// Makes `parent/name` an (unmounted) directory or empty regular file, keeping one of
/// the right type that is there.
fn fresh(parent: BorrowedFd<'_>, name: &str, is_dir: bool) -> io::Result<()> {
    match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            let t = FileType::from_raw_mode(st.st_mode);
            let wanted = if is_dir {
                FileType::Directory
            } else {
                FileType::RegularFile
            };
            if t == wanted {
                return Ok(());
            }
            let flags = if t == FileType::Directory {
                AtFlags::REMOVEDIR
            } else {
                AtFlags::empty()
            };
            rustix::fs::unlinkat(parent, name, flags)?;
        }
        Err(Errno::NOENT) => {}
        Err(e) => return Err(e.into()),
    }
    if is_dir {
        beneath::make_dir(parent, name.as_ref(), DIR_MODE)?;
    } else {
        beneath::create_file(parent, Path::new(name), FILE_MODE)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Needs the right to mount (root, as the agent); skipped without it.
    #[test]
    fn binds_the_opened_object_even_after_a_swap_and_rebinds() {
        let base = std::env::temp_dir().join(format!("tinylet-bind-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (pods, vol, out) = (base.join("pods"), base.join("vol"), base.join("out"));
        std::fs::create_dir_all(vol.join("d")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(vol.join("d/mine"), b"volume").unwrap();
        std::fs::write(vol.join("f"), b"file").unwrap();
        std::fs::write(out.join("host"), b"host").unwrap();
        std::fs::create_dir_all(&pods).unwrap();
        let root = beneath::open_dir(&vol).unwrap();
        let d = beneath::open(root.as_fd(), Path::new("d")).unwrap();
        // The pod swaps the checked directory for a symlink out before the bind.
        std::fs::rename(vol.join("d"), vol.join("d.old")).unwrap();
        symlink(&out, vol.join("d")).unwrap();
        let t = Target {
            pods_dir: &pods,
            uid: "u",
            volume: "v",
            container: "c",
            index: 0,
        };
        let target = match bind(d.as_fd(), &t) {
            Ok(p) => p,
            Err(e) if e.raw_os_error() == Some(1) => {
                eprintln!("skipped: cannot mount here ({e})");
                std::fs::remove_dir_all(&base).unwrap();
                return;
            }
            Err(e) => panic!("binding: {e}"),
        };
        assert_eq!(target, pods.join("u/volume-subpaths/v/c/0"));
        assert_eq!(std::fs::read(target.join("mine")).unwrap(), b"volume");
        assert!(
            !target.join("host").exists(),
            "the swapped-in symlink was not mounted"
        );
        // Rebinding the same target to a file: the old bind goes, the target becomes a file.
        let f = beneath::open(root.as_fd(), Path::new("f")).unwrap();
        let again = bind(f.as_fd(), &t).unwrap();
        assert_eq!(std::fs::read(&again).unwrap(), b"file");
        assert!(!unmount_all(&pods.join("u")).unwrap().is_empty());
        assert_eq!(
            std::fs::read(&again).unwrap(),
            b"",
            "an empty target file again"
        );
        assert!(unmount_all(&pods.join("u")).unwrap().is_empty());
        assert!(unmount_all(&pods.join("none")).unwrap().is_empty());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
