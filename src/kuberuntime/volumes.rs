//! Pod volumes on the host and the container mounts that use them.
//!
//! - emptyDir: a directory `podsDir/UID/volumes/kubernetes.io~empty-dir/NAME`, living as
//!   long as the pod (container GC removes it with the pod). `medium: Memory` mounts a
//!   tmpfs on it (see [`super::tmpfs`]; `sizeLimit` is its size). `sizeLimit` on a disk
//!   emptyDir is not enforced (kubelet evicts the pod; documented in the README).
//! - hostPath: allowed only at or below a prefix in `allowedHostPaths`; the path is
//!   normalised and, when it exists, resolved through symlinks before the check, so
//!   `..` or a symlink cannot escape the prefix. `type` is checked (or created) as
//!   Kubernetes does.
//! - configMap / secret: keys projected to files under
//!   `podsDir/UID/volumes/kubernetes.io~{configmap,secret}/NAME`, each file rewritten
//!   (atomically) only when its content changed, keys no longer present removed. The
//!   worker calls [`prepare`] on every sync, so an updated object reaches running
//!   containers' files, and a steady state writes nothing to flash.

use super::env::Objects;
use super::{tmpfs, SyncError};
use crate::cri::pb;
use crate::model::container::VolumeMount;
use crate::model::pod::{HostPathType, KeyToPath, StorageMedium, Volume};
use crate::model::{Container, Pod};
use crate::store::atomic;
use std::path::{Component, Path, PathBuf};

const DEFAULT_MODE: u32 = 0o644;

/// Where a pod's volume lives on the host.
pub fn volume_dir(pods_dir: &Path, pod: &Pod, plugin: &str, name: &str) -> PathBuf {
    pods_dir
        .join(&pod.metadata.uid)
        .join("volumes")
        .join(format!("kubernetes.io~{plugin}"))
        .join(name)
}

/// Makes every volume of `pod` ready on the host: directories created, hostPaths
/// checked, configMap/secret files up to date.
pub fn prepare(
    pod: &Pod,
    pods_dir: &Path,
    allowed: &[PathBuf],
    objects: &dyn Objects,
) -> Result<(), SyncError> {
    for v in &pod.spec.volumes {
        prepare_one(pod, v, pods_dir, allowed, objects)?;
    }
    Ok(())
}

fn prepare_one(
    pod: &Pod,
    v: &Volume,
    pods_dir: &Path,
    allowed: &[PathBuf],
    objects: &dyn Objects,
) -> Result<(), SyncError> {
    let io_err = |what: &str, e: std::io::Error| {
        SyncError::new(
            "CreateContainerConfigError",
            format!("volume {:?}: {what}: {e}", v.name),
        )
    };
    if let Some(ed) = &v.empty_dir {
        let dir = volume_dir(pods_dir, pod, "empty-dir", &v.name);
        atomic::ensure_dir(&dir, 0o777, false).map_err(|e| io_err("cannot create emptyDir", e))?;
        if ed.medium == StorageMedium::Memory {
            let size = ed.size_limit.as_ref().map(|q| q.value());
            if tmpfs::ensure(&dir, size)
                .map_err(|e| io_err("cannot mount a tmpfs for emptyDir medium Memory", e))?
            {
                log::info!(
                    "mounted a tmpfs on {} ({})",
                    dir.display(),
                    tmpfs::options(size)
                );
            }
        }
        return Ok(());
    }
    if let Some(hp) = &v.host_path {
        host_path(&hp.path, hp.type_, allowed).map(|_| ())?;
        return Ok(());
    }
    let ns = &pod.metadata.namespace;
    let (plugin, entries, items, mode, dir_mode) = if let Some(cm) = &v.config_map {
        match objects.configmap(ns, &cm.name) {
            Some(obj) => (
                "configmap",
                obj.entries(),
                &cm.items,
                cm.default_mode,
                0o755,
            ),
            None if cm.optional == Some(true) => {
                ("configmap", Vec::new(), &cm.items, cm.default_mode, 0o755)
            }
            None => {
                return Err(SyncError::new(
                    "CreateContainerConfigError",
                    format!("configmap \"{}\" not found", cm.name),
                ))
            }
        }
    } else if let Some(s) = &v.secret {
        match objects.secret(ns, &s.secret_name) {
            Some(obj) => ("secret", obj.entries(), &s.items, s.default_mode, 0o700),
            None if s.optional == Some(true) => {
                ("secret", Vec::new(), &s.items, s.default_mode, 0o700)
            }
            None => {
                return Err(SyncError::new(
                    "CreateContainerConfigError",
                    format!("secret \"{}\" not found", s.secret_name),
                ))
            }
        }
    } else {
        return Err(SyncError::new(
            "CreateContainerConfigError",
            format!("volume {:?} has no supported source", v.name),
        ));
    };
    let dir = volume_dir(pods_dir, pod, plugin, &v.name);
    let files = project(
        &entries,
        items,
        mode.map_or(DEFAULT_MODE, |m| (m & 0o777) as u32),
    )?;
    sync_files(&dir, dir_mode, &files).map_err(|e| io_err("cannot write projected files", e))
}

