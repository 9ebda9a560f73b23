//! Pod status files, `STATE/status/NS_NAME.json`: the agent's last observed v1
//! PodStatus for each pod, kept apart from desired state and read by `tinylet get`.
//!
//! Written only when the content changes: the agent may report the same status every
//! sync, and every write wears flash. The bytes last written (or found on disk) are
//! remembered per pod, so an unchanged status costs one serialization and a compare -
//! no file read, no write. After a restart the first report of each pod reads its file
//! once and writes only if it differs.
//!
//! Someone else may change a file (garbage written into it, truncated, deleted): the
//! store's watch names the files changed in this directory ([`super::watch`]), and
//! [`StatusFiles::repair`] rewrites those that no longer hold what was last written,
//! from the remembered bytes (no pod sync needed). The agent's own writes show up there
//! too and cost one read each (a size check first); a steady state has no changes, so
//! no reads. That memory (about 1 KB per pod) buys a repair that never waits for a
//! busy worker.
//!
//! Status is derived from the runtime, so it is replaced atomically but not fsync'd:
//! only desired state needs to survive a power cut. A status file lost or emptied by
//! one is read as absent (logged) and written again on the pod's next sync.

use super::atomic;
use super::deletion;
use super::error::{IoContext, StoreError};
use super::layout;
use crate::model::{Pod, PodStatus};
use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The status directory and what is known to be in it.
pub struct StatusFiles {
    dir: PathBuf,
    /// File name -> the content it was last given (or found with).
    known: HashMap<String, Vec<u8>>,
}

impl StatusFiles {
    /// The status files in `dir`.
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
        if self.known.get(&file) == Some(&bytes) {
            return Ok(0);
        }
        let path = self.dir.join(&file);
        if holds(&path, &bytes).at(&path)? {
            self.known.insert(file, bytes);
            return Ok(0);
        }
        // Derived data, rewritten on the next change: no fsync (see atomic::replace_file).
        let n =
            atomic::replace_file(&self.dir, &file, &bytes, atomic::PLAIN_FILE_MODE).at(&path)?;
        self.known.insert(file, bytes);
        Ok(n)
    }

    /// Rewrites the files among `changed` (`None`: every file) that no longer hold what
    /// was last written to them; returns the bytes written. Files of pods with no
    /// status this run are left alone (their worker checks them on its first write).
    pub fn repair(&mut self, changed: Option<&BTreeSet<String>>) -> u64 {
        let mut written = 0;
        for (file, bytes) in &self.known {
            if changed.is_some_and(|c| !c.contains(file)) {
                continue;
            }
            let path = self.dir.join(file);
            let what = match holds(&path, bytes) {
                Ok(true) => continue,
                Ok(false) if path.exists() => "changed by someone else",
                Ok(false) => "removed by someone else",
                Err(e) => {
                    log::warn!("{}: {e}; rewriting it", path.display());
                    "unreadable"
                }
            };
            match atomic::replace_file(&self.dir, file, bytes, atomic::PLAIN_FILE_MODE) {
                Ok(n) => {
                    log::warn!("{}: {what}; rewritten", path.display());
                    written += n;
                }
                Err(e) => log::warn!("{}: {what}; cannot rewrite it: {e}", path.display()),
            }
        }
        written
    }

    /// The last status written for `ns/name`; `None` when there is none or it does not
    /// parse (logged; the agent rewrites it on its next sync).
    pub fn read(&self, ns: &str, name: &str) -> Option<PodStatus> {
        let file = layout::file_name(ns, name).ok()?;
        atomic::read_json(&self.dir.join(file), "a pod status")
    }

    /// Removes the status of `ns/name` and its deletion record; false when there was
    /// no status.
    pub fn remove(&mut self, ns: &str, name: &str) -> Result<bool, StoreError> {
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        self.known.remove(&file);
        let removed = atomic::remove_file(&self.dir, &file).at(&self.dir.join(&file))?;
        deletion::remove(&self.dir, ns, name)?;
        Ok(removed)
    }

    /// Records that `pod` is being deleted with `grace` ([`deletion`]); returns the
    /// bytes written.
    pub fn record_deletion(&mut self, pod: &Pod, grace: Duration) -> Result<u64, StoreError> {
        deletion::write(&self.dir, pod, grace)
    }

    /// The pod `ns/name` as recorded when its deletion began, if it is being deleted.
    pub fn deleted_pod(&self, ns: &str, name: &str) -> Option<Pod> {
        deletion::read(&self.dir, ns, name)
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

/// Whether the file at `path` holds exactly `bytes` (false when it does not exist). A
/// file of another size is not read at all.
/// Never blocks on a FIFO or follows a symlink put in its place.
fn holds(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path);
    let f = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        // A symlink (ELOOP) is not what was written.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Ok(false)
        }
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    if !meta.is_file() || meta.len() != bytes.len() as u64 {
        return Ok(false);
    }
    let mut found = Vec::with_capacity(bytes.len());
    f.take(bytes.len() as u64 + 1).read_to_end(&mut found)?;
    Ok(found == bytes)
}
