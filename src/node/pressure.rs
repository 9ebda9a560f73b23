//! Node pressure as kubelet's eviction manager sees it, from cheap reads only (no CRI
//! call): `memory.available` (MemAvailable of /proc/meminfo), `nodefs.available`
//! (statvfs of the pods' directory) and `pid.available` (pid capacity less the tasks
//! /proc/loadavg counts), each against its `evictionHard` threshold. Run on the
//! housekeeping's 10 s tick, kubelet's own eviction interval.

use super::capacity::Resources;
use crate::config::{eviction_threshold, Config};

/// Which resources are short, and how much memory is left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pressure {
    /// `memory.available` is below its threshold.
    pub memory: bool,
    /// `nodefs.available` is below its threshold.
    pub disk: bool,
    /// `pid.available` is below its threshold.
    pub pid: bool,
    /// Bytes of memory available (for eviction messages).
    pub memory_available: i64,
    /// The memory threshold in bytes.
    pub memory_threshold: i64,
}

/// Reads the signals and compares them with the config's thresholds.
pub fn observe(cfg: &Config, capacity: &Resources) -> Pressure {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let dir = if cfg.pods_dir.exists() {
        &cfg.pods_dir
    } else {
        &cfg.state_dir
    };
    let below = |signal: &str, available: Option<i64>, capacity: i64| {
        let t = eviction_threshold(cfg, signal)?.amount(capacity);
        Some((available? < t, t))
    };
    let mem = mem_available(&meminfo);
    let (memory, memory_threshold) =
        below("memory.available", mem, capacity.memory).unwrap_or((false, 0));
    let disk =
        fs_space(dir).and_then(|(avail, total)| below("nodefs.available", Some(avail), total));
    let tasks = tasks(&loadavg).map(|t| capacity.pids - t);
    let pid = below("pid.available", tasks, capacity.pids);
    Pressure {
        memory,
        disk: disk.is_some_and(|d| d.0),
        pid: pid.is_some_and(|p| p.0),
        memory_available: mem.unwrap_or(0),
        memory_threshold,
    }
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

/// (available, total) bytes of the filesystem holding `dir`.
fn fs_space(dir: &std::path::Path) -> Option<(i64, i64)> {
    let st = rustix::fs::statvfs(dir).ok()?;
    let size = |blocks: u64| i64::try_from(blocks.saturating_mul(st.f_frsize)).ok();
    Some((size(st.f_bavail)?, size(st.f_blocks)?))
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
    }

    #[test]
    fn thresholds_decide() {
        let cap = Resources {
            cpu_milli: 1000,
            memory: 1 << 40,
            pids: 100_000,
        };
        let low =
            Config::parse(r#"{"evictionHard":{"memory.available":"1Ki","pid.available":"1"}}"#)
                .unwrap();
        let p = observe(&low, &cap);
        assert!(!p.memory && !p.pid && !p.disk, "{p:?}");
        let high = Config::parse(
            r#"{"podsDir":"/tmp","evictionHard":{"memory.available":"1Pi","pid.available":"100%","nodefs.available":"100%"}}"#,
        )
        .unwrap();
        let p = observe(&high, &cap);
        assert!(p.memory && p.pid && p.disk, "{p:?}");
        assert_eq!(p.memory_threshold, 1 << 50);
    }
}
