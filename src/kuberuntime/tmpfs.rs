//! tmpfs for `emptyDir.medium: Memory`, as kubelet's empty-dir plugin does it: the
//! volume directory `podsDir/UID/volumes/kubernetes.io~empty-dir/NAME` gets a tmpfs
//! mounted on it (in the agent's mount namespace, which containerd shares: the
//! container's bind mount of the directory then sees the tmpfs) before any container of
//! the pod starts. `sizeLimit` becomes the `size=` option; without it the kernel's
//! default applies (half of RAM). `nosuid,nodev` are added: a scratch volume needs
//! neither. Nothing is written to flash. Pod removal, and the leftovers sweep after an
//! agent restart, unmount it before the directory goes; after a reboot it is simply
//! gone and the next sync mounts a fresh one.

use rustix::mount::{MountFlags, UnmountFlags};
use std::ffi::CString;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The emptyDir plugin's directory under a pod's directory.
pub const EMPTY_DIR_PLUGIN: &str = "kubernetes.io~empty-dir";

/// The mount options for a size limit in bytes (none or 0: the kernel's default).
pub fn options(size_limit: Option<i64>) -> String {
    match size_limit {
        Some(n) if n > 0 => format!("size={n}"),
        _ => String::new(),
    }
}

/// Whether something is mounted on `dir` (its device differs from its parent's).
pub fn is_mount_point(dir: &Path) -> io::Result<bool> {
    let parent = dir.parent().unwrap_or(Path::new("/"));
    Ok(std::fs::metadata(dir)?.dev() != std::fs::metadata(parent)?.dev())
}

/// Mounts a tmpfs on `dir` unless something is mounted there already. True when it
/// mounted one.
pub fn ensure(dir: &Path, size_limit: Option<i64>) -> io::Result<bool> {
    if is_mount_point(dir)? {
        return Ok(false);
    }
    let data = CString::new(options(size_limit)).map_err(io::Error::other)?;
    rustix::mount::mount(
        "tmpfs",
        dir,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(data.as_c_str()),
    )?;
    Ok(true)
}

/// Unmounts every mount on an emptyDir volume directory of the pod directory `pod_dir`
/// (`pod_dir/volumes/kubernetes.io~empty-dir/*`); a busy one is detached (the kernel
/// frees it when its last user goes). Returns the directories unmounted.
pub fn unmount_empty_dirs(pod_dir: &Path) -> io::Result<Vec<std::path::PathBuf>> {
    let root = pod_dir.join("volumes").join(EMPTY_DIR_PLUGIN);
    let entries = match std::fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut done = Vec::new();
    for entry in entries {
        let dir = entry?.path();
        if !is_mount_point(&dir)? {
            continue;
        }
        match rustix::mount::unmount(&dir, UnmountFlags::empty()) {
            Err(rustix::io::Errno::BUSY) => rustix::mount::unmount(&dir, UnmountFlags::DETACH)?,
            r => r?,
        }
        done.push(dir);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_option() {
        assert_eq!(options(None), "");
        assert_eq!(options(Some(0)), "");
        assert_eq!(options(Some(16 << 20)), "size=16777216");
    }

    /// Needs the right to mount (root, as the agent); skipped without it.
    #[test]
    fn mounts_once_with_its_size_and_unmounts() {
        let d = std::env::temp_dir().join(format!("tinylet-tmpfs-m-{}", std::process::id()));
        let vol = d.join("volumes").join(EMPTY_DIR_PLUGIN).join("m");
        std::fs::create_dir_all(&vol).unwrap();
        match ensure(&vol, Some(2 << 20)) {
            Ok(true) => {}
            Err(e) if e.raw_os_error() == Some(1) => {
                eprintln!("skipped: cannot mount here ({e})");
                std::fs::remove_dir_all(&d).unwrap();
                return;
            }
            r => panic!("mounting: {r:?}"),
        }
        assert!(is_mount_point(&vol).unwrap());
        assert!(!ensure(&vol, Some(2 << 20)).unwrap(), "already mounted");
        let st = rustix::fs::statvfs(&vol).unwrap();
        assert_eq!(st.f_blocks * st.f_frsize, 2 << 20);
        assert_eq!(unmount_empty_dirs(&d).unwrap(), std::slice::from_ref(&vol));
        assert!(!is_mount_point(&vol).unwrap());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn plain_directories_are_not_mount_points() {
        let d = std::env::temp_dir().join(format!("tinylet-tmpfs-{}", std::process::id()));
        std::fs::create_dir_all(d.join("volumes").join(EMPTY_DIR_PLUGIN).join("v")).unwrap();
        assert!(!is_mount_point(&d).unwrap());
        assert_eq!(
            unmount_empty_dirs(&d).unwrap(),
            Vec::<std::path::PathBuf>::new()
        );
        assert!(unmount_empty_dirs(&d.join("missing")).unwrap().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
