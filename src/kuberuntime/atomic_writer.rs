//! The files of a configMap, secret, projected or downwardAPI volume, laid out as
//! kubelet's AtomicWriter does, so a container sees every update as one atomic switch:
//!
//! ```text
//! VOLUME/..2026_11_29_22_40_28.123456789/   the files (0755 directories, each file its mode)
//! VOLUME/..data -> ..2026_11_29_22_40_28.123456789
//! VOLUME/KEY    -> ..data/KEY                one symlink per top-level name
//! ```
//!
//! An update writes a new timestamped directory, points `..data_tmp` at it, renames
//! that over `..data` (the atomic step), then removes the names that are gone and the
//! old directory. Why not simply rename each file into place: a reader of several files
//! (a certificate and its key, the token and `ca.crt`) could see a mix of old and new,
//! and config reloaders in pods watch for exactly this rename of `..data` (inotify on
//! the volume directory) to know that an update is complete.
//!
//! With a group (the pod's `fsGroup`, [`super::ownership`]) every file and directory
//! written belongs to it and directories are 02755; the caller adds the files' group
//! bits to their modes.
//!
//! Nothing is written when the directory already shows exactly these files (contents,
//! modes and group; no stray entry): a steady state writes nothing to flash or tmpfs. Nothing
//! is fsynced: the files are derived from the store, and a torn write after a power cut
//! differs from what is wanted, so the next sync (before any container starts) writes
//! it again. A directory in another layout (an older agent's plain files) is replaced
//! on the first write.
//!
//! The volume directory is the agent's: containers mount it read-only, so paths in it
//! are used as they are. The file paths come from validated specs (relative, no `..`
//! component, not starting with `..`); they are checked again here.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::ops::Bound;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The link to the current timestamped directory.
pub const DATA_DIR: &str = "..data";
/// The link renamed over [`DATA_DIR`].
const NEW_DATA_DIR: &str = "..data_tmp";
/// Longest file path and file name kubelet accepts.
const MAX_PATH: usize = 4096;
const MAX_NAME: usize = 255;

/// One file of a volume: its path relative to the volume, content and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProjection {
    /// Its path relative to the volume's root.
    pub path: String,
    /// Its content.
    pub data: Vec<u8>,
    /// Its mode bits.
    pub mode: u32,
}

/// Clean path -> (content, mode), the payload with duplicates resolved (the last wins).
type Payload<'a> = BTreeMap<String, (&'a [u8], u32)>;

/// Makes `dir` (an existing directory) show exactly `files`, owned by `group` when
/// set. Returns whether it wrote. With several files at one path the last one wins,
/// as in kubelet.
pub fn write(dir: &Path, files: &[FileProjection], group: Option<u32>) -> io::Result<bool> {
    let payload = payload(files)?;
    if is_current(dir, &payload, group)? {
        return Ok(false);
    }
    let ts = new_timestamped_dir(dir, group)?;
    let written = write_payload(&dir.join(&ts), &payload, group)
        .and_then(|()| link_top_level(dir, &payload))
        .and_then(|()| switch_data_dir(dir, &ts));
    if let Err(e) = written {
        let _ = fs::remove_dir_all(dir.join(&ts));
        return Err(e);
    }
    remove_stale(dir, &ts, &payload)?;
    Ok(true)
}

/// The payload keyed by cleaned path, each path checked.
fn payload(files: &[FileProjection]) -> io::Result<Payload<'_>> {
    let mut out = Payload::new();
    for f in files {
        out.insert(clean(&f.path)?, (f.data.as_slice(), f.mode & 0o777));
    }
    // A file cannot also be a directory of another file ("a" and "a/b").
    for p in out.keys() {
        if let Some(parent) = parents(p).find(|d| out.contains_key(*d)) {
            return Err(invalid(format!(
                "{parent:?} is both a file and the directory of {p:?}"
            )));
        }
    }
    Ok(out)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// `p` with empty and `.` components dropped (`./a//b/` -> `a/b`), as kubelet cleans
