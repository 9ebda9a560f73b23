//! The files of a projected volume: each source's files in order, into one directory
//! (a later source's file wins over an earlier one at the same path, as in kubelet).
//!
//! - configMap / secret: every key, or only `items` (each key must exist then); a
//!   missing object is an error unless the source is `optional`.
//! - downwardAPI: see [`super::downward_api`].
//! - serviceAccountToken: the token the pod's [`Objects`] provider holds for it (the
//!   cluster's, bound to the pod, held in memory only). Without one, the token the
//!   volume already shows is kept (the agent restarted; the volume is a tmpfs that
//!   outlives the agent, not a reboot); without that either, as [`NoToken`] says: an
//!   empty file (the cluster is away: the pod runs, its token comes later), a short
//!   wait (`ContainerCreating`: just asked), or `CreateContainerConfigError` naming the
//!   volume and the source (refused; a local pod's case: it has no cluster).
//!
//! A file's mode is its item's `mode`, else the volume's `defaultMode` (0644).

use super::atomic_writer::FileProjection;
use super::env::{NoToken, Objects};
use super::SyncError;
use crate::model::pod::KeyToPath;
use crate::model::projected::{
    ProjectedVolumeSource, ServiceAccountTokenProjection, VolumeProjection,
};
use crate::model::{Pod, Reason};
use std::path::Path;

/// The largest service-account token shown (a JWT is a few KiB).
pub const MAX_TOKEN: usize = 64 << 10;
const CONFIG_ERROR: Reason = Reason::CreateContainerConfigError;

/// Why a source has no files: its kind, the waiting reason, the message.
type Failure = (&'static str, Reason, String);

/// The files of the projected volume `name` of `pod`, whose directory is `dir`.
pub fn files(
    pod: &Pod,
    name: &str,
    src: &ProjectedVolumeSource,
    default_mode: u32,
    dir: &Path,
    objects: &dyn Objects,
) -> Result<Vec<FileProjection>, SyncError> {
    let mut out = Vec::new();
    for (i, s) in src.sources.iter().enumerate() {
        source(pod, s, default_mode, dir, objects, &mut out).map_err(|(what, reason, msg)| {
            SyncError::new(
                reason,
                format!("volume {name:?}: sources[{i}].{what}: {msg}"),
            )
        })?;
    }
    Ok(out)
}

/// Appends the files of one source; the error names the source's kind.
fn source(
    pod: &Pod,
    s: &VolumeProjection,
    mode: u32,
    dir: &Path,
    objects: &dyn Objects,
    out: &mut Vec<FileProjection>,
) -> Result<(), Failure> {
    if let Some(c) = &s.config_map {
        let what = "configMap";
        let entries = match objects.configmap(pod, &c.name) {
            Some(obj) => obj.entries(),
            None if c.optional == Some(true) => return Ok(()),
            None => {
                let msg = format!("configmap {:?} not found", c.name);
                return Err((what, CONFIG_ERROR, msg));
            }
        };
        out.extend(
            keys(&entries, &c.items, mode).map_err(|e| (what, CONFIG_ERROR, e.to_string()))?,
        );
    } else if let Some(c) = &s.secret {
        let what = "secret";
        let entries = match objects.secret(pod, &c.name) {
            Some(obj) => obj.entries(),
            None if c.optional == Some(true) => return Ok(()),
            None => return Err((what, CONFIG_ERROR, format!("secret {:?} not found", c.name))),
        };
        out.extend(
            keys(&entries, &c.items, mode).map_err(|e| (what, CONFIG_ERROR, e.to_string()))?,
        );
    } else if let Some(d) = &s.downward_api {
        let files = super::downward_api::files(pod, &d.items, mode, &objects.node_allocatable());
        out.extend(files.map_err(|e| ("downwardAPI", CONFIG_ERROR, e.to_string()))?);
    } else if let Some(t) = &s.service_account_token {
        let data = token(pod, t, dir, objects)
            .map_err(|(reason, msg)| ("serviceAccountToken", reason, msg))?;
        out.push(FileProjection {
            path: t.path.clone(),
            data,
            mode,
        });
    }
    Ok(())
}

/// A token source's file: the provider's token, else the one the volume in `dir`
/// shows already, else what [`NoToken`] says (see the module doc).
fn token(
    pod: &Pod,
    t: &ServiceAccountTokenProjection,
    dir: &Path,
    objects: &dyn Objects,
) -> Result<Vec<u8>, (Reason, String)> {
    let why = match objects.service_account_token(pod, t) {
        Ok(token) => return Ok(token),
        Err(why) => why,
    };
    if let Some(kept) = kept(dir, &t.path) {
        return Ok(kept);
    }
    match why {
        NoToken::Later => Ok(Vec::new()),
        NoToken::Asked => Err((
            Reason::ContainerCreating,
            "waiting for the cluster to issue the service-account token".into(),
        )),
        NoToken::Refused(msg) => Err((CONFIG_ERROR, msg)),
    }
}

/// The token the volume in `dir` shows at `path`, unless empty. Only the cluster's
/// pods have tokens: a local-only build has none to keep.
#[cfg(feature = "uplink")]
fn kept(dir: &Path, path: &str) -> Option<Vec<u8>> {
    super::atomic_writer::current(dir, path, MAX_TOKEN).filter(|k| !k.is_empty())
}

#[cfg(not(feature = "uplink"))]
fn kept(_: &Path, _: &str) -> Option<Vec<u8>> {
    None
}

/// An `items` entry whose key the ConfigMap or Secret does not have: the key and the
/// path it was to be projected to.
#[derive(Debug)]
pub struct KeyNotFound {
    key: String,
    path: String,
}

impl std::fmt::Display for KeyNotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "key {:?} not found for projected path {:?}",
            self.key, self.path
        )
    }
}

impl std::error::Error for KeyNotFound {}

/// A ConfigMap's or Secret's keys as files: every key, or only `items` (each of which
/// must exist, as in Kubernetes).
pub fn keys(
    entries: &[(String, Vec<u8>)],
    items: &[KeyToPath],
    mode: u32,
) -> Result<Vec<FileProjection>, KeyNotFound> {
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
            let (_, data) =
                entries
                    .iter()
                    .find(|(k, _)| *k == it.key)
                    .ok_or_else(|| KeyNotFound {
                        key: it.key.clone(),
                        path: it.path.clone(),
                    })?;
            Ok(FileProjection {
                path: it.path.clone(),
                data: data.clone(),
                mode: it.mode.map_or(mode, |m| (m & 0o777) as u32),
            })
        })
        .collect()
}
