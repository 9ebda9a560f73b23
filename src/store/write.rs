//! The write side of the store: `apply` (create, update, replace, or nothing) and
//! `delete`, each under an exclusive lock on the kind's directory so two commands never
//! interleave their read-modify-write of one object.

use super::atomic;
use super::error::{IoContext, StoreError};
use super::layout::{self, Kind, Layout};
use super::quarantine::quarantine;
use super::state_files::{self, Access, Found};
use super::uid;
use super::{fill_uid, DamagedPod, Store};
use crate::model::{Object, Pod};
use std::path::PathBuf;

/// What an apply did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// A new object (not in the state directory nor the firmware).
    Created,
    /// An existing object changed (or a firmware object got an override).
    Updated,
    /// The result equals what is stored: nothing was written.
    Unchanged,
    /// The manifest carries a uid different from the stored one: a new object under
    /// the same name (new uid, new creation time).
    Replaced,
}

impl Applied {
    /// The word kubectl prints: `pod/web created`.
    pub fn verb(self) -> &'static str {
        match self {
            Applied::Created => "created",
            Applied::Updated => "configured",
            Applied::Unchanged => "unchanged",
            Applied::Replaced => "replaced",
        }
    }
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deleted {
    /// The object is gone.
    Removed,
    /// The override was removed; the firmware object in this file applies again.
    FirmwareRestored(PathBuf),
}

impl Store {
    /// Stores `obj` (already parsed and validated by the model) as the desired state of
    /// its kind, namespace and name. Writes nothing when the result equals what is
    /// stored, so re-applying never wears flash.
    pub fn apply(&mut self, mut obj: Object) -> Result<Applied, StoreError> {
        let kind = Kind::of(&obj);
        let (ns, name) = (obj.namespace().to_string(), obj.name().to_string());
        let file = layout::file_name(&ns, &name).map_err(|e| StoreError::Invalid(e.0))?;
        let dir = self.layout.kind_dir(kind);
        let lock = atomic::open_dir(&dir).at(&dir)?;
        atomic::lock_exclusive(&lock).at(&dir)?;

        self.check_writable()?;
        let stored = state_files::read_or_quarantine(&self.layout, kind, &file, Access::Locked)?;
        let firmware = match stored {
            Some(_) => None,
            None => self.firmware_get(kind, &ns, &name).map(|(o, _)| o),
        };
        let previous = stored.as_ref().map(|s| {
            let mut o = s.object.clone();
            fill_uid(&mut o);
            o
        });
        if let Object::Pod(p) = &mut obj {
            p.status = None;
        }
        let explicit_uid = !obj.meta().uid.is_empty();
        let outcome = merge_identity(&mut obj, previous.as_ref().or(firmware.as_ref()))?;
        // A uid the manifest brings may be another pod's (a random one never is).
        if kind == Kind::Pod && explicit_uid && outcome != Applied::Updated {
            if let Some(owner) = self.pod_with_uid(&obj.meta().uid, &ns, &name) {
                return Err(StoreError::Invalid(format!(
                    "metadata.uid {:?} is already the uid of {owner}; two pods cannot share a \
                     uid (leave metadata.uid out to get a fresh one)",
                    obj.meta().uid
                )));
            }
        }
        let bytes = to_bytes(&obj);
        let same = match (&stored, &firmware) {
            (Some(s), _) => s.bytes == bytes,
            (None, Some(f)) => to_bytes(f) == bytes,
            (None, None) => false,
        };
        if same {
            return Ok(Applied::Unchanged);
        }
        let mode = if kind.is_secret() {
            atomic::SECRET_FILE_MODE
        } else {
            atomic::PLAIN_FILE_MODE
        };
        self.bytes_written += atomic::write_file(&dir, &file, &bytes, mode).at(&dir.join(&file))?;
        Ok(outcome)
    }

    /// Deletes `kind` `ns/name` from the state directory. A firmware object cannot be
    /// deleted ([`StoreError::ReadOnly`]); deleting its override restores it.
    pub fn delete(&mut self, kind: Kind, ns: &str, name: &str) -> Result<Deleted, StoreError> {
        self.check_writable()?;
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        let dir = self.layout.kind_dir(kind);
        let lock = atomic::open_dir(&dir).at(&dir)?;
        atomic::lock_exclusive(&lock).at(&dir)?;
        let removed = atomic::remove_file(&dir, &file).at(&dir.join(&file))?;
        let firmware = self.firmware_get(kind, ns, name).map(|(_, path)| path);
        let what = format!("{kind} {ns}/{name}");
        match (removed, firmware) {
            (true, None) => Ok(Deleted::Removed),
            (true, Some(path)) => Ok(Deleted::FirmwareRestored(path)),
            (false, Some(file)) => Err(StoreError::ReadOnly { what, file }),
            (false, None) if self.cluster_get(kind, ns, name).is_some() => {
                Err(StoreError::Cluster(what))
            }
            (false, None) => Err(StoreError::NotFound(what)),
        }
    }
}

/// Takes the lock of `tree`'s pod directory and reads `file` again under it: the held
/// lock and why the file is damaged, or `None` when it was fixed or removed meanwhile
/// (that change stands).
fn still_damaged(tree: &Layout, file: &str) -> Result<Option<(std::fs::File, String)>, StoreError> {
    let dir = tree.kind_dir(Kind::Pod);
    let lock = atomic::open_dir(&dir).at(&dir)?;
    atomic::lock_exclusive(&lock).at(&dir)?;
    match state_files::read(tree, Kind::Pod, file)? {
        Found::Bad { reason } => Ok(Some((lock, reason))),
        Found::Missing | Found::Valid(_) => Ok(None),
    }
}

