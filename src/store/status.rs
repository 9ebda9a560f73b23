//! Pod status files, `STATE/status/NS_NAME.json`: the agent's last observed v1
//! PodStatus for each pod, kept apart from desired state and read by `tinylet get`.
//!
//! Written only when the content changes: the agent may report the same status every
//! sync, and every write wears flash. The digest of the last bytes written (or found on
//! disk) is remembered per pod, so an unchanged status costs one serialization and a
//! hash - no file read, no write. After a restart the first report of each pod reads
//! its file once and writes only if it differs.
//!
//! Status is derived from the runtime, so it is replaced atomically but not fsync'd:
//! only desired state needs to survive a power cut. A status file lost or emptied by
//! one is read as absent (logged) and written again on the pod's next sync.

use super::digest::fnv1a128;
use super::error::{IoContext, StoreError};
use super::layout;
use super::{atomic, bounded};
use crate::model::PodStatus;
use std::collections::HashMap;
use std::path::PathBuf;

/// The status directory and what is known to be in it.
pub struct StatusFiles {
    dir: PathBuf,
    /// File name -> digest of its current content.
    known: HashMap<String, u128>,
}

impl StatusFiles {
    pub fn new(dir: PathBuf) -> StatusFiles {
        StatusFiles {
            dir,
            known: HashMap::new(),
        }
    }

    /// Records `status` for pod `ns/name`; returns the bytes written (0 when the file
    /// already held exactly this status).
    pub fn write(&mut self, ns: &str, name: &str, status: &PodStatus) -> Result<u64, StoreError> {
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        let mut bytes = serde_json::to_vec(status)
            .map_err(|e| StoreError::Invalid(format!("status of {ns}/{name}: {e}")))?;
        bytes.push(b'\n');
        let digest = fnv1a128(&bytes);
        if self.known.get(&file) == Some(&digest) {
            return Ok(0);
        }
        let path = self.dir.join(&file);
        // Compared with at most as many bytes as ours (and one): anything larger, or
        // not a regular file, is not this status and is replaced below.
        let on_disk = match bounded::read_optional(&path, bytes.len()) {
            Err(e) if bounded::is_refused(&e) => None,
            other => other.at(&path)?,
        };
        if on_disk.as_deref() == Some(&bytes[..]) {
            self.known.insert(file, digest);
            return Ok(0);
        }
        // Derived data, rewritten on the next change: no fsync (see atomic::replace_file).
        let n =
            atomic::replace_file(&self.dir, &file, &bytes, atomic::PLAIN_FILE_MODE).at(&path)?;
        self.known.insert(file, digest);
        Ok(n)
    }

    /// The last status written for `ns/name`; `None` when there is none or it does not
    /// parse (logged; the agent rewrites it on its next sync).
    pub fn read(&self, ns: &str, name: &str) -> Option<PodStatus> {
        let file = layout::file_name(ns, name).ok()?;
        let path = self.dir.join(file);
        let bytes = match atomic::read_optional(&path) {
            Ok(b) => b?,
            Err(e) => {
                log::warn!("{}: {e}", path.display());
                return None;
            }
        };
        match serde_json::from_slice(&bytes) {
            Ok(s) => Some(s),
            Err(e) => {
                log::warn!("{}: not a pod status: {e}", path.display());
                None
            }
        }
    }

    /// Removes the status of `ns/name`; false when there was none.
    pub fn remove(&mut self, ns: &str, name: &str) -> Result<bool, StoreError> {
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        self.known.remove(&file);
        atomic::remove_file(&self.dir, &file).at(&self.dir.join(&file))
    }

    /// `(namespace, name)` of every status file, so the agent can drop those of pods
    /// that no longer exist.
    pub fn names(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir).at(&self.dir)? {
            let entry = entry.at(&self.dir)?;
            if let Some((ns, name)) = entry.file_name().to_str().and_then(layout::parse_file_name) {
                out.push((ns.to_string(), name.to_string()));
            }
        }
        out.sort();
        Ok(out)
    }
}