/// A projected file: path relative to the volume, content, mode.
type Projected = (String, Vec<u8>, u32);

/// The files a configMap/secret volume shows: every key, or only `items` (each key must
/// exist then, as in Kubernetes).
fn project(
    entries: &[(String, Vec<u8>)],
    items: &[KeyToPath],
    mode: u32,
) -> Result<Vec<Projected>, SyncError> {
    if items.is_empty() {
        return Ok(entries
            .iter()
            .map(|(k, v)| (k.clone(), v.clone(), mode))
            .collect());
    }
    items
        .iter()
        .map(|it| {
            let value = entries
                .iter()
                .find(|(k, _)| *k == it.key)
                .map(|(_, v)| v.clone());
            let value = value.ok_or_else(|| {
                SyncError::new(
                    "CreateContainerConfigError",
                    format!(
                        "key {:?} not found for projected path {:?}",
                        it.key, it.path
                    ),
                )
            })?;
            if !is_relative_clean(&it.path) {
                return Err(SyncError::new(
                    "CreateContainerConfigError",
                    format!("projected path {:?} must be relative without '..'", it.path),
                ));
            }
            Ok((
                it.path.clone(),
                value,
                it.mode.map_or(mode, |m| (m & 0o777) as u32),
            ))
        })
        .collect()
}