/// it; refuses what its writer refuses: nothing left, an absolute path, a `..`
/// component, a first component starting with `..` (the writer's own names), names
/// over 255 bytes, paths over 4096.
fn clean(p: &str) -> io::Result<String> {
    let parts: Vec<&str> = p
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let ok = !p.starts_with('/')
        && p.len() <= MAX_PATH
        && parts.first().is_some_and(|c| !c.starts_with(".."))
        && parts.iter().all(|c| *c != ".." && c.len() <= MAX_NAME);
    if ok {
        Ok(parts.join("/"))
    } else {
        Err(invalid(format!(
            "file path {p:?} must be relative, without '..', not starting with '..'"
        )))
    }
}

/// The directories of `p`, innermost first (`a/b/c` -> `a/b`, `a`).
fn parents(p: &str) -> impl Iterator<Item = &str> {
    let mut rest = p;
    std::iter::from_fn(move || {
        let (parent, _) = rest.rsplit_once('/')?;
        rest = parent;
        Some(parent)
    })
}

/// The first component of `p`: the name linked at the volume's top level.
fn top(p: &str) -> &str {
    p.split('/').next().unwrap_or(p)
}

/// Whether `dir` shows exactly `payload`: `..data` names a timestamped directory
/// holding these files with these contents, modes and group, each top-level name is a link
/// into `..data`, and nothing else is at the top (a leftover of a crashed write, an
/// older layout, a name that is gone). Inside the timestamped directory only the
/// agent writes, each time a whole new one, so extra entries there are not looked for.
fn is_current(dir: &Path, payload: &Payload<'_>, group: Option<u32>) -> io::Result<bool> {
    let Some(ts) = data_target(dir) else {
        return Ok(false);
    };
    for e in fs::read_dir(dir)? {
        let name = e?.file_name();
        let name = name.to_string_lossy();
        if name != DATA_DIR && name != ts && !is_top(payload, &name) {
            return Ok(false);
        }
    }
    let ts = dir.join(ts);
    for (p, (data, mode)) in payload {
        if !is_top_link(dir, top(p)) {
            return Ok(false);
        }
        let Ok(meta) = fs::symlink_metadata(ts.join(p)) else {
            return Ok(false);
        };
        let same = meta.file_type().is_file()
            && meta.permissions().mode() & 0o7777 == *mode
            && group.is_none_or(|g| meta.gid() == g)
            && meta.len() == data.len() as u64
            && fs::read(ts.join(p))? == *data;
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether `name` is the first component of a path of the payload.
fn is_top(payload: &Payload<'_>, name: &str) -> bool {
    let below = format!("{name}/");
    payload.contains_key(name)
        || payload
            .range::<str, _>((Bound::Included(below.as_str()), Bound::Unbounded))
            .next()
            .is_some_and(|(k, _)| k.starts_with(&below))
}

/// The timestamped directory `..data` points at, if it is one of ours.
fn data_target(dir: &Path) -> Option<String> {
    let target = fs::read_link(dir.join(DATA_DIR)).ok()?;
    let ts = target.to_str()?;
    let ours = ts.starts_with("..")
        && ts.len() > 2
        && !ts.contains('/')
        && ts != DATA_DIR
        && ts != NEW_DATA_DIR;
    ours.then(|| ts.to_string())
}

/// Whether `dir/name` is the link `..data/name`.
fn is_top_link(dir: &Path, name: &str) -> bool {
    fs::read_link(dir.join(name)).is_ok_and(|t| t == Path::new(DATA_DIR).join(name))
}

/// Makes a new `..YYYY_MM_DD_HH_MM_SS.NANOS` directory in `dir`; returns its name.
fn new_timestamped_dir(dir: &Path, group: Option<u32>) -> io::Result<String> {
    let now = SystemTime::now();
    let stamp = crate::model::time::format_rfc3339(now).replace(['-', 'T', ':'], "_");
    let nanos = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for n in 0..100u32 {
        let name = format!("..{}.{nanos:09}{n}", stamp.trim_end_matches('Z'));
        match make_dir(&dir.join(&name), group) {
            Ok(()) => return Ok(name),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free name for a timestamped directory"))
}

/// A directory with exactly 0755 (02755 in `group`), whatever the umask.
fn make_dir(path: &Path, group: Option<u32>) -> io::Result<()> {
    fs::DirBuilder::new().mode(0o755).create(path)?;
    if group.is_some() {
        std::os::unix::fs::lchown(path, None, group)?;
    }
    let mode = super::ownership::dir_mode(0o755, group, super::ownership::READ_ONLY_FILE_BITS);
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

/// Writes every file of the payload below the fresh directory `ts`.
fn write_payload(ts: &Path, payload: &Payload<'_>, group: Option<u32>) -> io::Result<()> {
    for (p, (data, mode)) in payload {
        let mut dirs: Vec<&str> = parents(p).collect();
        dirs.reverse();
        for d in dirs {
            match make_dir(&ts.join(d), group) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                r => r?,
            }
        }
        // create_new (O_EXCL) never follows a link at the name.
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(*mode)
            .open(ts.join(p))?;
        f.write_all(data)?;
        if group.is_some() {
            std::os::unix::fs::fchown(&f, None, group)?;
        }
        f.set_permissions(fs::Permissions::from_mode(*mode))?;
    }
    Ok(())
}

/// Makes each top-level name a link into `..data` (replacing whatever else is there).
fn link_top_level(dir: &Path, payload: &Payload<'_>) -> io::Result<()> {
    for name in payload.keys().map(|p| top(p)) {
        if is_top_link(dir, name) {
            continue;
        }
        remove_any(&dir.join(name))?;
        std::os::unix::fs::symlink(Path::new(DATA_DIR).join(name), dir.join(name))?;
    }
    Ok(())
}

/// Points `..data` at `ts` in one rename.
fn switch_data_dir(dir: &Path, ts: &str) -> io::Result<()> {
    let tmp = dir.join(NEW_DATA_DIR);
    remove_any(&tmp)?;
    std::os::unix::fs::symlink(ts, &tmp)?;
    let data = dir.join(DATA_DIR);
    if fs::symlink_metadata(&data).is_ok_and(|m| !m.file_type().is_symlink()) {
        remove_any(&data)?;
    }
    fs::rename(&tmp, &data)
}

/// Removes every entry of `dir` but `..data`, `ts` and the payload's top-level links:
/// the previous timestamped directory, names that are gone, an older layout's files.
fn remove_stale(dir: &Path, ts: &str, payload: &Payload<'_>) -> io::Result<()> {
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name != DATA_DIR && name != ts && !is_top(payload, &name) {
            remove_any(&e.path())?;
        }
    }
    Ok(())
}

/// Removes `path` whatever it is (a directory with its contents); absent is fine.
fn remove_any(path: &Path) -> io::Result<()> {
    let r = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    };
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

/// The directory whose files a container sees (the target of `..data`), for resolving
/// a subPath below it: the top-level names are links, which subPath resolution
/// refuses to follow.
pub fn data_dir(dir: &Path) -> io::Result<std::path::PathBuf> {
    data_target(dir)
        .map(|ts| dir.join(ts))
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the volume has no ..data yet"))
}

/// The content of the file at `path` the volume `dir` shows now, when it is a regular
/// file of at most `max` bytes (what an earlier agent wrote, e.g. a token to keep
/// until a new one arrives; only the cluster's pods have tokens).
#[cfg(feature = "uplink")]
pub fn current(dir: &Path, path: &str, max: usize) -> Option<Vec<u8>> {
    let file = dir.join(data_target(dir)?).join(clean(path).ok()?);
    let meta = fs::symlink_metadata(&file).ok()?;
    if !meta.file_type().is_file() || meta.len() > max as u64 {
        return None;
    }
    fs::read(file).ok().filter(|d| d.len() <= max)
}

#[cfg(test)]
mod tests;
