//! Pod volumes on the host and the container mounts that use them.
//!
//! Pods are hostile: any path a pod can write is resolved with [`super::beneath`] (no
//! symlink followed, never leaving its root) and what containerd gets is a bind of the
//! very object that was checked ([`super::bind`]), so a symlink planted in a volume, or
//! a component swapped between the check and the mount, cannot lead outside.
//!
//! - emptyDir: a directory `podsDir/UID/volumes/kubernetes.io~empty-dir/NAME` (parents
//!   0755, the volume 0777 as kubelet makes it, whatever the umask), living as long as
//!   the pod. `medium: Memory` mounts a tmpfs on it (see [`super::tmpfs`]; `sizeLimit`
//!   is its size). `sizeLimit` on a disk emptyDir is not enforced (kubelet evicts the
//!   pod; documented in docs/pods.md).
//! - hostPath: allowed only at or below a prefix `allowedHostPaths` gives the pod (by its
//!   source and namespace, [`crate::config::host_paths`]). The prefix is the admin's
//!   (symlinks in it are followed; a `{namespace}` directory is made beneath it with
//!   none followed); the rest of the path, after lexical normalisation, is opened
//!   beneath it with no symlink followed, created there for the `...OrCreate` types
//!   (and for an unset type, as containerd would) unless the prefix is read-only for
//!   the pod, its `type` checked on the opened object, and that object bound for
//!   containerd, read-only when the prefix is (whatever the volumeMount says).
//! - configMap / secret / projected / downwardAPI: files computed from the store and
//!   the pod under `podsDir/UID/volumes/kubernetes.io~{configmap,secret,projected,
//!   downward-api}/NAME`, in kubelet's atomic-writer layout ([`super::atomic_writer`]:
//!   an update is one rename of `..data`), rewritten only when something differs. The
//!   worker calls [`prepare`] on every sync, so an updated object (or label, or token)
//!   reaches running containers' files, and a steady state writes nothing. Secret,
//!   projected and downwardAPI volumes are a sized tmpfs (mounted before their files
//!   are written; 0755 so non-root containers read them, while the secret and
//!   projected plugin directories above them are 0700, closed to host users), so
//!   secret data and tokens never rest on flash; a configMap volume
//!   is a directory on disk, as in kubelet. Containers mount all four read-only.
//! - `fsGroup` ([`super::ownership`]): the computed volumes' files and directories
//!   belong to it (group-readable, directories set-group-ID), an emptyDir's root too
//!   (group-writable, set-group-ID), so non-root containers share them as in kubelet.
//! - subPath / subPathExpr (`$(VAR)` expanded from the container's env): resolved
//!   beneath the volume (missing directories made 0755), then bound. In a volume of
//!   computed files that is beneath the directory `..data` points at (the top-level
//!   names are links); such a bind, as in kubelet, does not see later updates.

use super::atomic_writer::{self, FileProjection};
use super::beneath;
use super::bind::{self, Target};
use super::env::Objects;
use super::expand::Env;
use super::{downward_api, ownership, projected, tmpfs, SyncError};
use crate::config::host_paths::{self, Allowance, HostPathPrefix};
use crate::cri::pb;
use crate::model::container::{MountPropagationMode, VolumeMount};
use crate::model::pod::{HostPathType, StorageMedium, Volume};
use crate::model::{Container, Pod, Reason};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
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
    allowed: &[HostPathPrefix],
    objects: &dyn Objects,
) -> Result<(), SyncError> {
    for v in &pod.spec.volumes {
        prepare_one(pod, v, pods_dir, allowed, objects)?;
    }
    Ok(())
}

