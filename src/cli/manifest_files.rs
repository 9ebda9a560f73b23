//! The manifests `-f FILE|DIR|-` names (`apply`, `delete`): stdin, one file, or every
//! `*.json`, `*.yaml` and `*.yml` file of a directory in name order, the others named
//! on stderr as skipped. Each read stops past the model's size limit, so a huge file is
//! refused without being read whole.

use super::CliError;
use crate::model::manifests::is_manifest_name;
use crate::model::MAX_MANIFEST_BYTES;
use std::io::Read;
use std::path::Path;

/// The manifests named by `-f`: stdin, one file, or the manifest files of a directory.
pub fn read(src: &str) -> Result<Vec<(String, Vec<u8>)>, CliError> {
    if src == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_MANIFEST_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::failed(format!("reading stdin: {e}")))?;
        return Ok(vec![("-".into(), bytes)]);
    }
    let path = Path::new(src);
    if path.is_dir() {
        let files = dir_manifests(path)?;
        if files.is_empty() {
            return Err(CliError::usage(format!(
                "{src}: no *.json, *.yaml or *.yml files in it"
            )));
        }
        return files.iter().map(|p| read_file(p)).collect();
    }
    Ok(vec![read_file(path)?])
}

/// The manifest files of `dir` in name order; every other entry but dotfiles is named
/// on stderr as skipped, so nothing is left out unnoticed.
fn dir_manifests(dir: &Path) -> Result<Vec<std::path::PathBuf>, CliError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| CliError::usage(format!("{}: {e}", dir.display())))?;
    let mut files = Vec::new();
    for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if is_manifest_name(&name) && p.is_file() {
            files.push(p);
        } else {
            eprintln!(
                "warning: skipping {}: not a *.json, *.yaml or *.yml file",
                p.display()
            );
        }
    }
    files.sort();
    Ok(files)
}

/// Reads one manifest, refusing files over the model's size limit without reading them
/// whole.
fn read_file(path: &Path) -> Result<(String, Vec<u8>), CliError> {
    let source = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| CliError::usage(format!("{source}: {e}")))?;
    let mut bytes = Vec::new();
    f.take(MAX_MANIFEST_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::usage(format!("{source}: {e}")))?;
    Ok((source, bytes))
}
