//! tmpfs mounts on volume directories, as kubelet's empty-dir plugin makes them, in the
//! agent's mount namespace (which containerd shares: the container's bind mount of the
//! directory then sees the tmpfs), before any container of the pod starts. Nothing on
//! them is written to flash. Pod removal, and the leftovers sweep after an agent
//! restart, unmount them before the directory goes; after a reboot they are simply gone
//! and the next sync mounts fresh ones.
//!
//! - `emptyDir.medium: Memory` (`podsDir/UID/volumes/kubernetes.io~empty-dir/NAME`):
//!   `sizeLimit` becomes the `size=` option; without it the kernel's default applies
//!   (half of RAM). `nosuid,nodev`: a scratch volume needs neither.
//! - secret, projected and downwardAPI volumes (`.../kubernetes.io~{secret,projected,
//!   downward-api}/NAME`), so secret data and tokens never rest on flash:
//!   `nosuid,nodev,noexec`, `mode=0700` for a secret (0755 for the others: non-root
//!   containers read their token), and a size from [`secret_size`]: twice the
//!   page-rounded bytes of the volume's files (an update writes the new files beside
//!   the old ones before switching) plus 64 KiB, grown by a remount when an update
//!   needs more. The data itself is bounded already (a manifest is at most 1 MiB); the
//!   size only keeps the mount from holding more than that.

use rustix::mount::{MountFlags, UnmountFlags};
use std::ffi::CString;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The emptyDir plugin's directory under a pod's directory.
pub const EMPTY_DIR_PLUGIN: &str = "kubernetes.io~empty-dir";
/// The secret plugin's directory under a pod's directory.
pub const SECRET_PLUGIN: &str = "kubernetes.io~secret";
/// The projected plugin's.
pub const PROJECTED_PLUGIN: &str = "kubernetes.io~projected";
/// The downwardAPI plugin's.
pub const DOWNWARD_API_PLUGIN: &str = "kubernetes.io~downward-api";
/// Every plugin directory whose volumes may be tmpfs mounts.
const TMPFS_PLUGINS: [&str; 4] = [
    EMPTY_DIR_PLUGIN,
    SECRET_PLUGIN,
    PROJECTED_PLUGIN,
    DOWNWARD_API_PLUGIN,
];

/// tmpfs accounts file data in whole pages.
const PAGE: u64 = 4096;
/// Room for the directories of a secret volume and a small margin.
const SECRET_SLACK: u64 = 64 * 1024;

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
    mount(
        dir,
        MountFlags::NOSUID | MountFlags::NODEV,
        &options(size_limit),
    )?;
    Ok(true)
}

/// The tmpfs size of a secret (projected, downwardAPI) volume holding files of these
/// sizes (see the module doc).
pub fn secret_size(file_sizes: impl Iterator<Item = usize>) -> u64 {
    let pages: u64 = file_sizes.map(|n| (n as u64).div_ceil(PAGE) * PAGE).sum();
    2 * pages + SECRET_SLACK
}

/// Mounts the tmpfs of a secret (projected, downwardAPI) volume, `size` bytes, its
/// root `mode`, on `dir` (an empty directory) unless one is there; a mounted one smaller
/// than `size` is grown by a remount. True when it mounted one.
pub fn ensure_sized(dir: &Path, size: u64, mode: u32) -> io::Result<bool> {
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    if !is_mount_point(dir)? {
        mount(dir, flags, &format!("size={size},mode={mode:o}"))?;
        return Ok(true);
    }
    let st = rustix::fs::statvfs(dir)?;
    if st.f_blocks.saturating_mul(st.f_frsize) < size {
        let data = CString::new(format!("size={size}")).map_err(io::Error::other)?;
        rustix::mount::mount_remount(dir, flags, data.as_c_str())?;
    }
    Ok(false)
}