/// Makes volume `v` of `pod` ready on the host (what [`prepare`] does for each).
pub fn prepare_one(
    pod: &Pod,
    v: &Volume,
    pods_dir: &Path,
    allowed: &[HostPathPrefix],
    objects: &dyn Objects,
) -> Result<(), SyncError> {
    let io_err = |what: &str, e: std::io::Error| {
        SyncError::new(
            Reason::CreateContainerConfigError,
            format!("volume {:?}: {what}: {e}", v.name),
        )
    };
    let group = ownership::fs_group(pod);
    if let Some(ed) = &v.empty_dir {
        let dir = make_volume_dir(pods_dir, pod, "empty-dir", &v.name, 0o777)
            .map_err(|e| io_err("cannot create emptyDir", e))?;
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
        let mode = ownership::dir_mode(0o777, group, ownership::WRITABLE_FILE_BITS);
        ownership::claim_dir(&dir, group, mode).map_err(|e| io_err("cannot apply fsGroup", e))?;
        return Ok(());
    }
    if let Some((path, kind, _)) = host_source(pod, v, objects)? {
        host_path(&path, kind, &allowances(pod, allowed)).map(|_| ())?;
        return Ok(());
    }
    let plugin = plugin(v);
    let mut files = volume_files(pod, v, &volume_dir(pods_dir, pod, plugin, &v.name), objects)?;
    let ro = ownership::READ_ONLY_FILE_BITS;
    for f in &mut files {
        f.mode = ownership::file_mode(f.mode, group, ro);
    }
    let dir_mode = ownership::dir_mode(0o755, group, ro);
    let dir = make_volume_dir(pods_dir, pod, plugin, &v.name, dir_mode)
        .map_err(|e| io_err("cannot create its directory", e))?;
    if plugin != "configmap" {
        files_tmpfs(&dir, &files, dir_mode)
            .map_err(|e| io_err("cannot mount a tmpfs for it", e))?;
    }
    ownership::set_dir(&dir, group, dir_mode).map_err(|e| io_err("cannot apply fsGroup", e))?;
    atomic_writer::write(&dir, &files, group).map_err(|e| io_err("cannot write its files", e))?;
    Ok(())
}

/// The plugin directory (`kubernetes.io~PLUGIN`) of a volume other than a hostPath.
fn plugin(v: &Volume) -> &'static str {
    if v.empty_dir.is_some() {
        "empty-dir"
    } else if v.config_map.is_some() {
        "configmap"
    } else if v.secret.is_some() {
        "secret"
    } else if v.projected.is_some() {
        "projected"
    } else {
        "downward-api"
    }
}

/// The files a configMap, secret, projected or downwardAPI volume (in `dir`) shows now.
fn volume_files(
    pod: &Pod,
    v: &Volume,
    dir: &Path,
    objects: &dyn Objects,
) -> Result<Vec<FileProjection>, SyncError> {
    let fail = |msg: String| SyncError::new(Reason::CreateContainerConfigError, msg);
    let mode = |m: Option<i32>| m.map_or(DEFAULT_MODE, |m| (m & 0o777) as u32);
    let (entries, items, default_mode) = if let Some(cm) = &v.config_map {
        match objects.configmap(pod, &cm.name) {
            Some(obj) => (obj.entries(), &cm.items, cm.default_mode),
            None if cm.optional == Some(true) => (Vec::new(), &cm.items, cm.default_mode),
            None => return Err(fail(format!("configmap \"{}\" not found", cm.name))),
        }
    } else if let Some(s) = &v.secret {
        match objects.secret(pod, &s.secret_name) {
            Some(obj) => (obj.entries(), &s.items, s.default_mode),
            None if s.optional == Some(true) => (Vec::new(), &s.items, s.default_mode),
            None => return Err(fail(format!("secret \"{}\" not found", s.secret_name))),
        }
    } else if let Some(p) = &v.projected {
        return projected::files(pod, &v.name, p, mode(p.default_mode), dir, objects);
    } else if let Some(d) = &v.downward_api {
        return downward_api::files(
            pod,
            &d.items,
            mode(d.default_mode),
            &objects.node_allocatable(),
        )
        .map_err(|e| fail(format!("volume {:?}: downwardAPI: {e}", v.name)));
    } else {
        return Err(fail(format!("volume {:?} has no supported source", v.name)));
    };
    projected::keys(&entries, items, mode(default_mode)).map_err(|e| fail(e.to_string()))
}

/// Makes `podsDir/UID/volumes/kubernetes.io~PLUGIN/NAME`: the parents 0755 (0700 for
/// [`HOST_PRIVATE_PLUGINS`]), the volume
/// directory `mode` when it is made here (both exactly, whatever the umask: with umask
/// 0 a recursive builder would leave world-writable directories the agent later walks).
fn make_volume_dir(
    pods_dir: &Path,
    pod: &Pod,
    plugin: &str,
    name: &str,
    mode: u32,
) -> io::Result<PathBuf> {
    let root = super::pod_dir::open(pods_dir, &pod.metadata.uid)?;
    let rel = Path::new("volumes").join(format!("kubernetes.io~{plugin}"));
    let parent = beneath::make_dirs(root.as_fd(), &rel, 0o755)?;
    if HOST_PRIVATE_PLUGINS.contains(&plugin) {
        let path = pods_dir.join(&pod.metadata.uid).join(&rel);
        ownership::set_dir(&path, None, 0o700)?;
    }
    beneath::make_dir(parent.as_fd(), name.as_ref(), mode)?;
    Ok(volume_dir(pods_dir, pod, plugin, name))
}

