//! kubelet's eviction signals and how tinylet reads them, from cheap reads only (no CRI
//! call): `memory.available` (MemAvailable of /proc/meminfo), `nodefs.*` (statvfs of the
//! pods' directory), `imagefs.*` (statvfs of the image filesystem the runtime named in
//! ImageFsInfo, see [`crate::agent::image_fs`]) and `pid.available` (pid capacity less
//! the tasks /proc/loadavg counts). Each reading is (available, capacity).

use super::capacity::NodeResources;
use crate::config::Config;
use std::path::Path;

/// One eviction signal (kubelet's names, in [`crate::config::SIGNALS`]'s order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `memory.available`.
    MemoryAvailable,
    /// `nodefs.available`.
    NodefsAvailable,
    /// `nodefs.inodesFree`.
    NodefsInodesFree,
    /// `imagefs.available`.
    ImagefsAvailable,
    /// `imagefs.inodesFree`.
    ImagefsInodesFree,
    /// `pid.available`.
    PidAvailable,
}

/// The node condition a signal feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `MemoryPressure`.
    Memory,
    /// `DiskPressure`.
    Disk,
    /// `PIDPressure`.
    Pid,
}

impl Signal {
    /// Every signal, in index order.
    pub const ALL: [Signal; 6] = [
        Signal::MemoryAvailable,
        Signal::NodefsAvailable,
        Signal::NodefsInodesFree,
        Signal::ImagefsAvailable,
        Signal::ImagefsInodesFree,
        Signal::PidAvailable,
    ];

    /// kubelet's name of the signal.
    pub fn name(self) -> &'static str {
        crate::config::SIGNALS[self as usize]
    }

    /// The condition the signal feeds.
    pub fn resource(self) -> Resource {
        match self {
            Signal::MemoryAvailable => Resource::Memory,
            Signal::PidAvailable => Resource::Pid,
            _ => Resource::Disk,
        }
    }
}

/// (available, capacity) of each signal, by [`Signal`] index; `None` where it cannot be
/// read (a filesystem without an inode count, such as UBIFS or JFFS2, has no inode
/// signal).
pub type Readings = [Option<(i64, i64)>; 6];

/// Reads every signal. `image_fs` is a directory on the image filesystem.
pub fn read(cfg: &Config, capacity: &NodeResources, image_fs: &Path) -> Readings {
    let meminfo =
        crate::bounded::read_to_string(Path::new("/proc/meminfo"), 64 << 10).unwrap_or_default();
    let loadavg =
        crate::bounded::read_to_string(Path::new("/proc/loadavg"), 4 << 10).unwrap_or_default();
    let nodefs_dir = if cfg.pods_dir.exists() {
        &cfg.pods_dir
    } else {
        &cfg.state_dir
    };
    let nodefs = fs_stats(nodefs_dir);
    let imagefs = fs_stats(image_fs);
    [
        mem_available(&meminfo).map(|m| (m, capacity.memory)),
        nodefs.map(|f| f.bytes),
        nodefs.and_then(|f| f.inodes),
        imagefs.map(|f| f.bytes),
        imagefs.and_then(|f| f.inodes),
        tasks(&loadavg).map(|t| (capacity.pids - t, capacity.pids)),
    ]
}

/// MemAvailable in bytes.
fn mem_available(meminfo: &str) -> Option<i64> {
    let kb = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kb: i64 = kb.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// The tasks (processes and threads) that exist: /proc/loadavg's `running/total`.
fn tasks(loadavg: &str) -> Option<i64> {
    loadavg.split(' ').nth(3)?.split('/').nth(1)?.parse().ok()
}

/// A filesystem's (available, total) bytes and inodes.
#[derive(Debug, Clone, Copy)]
struct FsStats {
    bytes: (i64, i64),
    inodes: Option<(i64, i64)>,
}

/// statvfs of the filesystem holding `dir`: bytes available to unprivileged users (as
/// kubelet's cAdvisor counts them) and free inodes; no inode reading when the
/// filesystem reports no inode count.
fn fs_stats(dir: &Path) -> Option<FsStats> {
    let st = rustix::fs::statvfs(dir).ok()?;
    let int = |n: u64| i64::try_from(n).ok();
    let size = |blocks: u64| int(blocks.saturating_mul(st.f_frsize));
    let inodes = match st.f_files {
        0 => None,
        files => Some((int(st.f_ffree)?, int(files)?)),
    };
    Some(FsStats {
        bytes: (size(st.f_bavail)?, size(st.f_blocks)?),
        inodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_parse() {
        assert_eq!(
            mem_available("MemTotal: 100 kB\nMemAvailable:   2048 kB\n"),
            Some(2 << 20)
        );
        assert_eq!(tasks("0.00 0.01 0.05 1/123 4567\n"), Some(123));
        assert_eq!(tasks("garbage"), None);
        for (i, s) in Signal::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
            assert_eq!(s.name(), crate::config::SIGNALS[i]);
        }
    }

    #[test]
    fn reads_this_machine() {
        let cap = NodeResources {
            cpu_milli: 1000,
            memory: 1 << 40,
            pids: 1 << 22,
            ephemeral_storage: 0,
        };
        let cfg = Config::parse(r#"{"podsDir":"/tmp"}"#).unwrap();
        let r = read(&cfg, &cap, Path::new("/"));
        let (avail, total) = r[Signal::NodefsAvailable as usize].unwrap();
        assert!(avail >= 0 && total > 0 && avail <= total, "{r:?}");
        assert!(r[Signal::MemoryAvailable as usize].is_some(), "{r:?}");
        assert!(r[Signal::PidAvailable as usize].is_some(), "{r:?}");
        assert!(r[Signal::ImagefsAvailable as usize].is_some(), "{r:?}");
    }
}
