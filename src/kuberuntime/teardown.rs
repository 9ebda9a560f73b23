//! Taking a pod's directory down: everything the agent mounted in it (subPath and
//! hostPath binds, memory emptyDir and secret tmpfs) is unmounted first, and the
//! directory is removed only when nothing is mounted in it any more (removing through a
//! bind of a hostPath would delete host data).

use super::{bind, mountinfo, tmpfs};
use std::io;
use std::path::{Path, PathBuf};

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