/// Plugins whose volumes hold secret data (secrets, service-account tokens): their
/// plugin directory is 0700, so users of the host cannot reach the files, while the
/// volume itself is 0755 like the others and a non-root container reads it.
const HOST_PRIVATE_PLUGINS: [&str; 2] = ["secret", "projected"];

/// Mounts (or grows) the tmpfs of a secret, projected or downwardAPI volume for
/// `files`, its root `mode`. Before the first mount, files an older agent wrote to the
/// directory on flash are removed (the tmpfs would only hide them).
fn files_tmpfs(dir: &Path, files: &[FileProjection], mode: u32) -> io::Result<()> {
    if !tmpfs::is_mount_point(dir)? {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                std::fs::remove_dir_all(entry.path())?;
            } else {
                std::fs::remove_file(entry.path())?;
            }
        }
    }
    let size = tmpfs::secret_size(files.iter().map(|f| f.data.len()));
    if tmpfs::ensure_sized(dir, size, mode)? {
        log::info!("mounted a tmpfs on {} (size={size})", dir.display());
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

/// A volume that is a directory of the host: a hostPath (path, type, not read-only by
/// itself), or a persistentVolumeClaim's bound volume (its path and type, read-only
/// when the claim says so); `None` for the other kinds.
fn host_source(
    pod: &Pod,
    v: &Volume,
    objects: &dyn Objects,
) -> Result<Option<(String, HostPathType, bool)>, SyncError> {
    if let Some(hp) = &v.host_path {
        return Ok(Some((hp.path.clone(), hp.type_, false)));
    }
    let Some(c) = &v.persistent_volume_claim else {
        return Ok(None);
    };
    let bound = objects.claim(pod, &c.claim_name)?;
    Ok(Some((bound.path, bound.host_path_type, c.read_only)))
}

/// What `allowedHostPaths` allows `pod` (by its source and namespace).
pub fn allowances(pod: &Pod, allowed: &[HostPathPrefix]) -> Vec<Allowance> {
    let from_cluster = pod.source() == crate::model::pod::Source::Api;
    host_paths::for_pod(allowed, from_cluster, &pod.metadata.namespace)
}

/// Opens a hostPath (checked against the pod's allowances, resolved beneath one with
/// no symlink followed, created for the `...OrCreate` types and an unset type unless
/// the allowance is read-only, its `type` checked): the fd of what is to be mounted,
/// and whether the allowance forces the mount read-only.
pub fn host_path(
    path: &str,
    kind: HostPathType,
    allowed: &[Allowance],
) -> Result<(OwnedFd, bool), SyncError> {
    let refuse = |why: String| {
        SyncError::new(
            Reason::HostPathNotAllowed,
            format!("hostPath {path:?}: {why}"),
        )
    };
    let config_error = |why: String| {
        SyncError::new(
            Reason::CreateContainerConfigError,
            format!("hostPath {path:?}: {why}"),
        )
    };
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(refuse("must be an absolute path".into()));
    }
    let Some((prefix, rest, read_only)) = below_allowed(&normalise(p), allowed) else {
        let list: Vec<String> = allowed
            .iter()
            .map(|a| a.path().display().to_string())
            .collect();
        let allowed_text = if list.is_empty() {
            "none are allowed for this pod (config allowedHostPaths)".to_string()
        } else {
            list.join(", ")
        };
        return Err(refuse(format!(
            "not under an allowed prefix (allowedHostPaths: {allowed_text})"
        )));
    };
    let root = open_prefix(&prefix)
        .map_err(|e| config_error(format!("allowed prefix {}: {e}", prefix.path().display())))?;
    // A read-only allowance makes nothing on the host for the pod either.
    let fd = open_host_path(root.as_fd(), &rest, kind, !read_only).map_err(|e| {
        if beneath::is_escape(&e) {
            refuse(format!(
                "{} below the allowed prefix {}",
                beneath::describe(&e),
                prefix.path().display()
            ))
        } else if e.kind() == io::ErrorKind::NotFound && read_only {
            config_error(
                "does not exist (its allowed prefix is read-only: nothing is made there)".into(),
            )
        } else if e.kind() == io::ErrorKind::NotFound && is_or_create(kind) {
            config_error("its parent directory does not exist".into())
        } else if e.kind() == io::ErrorKind::NotFound {
            config_error(format!("is not a {kind:?} (or does not exist)"))
        } else {
            config_error(beneath::describe(&e))
        }
    })?;
    match is_of_type(fd.as_fd(), kind) {
        Ok(true) => Ok((fd, read_only)),
        Ok(false) => Err(config_error(format!(
            "is not a {kind:?} (or does not exist)"
        ))),
        Err(e) => Err(config_error(e.to_string())),
    }
}

