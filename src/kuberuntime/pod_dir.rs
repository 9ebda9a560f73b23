//! A pod's directory on the host, `podsDir/UID`, and its removal: everything the agent
//! mounted in it (subPath and hostPath binds, memory emptyDir and secret tmpfs) is
//! unmounted first, and the directory is removed only when nothing is mounted in it
//! any more (removing through a bind of a hostPath would delete host data).

use super::{beneath, bind, mountinfo, tmpfs};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Opens the directory `podsDir/UID` (made 0755, whatever the umask, when missing),
/// the root everything of the pod is made beneath. `podsDir` itself is the admin's:
/// made (0755) when missing, symlinks in it followed.
pub fn open(pods_dir: &Path, uid: &str) -> io::Result<OwnedFd> {
    crate::store::atomic::ensure_dir(pods_dir, 0o755, false)?;
    let pods = beneath::open_dir(pods_dir)?;
    beneath::make_dirs(pods.as_fd(), Path::new(uid), 0o755)
}

/// Unmounts everything the agent mounts in `pod_dir`: the binds first (one may hold a
/// volume's tmpfs), then the tmpfs volumes. Returns what was unmounted.
pub fn unmount_all(pod_dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut done = bind::unmount_all(pod_dir)?;
    done.extend(tmpfs::unmount_volumes(pod_dir)?);
    Ok(done)
}

/// Unmounts what the agent mounted in `pod_dir`, then removes it, unless something is
/// still mounted in it (an error naming the mount; the leftovers sweep tries again).
/// Returns what was unmounted.
pub fn remove(pod_dir: &Path) -> io::Result<Vec<PathBuf>> {
    let done = unmount_all(pod_dir)?;
    if let Some(m) = mountinfo::mounted_below(pod_dir, &mountinfo::mount_points()?) {
        return Err(io::Error::other(format!(
            "{} is mounted inside it; not removed",
            m.display()
        )));
    }
    match std::fs::remove_dir_all(pod_dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(done),
    }
}
