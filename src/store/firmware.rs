//! Read-only manifest directories (`manifestDirs`): objects baked into the firmware.
//!
//! Each `*.json`, `*.yaml` or `*.yml` file (not recursive, dotfiles skipped) holds a
//! Pod, ConfigMap or Secret, or several (YAML documents, `kind: List`); the file name is
//! free. Other files are logged once as skipped. Nothing here is ever written: a file that does not
//! parse is logged once (again only if the file changes) and skipped. When two files
//! hold the same object, the first wins (directories in config order, files in name
//! order) and the other is logged once.
//!
//! Objects without `metadata.uid` get a uid derived from namespace and name, and
//! without `creationTimestamp` the file's modification time, so both are stable across
//! reboots without a write.

use super::layout::Kind;
use super::uid::derived_uid;
use crate::model::manifests::{format_of, is_manifest_name, parse_manifests};
use crate::model::Object;
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
    reported: HashSet<(PathBuf, Option<SystemTime>, String)>,
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
            let (files, skipped) = manifest_files(&dir);
            for path in skipped {
                let msg = "not a *.json, *.yaml or *.yml file; skipped";
                self.report(
                    &path,
                    log::Level::Warn,
                    format!("{}: {msg}", path.display()),
                );
            }
            for path in files {
                for obj in load(&path) {
                    match obj {
                        Ok(obj) => self.add(&mut found, obj, &path),
                        Err(msg) => {
                            let msg = format!("{msg}; skipped (read-only)");
                            self.report(&path, log::Level::Error, msg);
                        }
                    }
                }
            }
        }
        self.index = found
            .iter()
            .map(|(k, (_, p))| (k.clone(), p.clone()))
            .collect();
        found.into_values().collect()
    }

    /// Adds `obj` of `path` unless an earlier file holds the same object.
    fn add(&mut self, found: &mut BTreeMap<Key, (Object, PathBuf)>, obj: Object, path: &Path) {
        let key = key_of(&obj);
        let Some((_, first)) = found.get(&key) else {
            found.insert(key, (obj, path.to_path_buf()));
            return;
        };
        let msg = format!(
            "{}: {} {}/{} is also in {}, which wins; skipped",
            path.display(),
            key.0,
            key.1,
            key.2,
            first.display()
        );
        self.report(path, log::Level::Warn, msg);
    }

    /// The firmware copy of one object, with its file, looked up in the index of the
    /// last [`Firmware::scan`]. A file that changed since is rescanned once.
    pub fn get(&mut self, kind: Kind, ns: &str, name: &str) -> Option<(Object, PathBuf)> {
        let key = (kind, ns.to_string(), name.to_string());
        let path = self.index.get(&key)?.clone();
        let found = load(&path).into_iter().flatten().find(|o| key_of(o) == key);
        match found {
            Some(obj) => Some((obj, path)),
            // Changed under us (a firmware update while running): rebuild the index.
            None => self.scan().into_iter().find(|(o, _)| key_of(o) == key),
        }
    }

    /// Logs a problem with `path` unless it was logged for this version of the file.
    fn report(&mut self, path: &Path, level: log::Level, msg: String) {
        let mtime = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if self
            .reported
            .insert((path.to_path_buf(), mtime, msg.clone()))
        {
            log::log!(level, "{msg}");
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

/// The manifest files of `dir` in name order, and the other entries (not dotfiles);
/// a missing directory has none.
fn manifest_files(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Default::default(),
        Err(e) => {
            log::error!("manifest directory {}: {e}", dir.display());
            return Default::default();
        }
    };
    let (mut files, mut skipped) = (Vec::new(), Vec::new());
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = e.path();
        if is_manifest_name(&name) && path.is_file() {
            files.push(path);
        } else {
            skipped.push(path);
        }
    }
    files.sort();
    skipped.sort();
    (files, skipped)
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

/// Parses the objects of one manifest file and fills in their stable uid and creation
/// time.
fn load(path: &Path) -> Vec<Result<Object, LoadError>> {
    let source = path.display().to_string();
    let bytes = match super::bounded::read(path, crate::model::MAX_MANIFEST_BYTES) {
        Ok(b) => b,
        Err(e) => return vec![Err(LoadError::Read(path.into(), e))],
    };
    parse_manifests(&source, &bytes, format_of(&source, &bytes))
        .into_iter()
        .map(|o| o.map(|o| stable(o, path)).map_err(LoadError::Invalid))
        .collect()
}

/// `obj` with a uid and creation time that stay the same across reboots.
fn stable(mut obj: Object, path: &Path) -> Object {
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
    obj
}