/// The allowance `path` (normalised) is at or below (its base made canonical), the rest
/// of the path, and whether it is read-only. When several match, the outermost (a
/// prefix below another may be a path a pod can write through the outer one), and of
/// equal ones a read-only one.
fn below_allowed(path: &Path, allowed: &[Allowance]) -> Option<(Allowance, PathBuf, bool)> {
    allowed
        .iter()
        .filter_map(|a| {
            let lexical = path.strip_prefix(normalise(&a.path())).ok();
            if lexical.is_some() && a.namespace.is_some() {
                // The parent of the namespaces' directories is the admin's, named in
                // the config: made when missing, as the namespace's own is.
                make_base(&a.base);
            }
            let canonical = Allowance {
                base: std::fs::canonicalize(&a.base).ok()?,
                ..a.clone()
            };
            let rest = lexical.or_else(|| path.strip_prefix(canonical.path()).ok())?;
            Some((canonical, rest.to_path_buf(), a.read_only))
        })
        .max_by_key(|(_, rest, ro)| (rest.components().count(), *ro))
}

/// Makes `dir` (and its parents) 0755 when missing; a failure shows when it is opened.
fn make_base(dir: &Path) {
    use std::os::unix::fs::DirBuilderExt;
    if let Err(e) = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
    {
        log::warn!("cannot make {} (allowedHostPaths): {e}", dir.display());
    }
}

/// Opens an allowance's directory: its base (the admin's, symlinks followed) and, for a
/// per-namespace one, the namespace's directory in it (made 0755 when missing, no
/// symlink followed: a pod that can write the base cannot redirect it).
fn open_prefix(a: &Allowance) -> io::Result<OwnedFd> {
    let base = beneath::open_dir(&a.base)?;
    match &a.namespace {
        Some(ns) => beneath::make_dirs(base.as_fd(), Path::new(ns), 0o755),
        None => Ok(base),
    }
}

fn is_or_create(kind: HostPathType) -> bool {
    matches!(
        kind,
        HostPathType::DirectoryOrCreate | HostPathType::FileOrCreate
    )
}

/// Opens `rest` beneath the prefix `root`, creating what the type asks for when `create`.
fn open_host_path(
    root: BorrowedFd<'_>,
    rest: &Path,
    kind: HostPathType,
    create: bool,
) -> io::Result<OwnedFd> {
    match beneath::open(root, rest) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => match kind {
            HostPathType::DirectoryOrCreate | HostPathType::Unset => {
                beneath::make_dirs(root, rest, 0o755)
            }
            HostPathType::FileOrCreate => beneath::create_file(root, rest, 0o644).map(|r| r.0),
            _ => Err(e),
        },
        r => r,
    }
}

/// Whether the opened object is of the hostPath's `type`.
fn is_of_type(fd: BorrowedFd<'_>, kind: HostPathType) -> io::Result<bool> {
    use rustix::fs::FileType as T;
    let t = beneath::file_type(fd)?;
    Ok(match kind {
        HostPathType::Unset => true,
        HostPathType::Directory | HostPathType::DirectoryOrCreate => t == T::Directory,
        HostPathType::File | HostPathType::FileOrCreate => t == T::RegularFile,
        HostPathType::Socket => t == T::Socket,
        HostPathType::CharDevice => t == T::CharacterDevice,
        HostPathType::BlockDevice => t == T::BlockDevice,
    })
}

/// The CRI mounts of container `c`; `env` is its environment (for `subPathExpr`).
/// subPaths and hostPaths are bound to fresh targets here (see [`super::bind`]): call
/// this right before creating the container.
pub fn mounts(
    pod: &Pod,
    c: &Container,
    pods_dir: &Path,
    allowed: &[HostPathPrefix],
    env: &mut Env,
    objects: &dyn Objects,
) -> Result<Vec<pb::Mount>, SyncError> {
    let allowed = allowances(pod, allowed);
    let mut out = Vec::with_capacity(c.volume_mounts.len());
    for (index, m) in c.volume_mounts.iter().enumerate() {
        let at = Target {
            pods_dir,
            uid: &pod.metadata.uid,
            volume: &m.name,
            container: &c.name,
            index,
        };
        out.push(mount(pod, m, &at, &allowed, env, objects)?);
    }
    Ok(out)
}