/// Brings `dir` to hold exactly `files`, writing only what differs.
fn sync_files(dir: &Path, dir_mode: u32, files: &[Projected]) -> std::io::Result<()> {
    atomic::ensure_dir(dir, dir_mode, true)?;
    for (rel, content, mode) in files {
        let path = dir.join(rel);
        let parent = path.parent().unwrap_or(dir);
        atomic::ensure_dir(parent, dir_mode, false)?;
        if atomic::read_optional(&path)?.as_deref() != Some(content.as_slice()) {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            atomic::write_file(parent, &name, content, *mode)?;
        }
    }
    // Keys that are gone: remove their top-level files (nested item paths are left).
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let wanted = files
            .iter()
            .any(|(rel, _, _)| rel.split('/').next() == Some(name.as_str()));
        if !wanted && entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

fn is_relative_clean(p: &str) -> bool {
    !p.is_empty()
        && Path::new(p)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Lexically normalises an absolute path (`/a/./b/../c` -> `/a/c`).
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// Checks a hostPath against the allowed prefixes and its `type`, creating it for the
/// `...OrCreate` types. Returns the path to mount.
pub fn host_path(
    path: &str,
    kind: HostPathType,
    allowed: &[PathBuf],
) -> Result<PathBuf, SyncError> {
    let refuse =
        |why: String| SyncError::new("HostPathNotAllowed", format!("hostPath {path:?}: {why}"));
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(refuse("must be an absolute path".into()));
    }
    let lexical = normalise(p);
    let real = std::fs::canonicalize(&lexical).unwrap_or_else(|_| lexical.clone());
    let under = |cand: &Path| {
        allowed
            .iter()
            .any(|a| cand.starts_with(std::fs::canonicalize(a).unwrap_or_else(|_| normalise(a))))
    };
    if !under(&lexical) || !under(&real) {
        let list: Vec<String> = allowed.iter().map(|a| a.display().to_string()).collect();
        let allowed_text = if list.is_empty() {
            "none are allowed (config allowedHostPaths is empty)".to_string()
        } else {
            list.join(", ")
        };
        return Err(refuse(format!(
            "not under an allowed prefix (allowedHostPaths: {allowed_text})"
        )));
    }
    check_type(&real, kind).map_err(|why| {
        SyncError::new(
            "CreateContainerConfigError",
            format!("hostPath {path:?}: {why}"),
        )
    })?;
    Ok(real)
}

fn check_type(p: &Path, kind: HostPathType) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(p);
    let is = |f: fn(&std::fs::FileType) -> bool| meta.as_ref().is_ok_and(|m| f(&m.file_type()));
    match kind {
        HostPathType::Unset => Ok(()),
        HostPathType::DirectoryOrCreate if meta.is_err() => {
            atomic::ensure_dir(p, 0o755, false).map_err(|e| format!("cannot create directory: {e}"))
        }
        HostPathType::FileOrCreate if meta.is_err() => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .map(|_| ())
            .map_err(|e| format!("cannot create file: {e}")),
        HostPathType::Directory | HostPathType::DirectoryOrCreate if is(|t| t.is_dir()) => Ok(()),
        HostPathType::File | HostPathType::FileOrCreate if is(|t| t.is_file()) => Ok(()),
        HostPathType::Socket if is(|t| t.is_socket()) => Ok(()),
        HostPathType::CharDevice if is(|t| t.is_char_device()) => Ok(()),
        HostPathType::BlockDevice if is(|t| t.is_block_device()) => Ok(()),
        other => Err(format!("is not a {other:?} (or does not exist)")),
    }
}

/// The CRI mounts of container `c`.
pub fn mounts(
    pod: &Pod,
    c: &Container,
    pods_dir: &Path,
    allowed: &[PathBuf],
) -> Result<Vec<pb::Mount>, SyncError> {
    c.volume_mounts
        .iter()
        .map(|m| mount(pod, m, pods_dir, allowed))
        .collect()
}

fn mount(
    pod: &Pod,
    m: &VolumeMount,
    pods_dir: &Path,
    allowed: &[PathBuf],
) -> Result<pb::Mount, SyncError> {
    let v = pod.spec.volumes.iter().find(|v| v.name == m.name);
    let v = v.ok_or_else(|| {
        SyncError::new(
            "CreateContainerConfigError",
            format!("volume {:?} is not declared", m.name),
        )
    })?;
    let (mut host, read_only) = if let Some(hp) = &v.host_path {
        (host_path(&hp.path, hp.type_, allowed)?, m.read_only)
    } else if v.empty_dir.is_some() {
        (volume_dir(pods_dir, pod, "empty-dir", &v.name), m.read_only)
    } else if v.config_map.is_some() {
        (volume_dir(pods_dir, pod, "configmap", &v.name), true)
    } else {
        (volume_dir(pods_dir, pod, "secret", &v.name), true)
    };
    if !m.sub_path.is_empty() {
        if !is_relative_clean(&m.sub_path) {
            return Err(SyncError::new(
                "CreateContainerConfigError",
                format!("subPath {:?} must be relative without '..'", m.sub_path),
            ));
        }
        host.push(&m.sub_path);
        if !host.exists() {
            atomic::ensure_dir(&host, 0o755, false).map_err(|e| {
                SyncError::new(
                    "CreateContainerConfigError",
                    format!("subPath {:?}: {e}", m.sub_path),
                )
            })?;
        }
    }
    Ok(pb::Mount {
        container_path: m.mount_path.clone(),
        host_path: host.to_string_lossy().into_owned(),
        readonly: read_only,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests;