impl Store {
    /// Moves the damaged pod file `d` to quarantine (it is checked again under the
    /// directory's lock: a file fixed meanwhile stays); returns where it went. For a pod
    /// of which nothing exists on the runtime, whose spec no one holds.
    pub fn quarantine_pod_file(&mut self, d: &DamagedPod) -> Result<Option<PathBuf>, StoreError> {
        self.check_writable()?;
        let (Some(dir), Some(file)) = (d.path.parent(), d.path.file_name()) else {
            return Ok(None);
        };
        let file = file.to_string_lossy().into_owned();
        let tree = if dir == self.cluster.kind_dir(Kind::Pod) {
            self.cluster.clone()
        } else {
            self.layout.clone()
        };
        let dir = tree.kind_dir(Kind::Pod);
        let Some((_lock, reason)) = still_damaged(&tree, &file)? else {
            return Ok(None);
        };
        let reason = format!(
            "{reason}; nothing of pod {}/{} is on the runtime",
            d.namespace, d.name
        );
        quarantine(
            &self.layout.quarantine_dir(),
            &dir,
            &file,
            Kind::Pod,
            &reason,
        )
        .map(Some)
    }

    /// Puts the last good spec of a pod whose desired file is damaged back in its place:
    /// the damaged file goes to quarantine and `pod` is written atomically where it was,
    /// under the directory lock, so the store heals and a later `delete` works as usual.
    /// Returns where the damaged copy went; `None` when the file is no longer damaged
    /// (applied or deleted meanwhile: that change stands).
    pub fn restore_pod(&mut self, pod: &Pod) -> Result<Option<PathBuf>, StoreError> {
        self.check_writable()?;
        let (ns, name) = (&pod.metadata.namespace, &pod.metadata.name);
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        // A cluster pod's file is in the cluster tree.
        let tree = match pod.source() {
            crate::model::pod::Source::File => self.layout.clone(),
            crate::model::pod::Source::Api => self.cluster.clone(),
        };
        self.cluster_known.remove(&(Kind::Pod, file.clone()));
        let dir = tree.kind_dir(Kind::Pod);
        let Some((_lock, reason)) = still_damaged(&tree, &file)? else {
            return Ok(None);
        };
        let quarantine_dir = self.layout.quarantine_dir();
        let moved = quarantine(&quarantine_dir, &dir, &file, Kind::Pod, &reason)?;
        let mut good = pod.clone();
        good.status = None;
        // Set on every read (see the store's doc), so never written.
        good.metadata
            .annotations
            .remove(crate::model::pod::CONFIG_SOURCE);
        let bytes = to_bytes(&Object::Pod(Box::new(good)));
        self.bytes_written +=
            atomic::write_file(&dir, &file, &bytes, atomic::PLAIN_FILE_MODE).at(&dir.join(&file))?;
        Ok(Some(moved))
    }

    /// Another pod (not `ns/name`) with `uid`, in the state directory or the firmware,
    /// as `pod NS/NAME (FILE)`. Damaged state files are skipped, never moved: they may
    /// be the only record of a running pod (see [`Store::desired_pods_keeping_damaged`]).
    fn pod_with_uid(&mut self, uid: &str, ns: &str, name: &str) -> Option<String> {
        let state = state_files::list(&self.layout, Kind::Pod, Access::ReadOnly)
            .into_iter()
            .map(|mut o| {
                fill_uid(&mut o);
                let file = layout::file_name(o.namespace(), o.name()).unwrap_or_default();
                (o, self.layout.kind_dir(Kind::Pod).join(file))
            });
        let firmware = self.firmware.scan().into_iter();
        self.firmware_scanned = true;
        state
            .chain(firmware)
            .find(|(o, _)| {
                Kind::of(o) == Kind::Pod
                    && o.meta().uid == uid
                    && (o.namespace(), o.name()) != (ns, name)
            })
            .map(|(o, path)| format!("pod {}/{} ({})", o.namespace(), o.name(), path.display()))
    }
}

/// Gives `obj` its uid and creation time from `previous` (the object it updates), or
/// fresh ones; says whether this creates, updates or replaces.
fn merge_identity(obj: &mut Object, previous: Option<&Object>) -> Result<Applied, StoreError> {
    let meta = obj.meta_mut();
    let now = || crate::model::time::now_rfc3339();
    match previous {
        Some(prev) if meta.uid.is_empty() || meta.uid == prev.meta().uid => {
            meta.uid = prev.meta().uid.clone();
            meta.creation_timestamp = prev
                .meta()
                .creation_timestamp
                .clone()
                .or_else(|| meta.creation_timestamp.take())
                .or_else(|| Some(now()));
            Ok(Applied::Updated)
        }
        Some(_) => {
            meta.creation_timestamp = Some(now());
            Ok(Applied::Replaced)
        }
        None => {
            if meta.uid.is_empty() {
                meta.uid = uid::random_uid()
                    .map_err(|e| StoreError::io(std::path::Path::new("getrandom"), e))?;
            }
            if meta.creation_timestamp.is_none() {
                meta.creation_timestamp = Some(now());
            }
            Ok(Applied::Created)
        }
    }
}

/// The stored form: the model's pretty JSON and a final newline.
fn to_bytes(obj: &Object) -> Vec<u8> {
    let mut bytes = obj.to_json_pretty().into_bytes();
    bytes.push(b'\n');
    bytes
}
