//! The files of a projected volume: each source's files in order, into one directory
//! (a later source's file wins over an earlier one at the same path, as in kubelet).
//!
//! - configMap / secret: every key, or only `items` (each key must exist then); a
//!   missing object is an error unless the source is `optional`.
//! - downwardAPI: see [`super::downward_api`].
//! - serviceAccountToken: the token the pod's [`Objects`] provider holds for it (the
//!   cluster's, bound to the pod); a local pod has none, and its containers wait with
//!   `CreateContainerConfigError` naming the volume and the source.
//!
//! A file's mode is its item's `mode`, else the volume's `defaultMode` (0644).

use super::atomic_writer::FileProjection;
use super::env::Objects;
use super::SyncError;
use crate::model::pod::KeyToPath;
use crate::model::projected::{ProjectedVolumeSource, VolumeProjection};
use crate::model::{Pod, Reason};

/// The files of the projected volume `name` of `pod`.
pub fn files(
    pod: &Pod,
    name: &str,
    src: &ProjectedVolumeSource,
    default_mode: u32,
    objects: &dyn Objects,
) -> Result<Vec<FileProjection>, SyncError> {
    let mut out = Vec::new();
    for (i, s) in src.sources.iter().enumerate() {
        let fail = |what: &str, msg: String| {
            SyncError::new(
                Reason::CreateContainerConfigError,
                format!("volume {name:?}: sources[{i}].{what}: {msg}"),
            )
        };
        source(pod, s, default_mode, objects, &mut out).map_err(|(what, msg)| fail(what, msg))?;
    }
    Ok(out)
}

/// Appends the files of one source; the error names the source's kind.
fn source(
    pod: &Pod,
    s: &VolumeProjection,
    mode: u32,
    objects: &dyn Objects,
    out: &mut Vec<FileProjection>,
) -> Result<(), (&'static str, String)> {
    if let Some(c) = &s.config_map {
        let what = "configMap";
        let entries = match objects.configmap(pod, &c.name) {
            Some(obj) => obj.entries(),
            None if c.optional == Some(true) => return Ok(()),
            None => return Err((what, format!("configmap {:?} not found", c.name))),
        };
        out.extend(keys(&entries, &c.items, mode).map_err(|e| (what, e))?);
    } else if let Some(c) = &s.secret {
        let what = "secret";
        let entries = match objects.secret(pod, &c.name) {
            Some(obj) => obj.entries(),
            None if c.optional == Some(true) => return Ok(()),
            None => return Err((what, format!("secret {:?} not found", c.name))),
        };
        out.extend(keys(&entries, &c.items, mode).map_err(|e| (what, e))?);
    } else if let Some(d) = &s.downward_api {
        let files = super::downward_api::files(pod, &d.items, mode);
        out.extend(files.map_err(|e| ("downwardAPI", e.to_string()))?);
    } else if let Some(t) = &s.service_account_token {
        let token = objects
            .service_account_token(pod, t)
            .map_err(|e| ("serviceAccountToken", e))?;
        out.push(FileProjection {
            path: t.path.clone(),
            data: token,
            mode,
        });
    }
    Ok(())
}

/// A ConfigMap's or Secret's keys as files: every key, or only `items` (each of which
/// must exist, as in Kubernetes).
pub fn keys(
    entries: &[(String, Vec<u8>)],
    items: &[KeyToPath],
    mode: u32,
) -> Result<Vec<FileProjection>, String> {
    if items.is_empty() {
        return Ok(entries
            .iter()
            .map(|(k, v)| FileProjection {
                path: k.clone(),
                data: v.clone(),
                mode,
            })
            .collect());
    }
    items
        .iter()
        .map(|it| {
            let (_, data) = entries.iter().find(|(k, _)| *k == it.key).ok_or_else(|| {
                format!(
                    "key {:?} not found for projected path {:?}",
                    it.key, it.path
                )
            })?;
            Ok(FileProjection {
                path: it.path.clone(),
                data: data.clone(),
                mode: it.mode.map_or(mode, |m| (m & 0o777) as u32),
            })
        })
        .collect()
}
