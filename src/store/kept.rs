//! Copies the uplink keeps of what it resolved for the cluster's pods, beside its object
//! cache, so the pods are made the same after a reboot without the uplink:
//! - `STATE/cluster/services/NS_services.json`: the Services of a namespace, for the
//!   pods' `*_SERVICE_HOST` variables;
//! - `STATE/cluster/claims/NS_CLAIM.json`: the directory of the volume bound to a
//!   PersistentVolumeClaim;
//! - `STATE/cluster/node/NODE_labels.json`: the labels the API shows on this Node, for
//!   admission after a restart without the API server.
//!
//! The uplink owns the content (the store keeps bytes). Written durably and only when
//! they changed (these change rarely: nothing is written at a steady state).

use super::atomic;
use super::error::{IoContext, StoreError};
use super::layout::{self, CLUSTER_DIR};
use super::Store;
use std::path::PathBuf;

/// The most bytes read of one copy (the uplink bounds what it writes far below this).
const MAX_BYTES: usize = 1 << 20;

/// What a kept copy is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// A namespace's Services (the name part is always `services`).
    Services,
    /// A claim's bound volume.
    Claim,
    /// What admission reads of this Node (the name part is `labels`).
    Node,
}

impl Kept {
    fn dir_name(self) -> &'static str {
        match self {
            Kept::Services => "services",
            Kept::Claim => "claims",
            Kept::Node => "node",
        }
    }
}

impl Store {
    fn kept_dir(&self, kind: Kept) -> PathBuf {
        self.state_dir().join(CLUSTER_DIR).join(kind.dir_name())
    }

    /// Keeps `bytes` as the copy `kind` `ns/name`; false when it held them already.
    pub fn put_kept(
        &mut self,
        kind: Kept,
        ns: &str,
        name: &str,
        bytes: &[u8],
    ) -> Result<bool, StoreError> {
        self.check_writable()?;
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        let dir = self.kept_dir(kind);
        atomic::ensure_dir(&dir, atomic::PLAIN_DIR_MODE, false).at(&dir)?;
        let path = dir.join(&file);
        if atomic::read_optional(&path).at(&path)?.as_deref() == Some(bytes) {
            return Ok(false);
        }
        self.bytes_written +=
            atomic::write_file(&dir, &file, bytes, atomic::PLAIN_FILE_MODE).at(&path)?;
        Ok(true)
    }

    /// The copy `kind` `ns/name`, if any (unreadable: logged, read as none).
    pub fn kept(&self, kind: Kept, ns: &str, name: &str) -> Option<Vec<u8>> {
        let file = layout::file_name(ns, name).ok()?;
        let path = self.kept_dir(kind).join(file);
        match crate::bounded::read_optional(&path, MAX_BYTES) {
            Ok(found) => found,
            Err(e) => {
                log::warn!("{}: {e}; read as none", path.display());
                None
            }
        }
    }

    /// Where the copy `kind` `ns/name` lives (for messages; a name that is no file
    /// name gives the directory).
    pub fn kept_path(&self, kind: Kept, ns: &str, name: &str) -> PathBuf {
        let dir = self.kept_dir(kind);
        match layout::file_name(ns, name) {
            Ok(file) => dir.join(file),
            Err(_) => dir,
        }
    }

    /// Drops the copy `kind` `ns/name`; false when there was none.
    pub fn remove_kept(&mut self, kind: Kept, ns: &str, name: &str) -> Result<bool, StoreError> {
        self.check_writable()?;
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        let dir = self.kept_dir(kind);
        atomic::remove_file(&dir, &file).at(&dir.join(&file))
    }

    /// The `(namespace, name)` of every copy of `kind`, sorted.
    pub fn kept_names(&self, kind: Kept) -> Vec<(String, String)> {
        let Ok(entries) = std::fs::read_dir(self.kept_dir(kind)) else {
            return Vec::new();
        };
        layout::sorted_names(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::Kept;
    use crate::store::Store;

    #[test]
    fn kept_per_object_written_only_on_change() {
        let dir = std::env::temp_dir().join(format!("tinylet-kept-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut s = Store::open_at(&dir, &[]).unwrap();
        let k = Kept::Services;
        assert!(s.kept(k, "app", "services").is_none());
        assert!(s.put_kept(k, "app", "services", b"[1]").unwrap());
        let written = s.bytes_written();
        assert!(!s.put_kept(k, "app", "services", b"[1]").unwrap());
        assert_eq!(s.bytes_written(), written);
        assert_eq!(s.kept(k, "app", "services").as_deref(), Some(&b"[1]"[..]));
        assert!(s.put_kept(k, "default", "services", b"[]").unwrap());
        assert!(s.put_kept(Kept::Claim, "app", "data", b"{}").unwrap());
        let names =
            |s: &Store, k| -> Vec<String> { s.kept_names(k).into_iter().map(|(n, _)| n).collect() };
        assert_eq!(names(&s, k), ["app", "default"]);
        assert_eq!(names(&s, Kept::Claim), ["app"]);
        assert!(s.remove_kept(k, "app", "services").unwrap());
        assert_eq!(names(&s, k), ["default"]);
        assert!(s.put_kept(k, "../x", "services", b"[]").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
