//! What the agent bench reads about a process from /proc, and the state directory
//! snapshot that tells whether the agent wrote anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Linux reports utime/stime in USER_HZ ticks, which is 100 on every architecture the
/// project targets (the kernel ABI fixes it independently of CONFIG_HZ).
const USER_HZ: u64 = 100;

/// A `kB` line of /proc/PID/status (VmRSS, VmHWM), in KiB.
pub fn vm_kib(pid: u32, key: &str) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("{path}: no {key} line with a kB value"))
}

/// User + system CPU time of the whole process (all threads), from /proc/PID/stat.
pub fn cpu_time(pid: u32) -> Result<Duration, String> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    // The command name (field 2) is in parentheses and may hold spaces: split after it.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| format!("{path}: no ')' after the command name"))?;
    // rest starts at field 3 (state); utime and stime are fields 14 and 15.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize, name: &str| -> Result<u64, String> {
        fields
            .get(i)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{path}: field {name} is not a number"))
    };
    let ticks = tick(11, "utime")? + tick(12, "stime")?;
    Ok(Duration::from_millis(ticks * 1000 / USER_HZ))
}

/// The process's threads: (count, names).
pub fn threads(pid: u32) -> Result<(usize, Vec<String>), String> {
    let dir = format!("/proc/{pid}/task");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{dir}: {e}"))?;
    let mut names = Vec::new();
    for e in entries.flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        names.push(comm.trim().to_string());
    }
    names.sort();
    Ok((names.len(), names))
}

/// Every regular file under a directory: path -> (size, mtime).
pub type DirSnapshot = BTreeMap<PathBuf, (u64, SystemTime)>;

/// Snapshots `dir` recursively (files that vanish meanwhile are skipped).
pub fn snapshot(dir: &Path) -> DirSnapshot {
    let mut out = DirSnapshot::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                todo.push(e.path());
            } else if let Ok(mtime) = meta.modified() {
                out.insert(e.path(), (meta.len(), mtime));
            }
        }
    }
    out
}

/// Files created, changed (size or mtime) or removed between two snapshots, and the
/// bytes of the created and changed files.
pub fn writes(before: &DirSnapshot, after: &DirSnapshot) -> (Vec<PathBuf>, u64) {
    let mut changed = Vec::new();
    let mut bytes = 0;
    for (path, now) in after {
        if before.get(path) != Some(now) {
            changed.push(path.clone());
            bytes += now.0;
        }
    }
    changed.extend(before.keys().filter(|p| !after.contains_key(*p)).cloned());
    (changed, bytes)
}