fn mount(dir: &Path, flags: MountFlags, options: &str) -> io::Result<()> {
    let data = CString::new(options).map_err(io::Error::other)?;
    rustix::mount::mount("tmpfs", dir, "tmpfs", flags, Some(data.as_c_str()))?;
    Ok(())
}

/// Unmounts every mount on a memory emptyDir, secret, projected or downwardAPI volume
/// directory of the pod directory `pod_dir` (`pod_dir/volumes/PLUGIN/*`); a busy one
/// is detached (the kernel frees it when its last user goes). Returns the directories
/// unmounted.
pub fn unmount_volumes(pod_dir: &Path) -> io::Result<Vec<std::path::PathBuf>> {
    let mut done = Vec::new();
    for plugin in TMPFS_PLUGINS {
        let root = pod_dir.join("volumes").join(plugin);
        let entries = match std::fs::read_dir(&root) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let dir = entry?.path();
            if !is_mount_point(&dir)? {
                continue;
            }
            match rustix::mount::unmount(&dir, UnmountFlags::NOFOLLOW) {
                Err(rustix::io::Errno::BUSY) => {
                    rustix::mount::unmount(&dir, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW)?
                }
                r => r?,
            }
            done.push(dir);
        }
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
        assert_eq!(unmount_volumes(&d).unwrap(), std::slice::from_ref(&vol));
        assert!(!is_mount_point(&vol).unwrap());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn secret_size_counts_whole_pages_twice() {
        assert_eq!(secret_size([].into_iter()), 64 * 1024);
        assert_eq!(
            secret_size([1, 4096, 4097].into_iter()),
            2 * 4 * 4096 + 64 * 1024
        );
    }

    /// Needs the right to mount (root, as the agent); skipped without it.
    #[test]
    fn secret_tmpfs_is_private_noexec_sized_and_grows() {
        let d = std::env::temp_dir().join(format!("tinylet-tmpfs-s-{}", std::process::id()));
        let vol = d.join("volumes").join(SECRET_PLUGIN).join("s");
        std::fs::create_dir_all(&vol).unwrap();
        match ensure_sized(&vol, 128 * 1024, 0o700) {
            Ok(true) => {}
            Err(e) if e.raw_os_error() == Some(1) => {
                eprintln!("skipped: cannot mount here ({e})");
                std::fs::remove_dir_all(&d).unwrap();
                return;
            }
            r => panic!("mounting: {r:?}"),
        }
        let st = rustix::fs::statvfs(&vol).unwrap();
        assert_eq!(st.f_blocks * st.f_frsize, 128 * 1024);
        let flags = st.f_flag;
        use rustix::fs::StatVfsMountFlags as F;
        assert!(
            flags.contains(F::NOSUID | F::NODEV | F::NOEXEC),
            "{flags:?}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&vol).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o700);
        std::fs::write(vol.join("k"), b"v").unwrap();
        assert!(
            !ensure_sized(&vol, 64 * 1024, 0o700).unwrap(),
            "never shrunk"
        );
        assert!(!ensure_sized(&vol, 256 * 1024, 0o700).unwrap());
        let st = rustix::fs::statvfs(&vol).unwrap();
        assert_eq!(st.f_blocks * st.f_frsize, 256 * 1024, "grown");
        assert_eq!(std::fs::read(vol.join("k")).unwrap(), b"v", "content kept");
        assert_eq!(unmount_volumes(&d).unwrap(), std::slice::from_ref(&vol));
        assert!(!vol.join("k").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn plain_directories_are_not_mount_points() {
        let d = std::env::temp_dir().join(format!("tinylet-tmpfs-{}", std::process::id()));
        std::fs::create_dir_all(d.join("volumes").join(EMPTY_DIR_PLUGIN).join("v")).unwrap();
        assert!(!is_mount_point(&d).unwrap());
        assert_eq!(
            unmount_volumes(&d).unwrap(),
            Vec::<std::path::PathBuf>::new()
        );
        assert!(unmount_volumes(&d.join("missing")).unwrap().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
