//! On-disk leftovers of deleted pods: volume data under `podsDir/UID/` (emptyDir,
//! projected configMap/secret files) and log directories `podLogsDir/NS_NAME_UID/`.
//!
//! A directory is a leftover only when no desired pod has its UID and no sandbox of ours
//! exists for it (a pod being torn down keeps its data until its sandbox is gone). What
//! the agent mounted in a pod directory (subPath/hostPath binds, memory emptyDir and
//! secret tmpfs, left mounted when it restarted) is unmounted first; a directory with
//! anything else mounted at or below it is never removed: deleting through a mount
//! could reach data that is not ours.

use crate::kuberuntime::mountinfo::{self, mount_points};
use crate::kuberuntime::teardown;
use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

/// The pod UID in a log directory name `NS_NAME_UID`. Namespace and name are DNS-1123,
/// so they hold no `_`, but a uid may (`my_pod-1`): split at the first two `_`, never
/// at the last, or a live pod's directory reads as another uid's and is swept.
pub fn log_dir_uid(name: &str) -> Option<&str> {
    let (ns, rest) = name.split_once('_')?;
    let (name, uid) = rest.split_once('_')?;
    Some(uid).filter(|u| !ns.is_empty() && !name.is_empty() && !u.is_empty())
}

/// Whether a directory of pod `uid` may go.
pub fn is_leftover(uid: &str, desired: &HashSet<&str>, sandbox_uids: &HashSet<&str>) -> bool {
    !desired.contains(uid) && !sandbox_uids.contains(uid)
}

/// What a leftover sweep did.
#[derive(Debug, Default)]
pub struct LeftoverReport {
    /// The directories (and mounts) removed.
    pub removed: Vec<PathBuf>,
    /// Bytes freed.
    pub bytes_freed: u64,
    /// Directories that could not be removed (retried next pass), with the reason.
    pub failed: Vec<(PathBuf, String)>,
}

/// Removes leftover pod directories under `pods_dir` (named by UID) and `pod_logs_dir`
/// (named `NS_NAME_UID`). Missing roots are fine (nothing ran yet).
pub fn sweep(
    pods_dir: &Path,
    pod_logs_dir: &Path,
    desired: &HashSet<&str>,
    sandbox_uids: &HashSet<&str>,
) -> LeftoverReport {
    let mut report = LeftoverReport::default();
    let mut victims = Vec::new();
    collect(
        pods_dir,
        |n| Some(n),
        desired,
        sandbox_uids,
        &mut victims,
        &mut report,
    );
    collect(
        pod_logs_dir,
        log_dir_uid,
        desired,
        sandbox_uids,
        &mut victims,
        &mut report,
    );
    if victims.is_empty() {
        return report;
    }
    // Our own mounts (still there after an agent restart) go first.
    for dir in victims.iter().filter(|d| d.starts_with(pods_dir)) {
        match teardown::unmount_all(dir) {
            Ok(done) => done
                .iter()
                .for_each(|d| log::info!("unmounted leftover {}", d.display())),
            Err(e) => log::warn!(
                "unmounting what the agent mounted in {}: {e}",
                dir.display()
            ),
        }
    }
    let mounts = mount_points().unwrap_or_else(|e| {
        log::warn!("/proc/self/mountinfo: {e}; not removing pod directories this pass");
        vec![PathBuf::from("/")]
    });
    for dir in victims {
        if let Some(m) = mountinfo::mounted_below(&dir, &mounts) {
            report
                .failed
                .push((dir, format!("{} is mounted inside it", m.display())));
            continue;
        }
        let size = dir_size(&dir);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {
                report.bytes_freed += size;
                report.removed.push(dir);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => report.failed.push((dir, e.to_string())),
        }
    }
    report
}

/// Adds the leftover directories of `root` to `out`; `uid_of` maps an entry name to its
/// pod UID.
fn collect(
    root: &Path,
    uid_of: impl Fn(&str) -> Option<&str>,
    desired: &HashSet<&str>,
    sandbox_uids: &HashSet<&str>,
    out: &mut Vec<PathBuf>,
    report: &mut LeftoverReport,
) {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return,
        Err(e) => {
            report.failed.push((root.to_path_buf(), e.to_string()));
            return;
        }
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(uid) = name.to_str().and_then(&uid_of) else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && is_leftover(uid, desired, sandbox_uids) {
            out.push(entry.path());
        }
    }
}

