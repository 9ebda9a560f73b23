//! `spec.securityContext.fsGroup` applied to a pod's volumes, as kubelet applies it, so
//! a container running as a non-root user reads its secrets and configMaps and writes
//! its emptyDirs through the group (the runtime adds `fsGroup` to its groups).
//!
//! kubelet's rule: every file and directory of the volume gets the group `fsGroup`;
//! files gain group read (0440) on read-only volumes (secret, configMap, projected,
//! downwardAPI) and group read-write (0660) on writable ones (emptyDir); directories
//! also gain group search (0110) and the set-group-ID bit, so what a container creates
//! later inherits the group.
//!
//! Here the computed volumes get it while they are written (the atomic writer owns
//! every file it makes, so a steady state writes nothing), and an emptyDir only at its
//! root: everything below is written by the pod, and walking a tree a hostile pod can
//! change (kubelet walks it on every mount) buys nothing the set-group-ID root does not
//! already give to new files. Changes are made only when the owner or mode differs:
//! no metadata write to flash per sync.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Group read, added to files of read-only volumes.
pub const READ_ONLY_FILE_BITS: u32 = 0o440;
/// Group read-write, added to the files of writable volumes.
pub const WRITABLE_FILE_BITS: u32 = 0o660;
/// What a directory gains besides its files' bits: group search and set-group-ID.
const DIR_BITS: u32 = 0o2110;

/// The volume group of a pod: `fsGroup` when it is set and fits a gid.
pub fn fs_group(pod: &crate::model::pod::Pod) -> Option<u32> {
    let g = pod.spec.security_context.as_ref()?.fs_group?;
    u32::try_from(g).ok()
}

/// The mode of a file written for a volume with `group` (`file_bits` as above).
pub fn file_mode(mode: u32, group: Option<u32>, file_bits: u32) -> u32 {
    match group {
        Some(_) => mode | file_bits,
        None => mode,
    }
}

/// The mode of a directory of a volume with `group`.
pub fn dir_mode(mode: u32, group: Option<u32>, file_bits: u32) -> u32 {
    match group {
        Some(_) => mode | file_bits | DIR_BITS,
        None => mode,
    }
}

/// Gives the agent-owned directory `path` the group `group` (when set) and exactly
/// `mode`, touching nothing that is already so. Never follows a link at `path`.
pub fn set_dir(path: &Path, group: Option<u32>, mode: u32) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory",
            path.display()
        )));
    }
    if let Some(g) = group.filter(|g| *g != meta.gid()) {
        std::os::unix::fs::lchown(path, None, Some(g))?;
    }
    // chown clears set-group-ID on some file systems: read the mode after it.
    let now = fs::symlink_metadata(path)?.mode() & 0o7777;
    if now != mode {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Gives the directory `path`, which a pod may write into, the group `group` and
/// `mode` once: only while its group is another one, so a mode the pod set later on
/// its own directory stays. Nothing without a group.
pub fn claim_dir(path: &Path, group: Option<u32>, mode: u32) -> io::Result<()> {
    let Some(g) = group else { return Ok(()) };
    if fs::symlink_metadata(path)?.gid() == g {
        return Ok(());
    }
    set_dir(path, group, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_gain_group_bits_only_with_a_group() {
        assert_eq!(file_mode(0o400, None, READ_ONLY_FILE_BITS), 0o400);
        assert_eq!(file_mode(0o400, Some(7), READ_ONLY_FILE_BITS), 0o440);
        assert_eq!(file_mode(0o644, Some(7), WRITABLE_FILE_BITS), 0o664);
        assert_eq!(dir_mode(0o755, None, READ_ONLY_FILE_BITS), 0o755);
        assert_eq!(dir_mode(0o755, Some(7), READ_ONLY_FILE_BITS), 0o2755);
        assert_eq!(dir_mode(0o777, Some(7), WRITABLE_FILE_BITS), 0o2777);
        assert_eq!(dir_mode(0o700, Some(7), READ_ONLY_FILE_BITS), 0o2750);
    }

    #[test]
    fn set_dir_changes_only_what_differs_and_refuses_links() {
        let t = std::env::temp_dir().join(format!("tinylet-own-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        fs::create_dir_all(t.join("d")).unwrap();
        set_dir(&t.join("d"), None, 0o750).unwrap();
        let meta = fs::metadata(t.join("d")).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o750);
        let ctime = (meta.ctime(), meta.ctime_nsec());
        set_dir(&t.join("d"), Some(meta.gid()), 0o750).unwrap();
        let again = fs::metadata(t.join("d")).unwrap();
        assert_eq!(
            (again.ctime(), again.ctime_nsec()),
            ctime,
            "nothing rewritten"
        );
        std::os::unix::fs::symlink(t.join("d"), t.join("l")).unwrap();
        assert!(set_dir(&t.join("l"), None, 0o700).is_err());
        assert_eq!(fs::metadata(t.join("d")).unwrap().mode() & 0o7777, 0o750);
        // Claimed once: a later mode of the pod's own stays.
        claim_dir(&t.join("d"), None, 0o777).unwrap();
        assert_eq!(fs::metadata(t.join("d")).unwrap().mode() & 0o7777, 0o750);
        claim_dir(&t.join("d"), Some(meta.gid()), 0o777).unwrap();
        assert_eq!(fs::metadata(t.join("d")).unwrap().mode() & 0o7777, 0o750);
        claim_dir(&t.join("d"), Some(4242), 0o2777).unwrap();
        let m = fs::metadata(t.join("d")).unwrap();
        assert_eq!((m.gid(), m.mode() & 0o7777), (4242, 0o2777));
        fs::remove_dir_all(&t).unwrap();
    }
}