fn mount(
    pod: &Pod,
    m: &VolumeMount,
    at: &Target<'_>,
    allowed: &[Allowance],
    env: &mut Env,
    objects: &dyn Objects,
) -> Result<pb::Mount, SyncError> {
    let v = pod.spec.volumes.iter().find(|v| v.name == m.name);
    let v = v.ok_or_else(|| {
        SyncError::new(
            Reason::CreateContainerConfigError,
            format!("volume {:?} is not declared", m.name),
        )
    })?;
    let sub = if m.sub_path_expr.is_empty() {
        m.sub_path.clone()
    } else {
        // Bounded like every other expansion (a subPathExpr can repeat a long value).
        let what = format!("volumeMounts[{}].subPathExpr", at.index);
        env.expand(what, &m.sub_path_expr)?
    };
    let fail = |what: String| {
        SyncError::new(
            Reason::CreateContainerConfigError,
            format!(
                "failed to prepare subPath for volumeMount {:?} of container {:?}: {what}",
                m.name, at.container
            ),
        )
    };
    if !sub.is_empty() && !is_relative_clean(&sub) {
        return Err(fail(format!(
            "subPath {sub:?} must be relative without '..'"
        )));
    }
    let bind_it =
        |fd: OwnedFd| bind::bind(fd.as_fd(), at).map_err(|e| fail(format!("cannot bind it: {e}")));
    let (host, read_only) = if let Some((path, kind, ro)) = host_source(pod, v, objects)? {
        let (root, forced) = host_path(&path, kind, allowed)?;
        let fd = if sub.is_empty() {
            root
        } else {
            open_sub_path(root.as_fd(), &sub, !forced)
                .map_err(|e| fail(sub_path_error(&sub, &e)))?
        };
        (bind_it(fd)?, m.read_only || ro || forced)
    } else {
        // Only an emptyDir may be written by the container; computed files never.
        let read_only = v.empty_dir.is_none() || m.read_only;
        let dir = volume_dir(at.pods_dir, pod, plugin(v), &v.name);
        if sub.is_empty() {
            (dir, read_only)
        } else {
            let base = if v.empty_dir.is_some() {
                Ok(dir)
            } else {
                atomic_writer::data_dir(&dir)
            };
            let root = base
                .and_then(|d| beneath::open_dir(&d))
                .map_err(|e| fail(format!("volume directory: {e}")))?;
            let fd = open_sub_path(root.as_fd(), &sub, true)
                .map_err(|e| fail(sub_path_error(&sub, &e)))?;
            (bind_it(fd)?, read_only)
        }
    };
    Ok(pb::Mount {
        container_path: m.mount_path.clone(),
        host_path: host.to_string_lossy().into_owned(),
        readonly: read_only,
        propagation: propagation(m.mount_propagation) as i32,
        ..Default::default()
    })
}

/// kubelet's translation of `mountPropagation` (None and unset are private; admission
/// allows `Bidirectional` only in a privileged container).
pub fn propagation(mode: Option<MountPropagationMode>) -> pb::MountPropagation {
    match mode {
        None | Some(MountPropagationMode::None) => pb::MountPropagation::PropagationPrivate,
        Some(MountPropagationMode::HostToContainer) => {
            pb::MountPropagation::PropagationHostToContainer
        }
        Some(MountPropagationMode::Bidirectional) => pb::MountPropagation::PropagationBidirectional,
    }
}

/// Opens the subPath `sub` beneath the volume `root`, making it a directory (and its
/// missing parents, 0755) when it does not exist and `create` (as kubelet does; not in
/// a read-only hostPath allowance).
fn open_sub_path(root: BorrowedFd<'_>, sub: &str, create: bool) -> io::Result<OwnedFd> {
    match beneath::open(root, Path::new(sub)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
            beneath::make_dirs(root, Path::new(sub), 0o755)
        }
        r => r,
    }
}

fn sub_path_error(sub: &str, e: &io::Error) -> String {
    format!("subPath {sub:?} {}", beneath::describe(e))
}

#[cfg(test)]
mod tests;
