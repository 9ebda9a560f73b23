//! Moving aside state files that do not parse, so one bad file never stops the others.
//!
//! A bad file goes to `STATE/quarantine/` as `TIMESTAMP-KIND-FILE` (e.g.
//! `20261129T224028Z-pods-default_web.json`), with an error log line naming the file
//! and the reason. At most [`KEEP`] files are kept there (the oldest go first), so a
//! writer that keeps producing bad files cannot fill the flash. The quarantine
//! directory is 0700: it may hold secrets.

use super::atomic;
use super::error::{IoContext, StoreError};
use super::layout::Kind;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// How many quarantined files are kept.
pub const KEEP: usize = 32;

/// Moves `dir/file` (a `kind` object) into `quarantine_dir`, logging `reason`; returns
/// where it went.
pub fn quarantine(
    quarantine_dir: &Path,
    dir: &Path,
    file: &str,
    kind: Kind,
    reason: &str,
) -> Result<PathBuf, StoreError> {
    let stamp: String = crate::model::time::format_rfc3339(SystemTime::now())
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    let base = format!("{stamp}-{}-{file}", kind.dir_name());
    let mut target = base.clone();
    let mut n = 1;
    while quarantine_dir.join(&target).exists() {
        target = format!("{base}.{n}");
        n += 1;
    }
    atomic::move_file(dir, file, quarantine_dir, &target).at(&dir.join(file))?;
    log::error!(
        "{}: {reason}; moved to {}",
        dir.join(file).display(),
        quarantine_dir.join(&target).display()
    );
    trim(quarantine_dir).at(quarantine_dir)?;
    Ok(quarantine_dir.join(target))
}

/// Deletes the oldest quarantined files beyond [`KEEP`] (names start with the time).
fn trim(quarantine_dir: &Path) -> std::io::Result<()> {
    let mut names: Vec<String> = std::fs::read_dir(quarantine_dir)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !atomic::is_temp(n))
        .collect();
    if names.len() <= KEEP {
        return Ok(());
    }
    names.sort();
    for old in &names[..names.len() - KEEP] {
        std::fs::remove_file(quarantine_dir.join(old))?;
    }
    atomic::sync_dir(quarantine_dir)
}

/// Deletes the quarantined files of `kind` (`TIMESTAMP-KIND-FILE`); returns how many. A
/// missing quarantine directory holds none.
pub fn purge(quarantine_dir: &Path, kind: Kind) -> std::io::Result<usize> {
    let entries = match std::fs::read_dir(quarantine_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let prefix = format!("{}-", kind.dir_name());
    let mut removed = 0;
    for entry in entries {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        let of_kind = name
            .split_once('-')
            .is_some_and(|(_, rest)| rest.starts_with(&prefix));
        if of_kind && !atomic::is_temp(name) {
            std::fs::remove_file(quarantine_dir.join(name))?;
            removed += 1;
        }
    }
    if removed > 0 {
        atomic::sync_dir(quarantine_dir)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purge_removes_only_the_kind_asked_for() {
        let root = std::env::temp_dir().join(format!("tinylet-qpurge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (dir, q) = (root.join("secrets"), root.join("quarantine"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&q).unwrap();
        assert_eq!(purge(&root.join("none"), Kind::Secret).unwrap(), 0);
        for file in ["n_s.json", "n_t.json"] {
            std::fs::write(dir.join(file), b"{").unwrap();
            quarantine(&q, &dir, file, Kind::Secret, "bad").unwrap();
        }
        std::fs::write(dir.join("n_p.json"), b"{").unwrap();
        let pod = quarantine(&q, &dir, "n_p.json", Kind::Pod, "bad").unwrap();
        // A configMap named like a secret's file stays: the kind is what counts.
        std::fs::write(dir.join("secrets-x.json"), b"{").unwrap();
        let cm = quarantine(&q, &dir, "secrets-x.json", Kind::ConfigMap, "bad").unwrap();
        assert_eq!(purge(&q, Kind::Secret).unwrap(), 2);
        let mut left: Vec<_> = std::fs::read_dir(&q)
            .unwrap()
            .map(|e| q.join(e.unwrap().file_name()))
            .collect();
        left.sort();
        let mut want = vec![pod, cm];
        want.sort();
        assert_eq!(left, want);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
