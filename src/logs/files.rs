//! Which files hold a container's log, and in what order.
//!
//! kubelet's layout: `ROOT/NS_NAME_UID/CONTAINER/N.log`, one file per container instance,
//! `N` the restart count. Log rotation renames the live file to `N.log.<YYYYMMDD-HHMMSS>`
//! (see `gc::logs`); names sort in time order. Files ending `.tmp` (an interrupted
//! kubelet compression) and `.gz` (we do not compress, and cannot read gzip) are ignored.

use std::io;
use std::path::{Path, PathBuf};

/// What a file name in a container's log directory is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogName<'a> {
    /// `N.log`: the live file of instance `N`.
    Live(u32),
    /// `N.log.SUFFIX`: a rotated file of instance `N`.
    Rotated(u32, &'a str),
}

/// Classifies a file name; `None` for anything that is not a readable log file.
pub fn classify(name: &str) -> Option<LogName<'_>> {
    let (n, rest) = name.split_once(".log")?;
    let n: u32 = n.parse().ok()?;
    if rest.is_empty() {
        return Some(LogName::Live(n));
    }
    let suffix = rest.strip_prefix('.')?;
    if suffix.is_empty() || suffix.ends_with(".tmp") || suffix.ends_with(".gz") {
        return None;
    }
    Some(LogName::Rotated(n, suffix))
}

/// Restart counts that have at least one log file in `dir`, ascending.
pub fn instances(dir: &Path) -> io::Result<Vec<u32>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let n = match name.to_str().and_then(classify) {
            Some(LogName::Live(n) | LogName::Rotated(n, _)) => n,
            None => continue,
        };
        out.push(n);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The restart count to read: the latest, or with `previous` the one before it; `None`
/// when there is none (a missing directory has none).
pub fn pick_instance(dir: &Path, previous: bool) -> io::Result<Option<u32>> {
    let instances = match instances(dir) {
        Ok(v) => v,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    let picked = if previous {
        instances
            .len()
            .checked_sub(2)
            .and_then(|i| instances.get(i))
    } else {
        instances.last()
    };
    Ok(picked.copied())
}

/// Whether a restart newer than `n` has started writing (ends following `n`).
pub fn newer_instance(dir: &Path, n: u32) -> bool {
    instances(dir).is_ok_and(|v| v.last().is_some_and(|&m| m > n))
}

/// The files of instance `n` in reading order: rotated ones oldest first, then the live
/// `N.log` (listed even when absent: between a rotation's rename and the runtime
/// reopening the file it briefly does not exist).
pub fn instance_files(dir: &Path, n: u32) -> io::Result<Vec<PathBuf>> {
    let mut rotated = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        if let Some(LogName::Rotated(m, _)) = name.to_str().and_then(classify) {
            if m == n {
                rotated.push(name);
            }
        }
    }
    rotated.sort_unstable();
    let mut files: Vec<PathBuf> = rotated.into_iter().map(|f| dir.join(f)).collect();
    files.push(dir.join(format!("{n}.log")));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(classify("0.log"), Some(LogName::Live(0)));
        assert_eq!(
            classify("12.log.20240501-100000"),
            Some(LogName::Rotated(12, "20240501-100000"))
        );
        for bad in [
            "x.log",
            "1.log.",
            "1.log.x.gz",
            "1.log.x.tmp",
            "1.txt",
            "-1.log",
            "1.logx",
        ] {
            assert_eq!(classify(bad), None, "{bad}");
        }
    }

    #[test]
    fn lists_instances_and_files_in_order() {
        let dir = std::env::temp_dir().join(format!("tinylet-logfiles-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for f in [
            "0.log",
            "1.log.20240501-100005",
            "1.log.20240501-090000",
            "1.log",
            "1.log.20240501-080000.gz",
            "3.log.20240501-100000",
            "junk",
        ] {
            std::fs::write(dir.join(f), b"").unwrap();
        }
        assert_eq!(instances(&dir).unwrap(), [0, 1, 3]);
        let names: Vec<_> = instance_files(&dir, 1)
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["1.log.20240501-090000", "1.log.20240501-100005", "1.log"]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