/// Total size of the regular files below `dir` (no symlink followed), counted up to
/// [`super::empty_dir_limit::MAX_ENTRIES`] entries: a report, not worth a long pass.
fn dir_size(dir: &Path) -> u64 {
    super::tree_size::measure(dir, super::empty_dir_limit::MAX_ENTRIES).file_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_from_log_dir_name() {
        assert_eq!(log_dir_uid("default_web_1234-abcd"), Some("1234-abcd"));
        assert_eq!(log_dir_uid("default_web_my_pod-1"), Some("my_pod-1"));
        assert_eq!(log_dir_uid("default_web__x_"), Some("_x_"));
        assert_eq!(log_dir_uid("ns_name_"), None);
        assert_eq!(log_dir_uid("nouid_"), None);
        assert_eq!(log_dir_uid("_web_uid"), None);
        assert_eq!(log_dir_uid("plain"), None);
    }

    /// After an agent restart a deleted pod's memory emptyDir is still mounted: the sweep
    /// unmounts it and removes the directory; any other mount keeps a directory.
    /// Needs the right to mount (root, as the agent); skipped without it.
    #[test]
    fn unmounts_leftover_memory_empty_dirs_and_keeps_other_mounts() {
        let root = std::env::temp_dir().join(format!("tinylet-leftmem-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (pods, logs) = (root.join("pods"), root.join("logs"));
        let mem = pods.join("gone/volumes/kubernetes.io~empty-dir/mem");
        let other = pods.join("other/volumes/kubernetes.io~configmap/c");
        for d in [&mem, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        match crate::kuberuntime::tmpfs::ensure(&mem, Some(1 << 20)) {
            Ok(true) => {}
            Err(e) if e.raw_os_error() == Some(1) => {
                eprintln!("skipped: cannot mount here ({e})");
                std::fs::remove_dir_all(&root).unwrap();
                return;
            }
            r => panic!("mounting a tmpfs: {r:?}"),
        }
        crate::kuberuntime::tmpfs::ensure(&other, None).unwrap();
        std::fs::write(mem.join("f"), b"in memory").unwrap();
        let r = sweep(&pods, &logs, &HashSet::new(), &HashSet::new());
        assert_eq!(r.removed, [pods.join("gone")], "{r:?}");
        assert!(!pods.join("gone").exists());
        assert_eq!(r.failed.len(), 1, "{r:?}");
        assert!(other.exists(), "a directory with a foreign mount stays");
        rustix::mount::unmount(&other, rustix::mount::UnmountFlags::empty()).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// After an agent restart a deleted pod's subPath/hostPath binds and secret tmpfs
    /// are still mounted: the sweep unmounts them, removes the pod directory, and what
    /// a bind showed (here a host directory) is untouched.
    /// Needs the right to mount (root, as the agent); skipped without it.
    #[test]
    fn unmounts_leftover_binds_and_secret_tmpfs_never_deleting_through_them() {
        use crate::kuberuntime::{beneath, bind, tmpfs};
        use std::os::fd::AsFd;
        let root = std::env::temp_dir().join(format!("tinylet-leftbind-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (pods, logs, host) = (root.join("pods"), root.join("logs"), root.join("host"));
        std::fs::create_dir_all(&host).unwrap();
        std::fs::write(host.join("keep"), b"host data").unwrap();
        let secret = pods
            .join("gone/volumes")
            .join(tmpfs::SECRET_PLUGIN)
            .join("s");
        std::fs::create_dir_all(&secret).unwrap();
        let src = beneath::open_dir(&host).unwrap();
        let target = bind::Target {
            pods_dir: &pods,
            uid: "gone",
            volume: "h",
            container: "c",
            index: 0,
        };
        match bind::bind(src.as_fd(), &target) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(1) => {
                eprintln!("skipped: cannot mount here ({e})");
                std::fs::remove_dir_all(&root).unwrap();
                return;
            }
            Err(e) => panic!("binding: {e}"),
        }
        tmpfs::ensure_sized(&secret, 1 << 20, 0o700).unwrap();
        let r = sweep(&pods, &logs, &HashSet::new(), &HashSet::new());
        assert_eq!(r.removed, [pods.join("gone")], "{r:?}");
        assert!(r.failed.is_empty(), "{r:?}");
        assert_eq!(std::fs::read(host.join("keep")).unwrap(), b"host data");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn removes_only_dirs_of_pods_neither_desired_nor_with_a_sandbox() {
        let root = std::env::temp_dir().join(format!("tinylet-leftovers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (pods, logs) = (root.join("pods"), root.join("logs"));
        for d in [
            pods.join("gone/volumes/kubernetes.io~empty-dir/data"),
            pods.join("live"),
            pods.join("tearing-down"),
            logs.join("default_web_gone/app"),
            logs.join("default_web_live/app"),
            // A uid with '_' whose tail after the last '_' is no pod's uid: kept.
            logs.join("default_db_my_pod-1/app"),
            logs.join("default_db_tearing-down/db"),
        ] {
            std::fs::create_dir_all(&d).unwrap();
        }
        std::fs::write(
            pods.join("gone/volumes/kubernetes.io~empty-dir/data/f"),
            [0u8; 1000],
        )
        .unwrap();
        std::fs::write(logs.join("default_web_gone/app/0.log"), [0u8; 24]).unwrap();
        std::fs::write(logs.join("stray-file_x_gone"), b"not a dir").unwrap();
        let r = sweep(
            &pods,
            &logs,
            &HashSet::from(["live", "my_pod-1"]),
            &HashSet::from(["tearing-down"]),
        );
        assert!(r.failed.is_empty(), "{:?}", r.failed);
        let mut removed: Vec<_> = r
            .removed
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().to_owned())
            .collect();
        removed.sort();
        assert_eq!(
            removed,
            [
                PathBuf::from("logs/default_web_gone"),
                PathBuf::from("pods/gone")
            ]
        );
        assert_eq!(r.bytes_freed, 1024);
        for kept in [
            "pods/live",
            "pods/tearing-down",
            "logs/default_web_live",
            "logs/default_db_my_pod-1",
            "logs/default_db_tearing-down",
            "logs/stray-file_x_gone",
        ] {
            assert!(root.join(kept).exists(), "{kept}");
        }
        // Missing roots are not an error.
        let r = sweep(
            &root.join("nope"),
            &root.join("nope2"),
            &HashSet::new(),
            &HashSet::new(),
        );
        assert!(r.removed.is_empty() && r.failed.is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
