//! Read-only manifest directories (`manifestDirs`): objects baked into the firmware.
//!
//! Each `*.json` file (not recursive, dotfiles skipped) holds one Pod, ConfigMap or
//! Secret; the file name is free. Nothing here is ever written: a file that does not
//! parse is logged once (again only if the file changes) and skipped. When two files
//! hold the same object, the first wins (directories in config order, files in name
//! order) and the other is logged once.
//!
//! Objects without `metadata.uid` get a uid derived from namespace and name, and
//! without `creationTimestamp` the file's modification time, so both are stable across
//! reboots without a write.

use super::layout::Kind;
use super::uid::derived_uid;
use crate::model::{parse_object, Object};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Key of an object: kind, namespace, name.
pub type Key = (Kind, String, String);

/// The manifest directories and an index of what they hold.
pub struct Firmware {
    dirs: Vec<PathBuf>,
    index: BTreeMap<Key, PathBuf>,
    /// Problems already logged, with the file's mtime then, so each is logged once.
    reported: HashSet<(PathBuf, Option<SystemTime>)>,
}

impl Firmware {
    /// The firmware manifests in `dirs`.
    pub fn new(dirs: Vec<PathBuf>) -> Firmware {
        Firmware {
            dirs,
            index: BTreeMap::new(),
            reported: HashSet::new(),
        }
    }

    /// The directories read.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Reads every manifest and rebuilds the index; returns the valid objects with the
    /// file each came from, in key order.
    pub fn scan(&mut self) -> Vec<(Object, PathBuf)> {
        let mut found: BTreeMap<Key, (Object, PathBuf)> = BTreeMap::new();
        for dir in self.dirs.clone() {
            for path in manifest_files(&dir) {
                let obj = match load(&path) {
                    Ok(o) => o,
                    Err(msg) => {
                        self.report(&path, || log::error!("{msg}; skipped (read-only)"));
                        continue;
                    }
                };
                let key = key_of(&obj);
                if let Some((_, first)) = found.get(&key) {
                    let first = first.clone();
                    self.report(&path, || {
                        log::warn!(
                            "{}: {} {}/{} is also in {}, which wins; skipped",
                            path.display(),
                            key.0,
                            key.1,
                            key.2,
                            first.display()
                        )
                    });
                    continue;
                }
                found.insert(key, (obj, path));
            }
        }
        self.index = found
            .iter()
            .map(|(k, (_, p))| (k.clone(), p.clone()))
            .collect();
        found.into_values().collect()
    }

    /// The firmware copy of one object, with its file, looked up in the index of the
    /// last [`Firmware::scan`]. A file that changed since is rescanned once.
    pub fn get(&mut self, kind: Kind, ns: &str, name: &str) -> Option<(Object, PathBuf)> {
        let key = (kind, ns.to_string(), name.to_string());
        let path = self.index.get(&key)?.clone();
        match load(&path) {
            Ok(obj) if key_of(&obj) == key => Some((obj, path)),
            // Changed under us (a firmware update while running): rebuild the index.
            _ => self.scan().into_iter().find(|(o, _)| key_of(o) == key),
        }
    }

    /// Logs a problem with `path` unless it was logged for this version of the file.
    fn report(&mut self, path: &Path, log: impl FnOnce()) {
        let mtime = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if self.reported.insert((path.to_path_buf(), mtime)) {
            log();
        }
    }
}

fn key_of(obj: &Object) -> Key {
    (
        Kind::of(obj),
        obj.namespace().to_string(),
        obj.name().to_string(),
    )
}

/// The `*.json` files of `dir` in name order; a missing directory has none.
fn manifest_files(dir: &Path) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            log::error!("manifest directory {}: {e}", dir.display());
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.') && name.ends_with(".json")
        })
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Why a firmware manifest cannot be used.
#[derive(Debug)]
enum LoadError {
    /// It cannot be read (or is too large).
    Read(PathBuf, std::io::Error),
    /// The model refused it (its messages name the file).
    Invalid(crate::model::ModelError),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Read(path, e) => write!(f, "{}: {e}", path.display()),
            LoadError::Invalid(e) => f.write_str(&e.messages.join("; ")),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Read(_, e) => Some(e),
            LoadError::Invalid(e) => Some(e),
        }
    }
}

/// Parses one manifest and fills in the stable uid and creation time.
fn load(path: &Path) -> Result<Object, LoadError> {
    let source = path.display().to_string();
    let bytes = super::bounded::read(path, crate::model::MAX_MANIFEST_BYTES)
        .map_err(|e| LoadError::Read(path.into(), e))?;
    let mut obj = parse_object(&source, &bytes).map_err(LoadError::Invalid)?;
    let (ns, name) = (obj.namespace().to_string(), obj.name().to_string());
    let kind = obj.kind();
    let meta = obj.meta_mut();
    if meta.uid.is_empty() {
        meta.uid = derived_uid(kind, &ns, &name);
    }
    if meta.creation_timestamp.is_none() {
        let mtime = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        meta.creation_timestamp = Some(crate::model::time::format_rfc3339(mtime));
    }
    Ok(obj)
}
