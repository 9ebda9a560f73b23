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
