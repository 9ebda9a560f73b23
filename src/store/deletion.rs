//! Deletion records, `STATE/status/NS_NAME.json.deleted`: the pod a worker is stopping, as
//! it was when its deletion began, with `metadata.deletionTimestamp` (when the grace
//! period ends, as the API server sets it) and `deletionGracePeriodSeconds`. The
//! desired file is gone by then; this record lets `tinylet get pod NS/NAME -o json|yaml`
//! show the pod as kubectl shows one being deleted, spec included, until its containers
//! are gone. Written by the agent when a pod's termination starts; removed with the
//! pod's status file when it ends ([`super::status::StatusFiles::remove`]).
//!
//! The name does not end in `.json`, so the status directory's readers (names, repair)
//! never take it for a status file. Derived data: replaced atomically, not fsync'd.

use super::atomic;
use super::error::{IoContext, StoreError};
use super::layout;
use crate::model::time::format_rfc3339;
use crate::model::Pod;
use std::path::Path;
use std::time::{Duration, SystemTime};

const SUFFIX: &str = ".deleted";

/// The record's file name for pod `ns/name`.
fn file_name(ns: &str, name: &str) -> Result<String, StoreError> {
    let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
    Ok(format!("{file}{SUFFIX}"))
}

/// Records in `dir` that `pod` is being deleted with `grace`; returns the bytes
/// written. A pod that already says so (a cluster pod the API server is deleting)
/// keeps its own timestamps.
pub fn write(dir: &Path, pod: &Pod, grace: Duration) -> Result<u64, StoreError> {
    let (ns, name) = (&pod.metadata.namespace, &pod.metadata.name);
    let file = file_name(ns, name)?;
    let mut pod = pod.clone();
    pod.status = None;
    let meta = &mut pod.metadata;
    if meta.deletion_timestamp.is_none() {
        meta.deletion_timestamp = Some(format_rfc3339(SystemTime::now() + grace));
        meta.deletion_grace_period_seconds = Some(grace.as_secs() as i64);
    }
    let mut bytes = serde_json::to_vec(&pod)
        .map_err(|e| StoreError::Invalid(format!("deletion record of {ns}/{name}: {e}")))?;
    bytes.push(b'\n');
    atomic::replace_file(dir, &file, &bytes, atomic::PLAIN_FILE_MODE).at(&dir.join(&file))
}

/// The pod being deleted as recorded in `dir`; `None` when there is no record or it
/// cannot be read (logged: it is only shown, never acted on).
pub fn read(dir: &Path, ns: &str, name: &str) -> Option<Pod> {
    let path = dir.join(file_name(ns, name).ok()?);
    atomic::read_json(&path, "a deleted pod's record")
}

/// Removes the record of pod `ns/name`, if any.
pub fn remove(dir: &Path, ns: &str, name: &str) -> Result<bool, StoreError> {
    let file = file_name(ns, name)?;
    atomic::remove_file(dir, &file).at(&dir.join(&file))
}
