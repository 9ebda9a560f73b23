//! Termination messages, as kubelet writes and reads them.
//!
//! Before a container is created, an empty file `podsDir/UID/containers/NAME/XXXXXXXX`
//! (8 random hex digits, mode 0666 so any user in the container can write it) is made
//! and bind-mounted at the container's `terminationMessagePath`. Once the container has
//! exited, the file's last 4096 bytes become `state.terminated.message` (appended to the
//! runtime's own message after `": "`). With `terminationMessagePolicy:
//! FallbackToLogsOnError`, an empty or missing file and a non-zero exit code take the
//! last 80 lines of the container's log instead, at most their last 2048 bytes.
//!
//! The host file is found again through the container's mounts in ContainerStatus, so
//! nothing about it is kept in the agent; only a file that the agent made is ever read
//! ([`agent_file`]: the mount's host path must be `podsDir/UID/containers/NAME/` plus 8
//! hex digits, for the container's own uid and name), never a volume a pod mounted at
//! that path (validation refuses such a mount anyway). Pods are hostile: the file is
//! opened `O_NOFOLLOW | O_NONBLOCK` and read only when fstat says it is a regular file,
//! so neither a symlink to a host file nor a FIFO (which would block the agent's only
//! thread) can be read. Container GC removes a container's file with the container;
//! pod removal removes the whole `podsDir/UID`.

use super::{beneath, labels};
use crate::cri::pb;
use crate::logs::join::Joiner;
use crate::logs::line;
use crate::model::container::TerminationMessagePolicy;
use crate::model::Reason;
use rustix::fs::{Mode, OFlags};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

/// Most bytes of the termination-message file read (kubelet's limit).
pub const MAX_MESSAGE_BYTES: u64 = 4096;
/// Most log lines a fallback message holds.
pub const LOG_LINES: usize = 80;
/// Most bytes a fallback message holds (the end of those lines).
pub const LOG_BYTES: usize = 2048;
/// How much of the log's end is read to find those lines: their 2048 bytes of text
/// plus every record header with room to spare.
const LOG_WINDOW: u64 = 16 * 1024;

/// `podsDir/UID/containers/NAME`: where a container's termination-message files live.
pub fn container_dir(pods_dir: &Path, uid: &str, name: &str) -> PathBuf {
    pods_dir.join(uid).join("containers").join(name)
}

/// Creates a fresh empty message file (mode 0666, whatever the umask) in the
/// container's directory, named by 8 random hex digits as kubelet names it, and returns
/// its path. The directories on the way are made 0755.
pub fn create_file(pods_dir: &Path, uid: &str, name: &str) -> io::Result<PathBuf> {
    let pod = super::pod_dir::open(pods_dir, uid)?;
    let dir = beneath::make_dirs(pod.as_fd(), &Path::new("containers").join(name), 0o755)?;
    let mut bytes = [0u8; 4];
    rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty())?;
    let file = format!("{:08x}", u32::from_ne_bytes(bytes));
    beneath::create_file(dir.as_fd(), Path::new(&file), 0o666)?;
    Ok(container_dir(pods_dir, uid, name).join(file))
}

/// The CRI mount of `host` at the container's `terminationMessagePath`.
pub fn mount(host: &Path, container_path: &str) -> pb::Mount {
    pb::Mount {
        container_path: container_path.to_string(),
        host_path: host.to_string_lossy().into_owned(),
        ..Default::default()
    }
}

/// The policy recorded on a container (kubelet's annotation); File when absent.
pub fn policy_of(st: &pb::ContainerStatus) -> TerminationMessagePolicy {
    match st
        .annotations
        .get(labels::CONTAINER_TERMINATION_MESSAGE_POLICY)
        .map(String::as_str)
    {
        Some("FallbackToLogsOnError") => TerminationMessagePolicy::FallbackToLogsOnError,
        _ => TerminationMessagePolicy::File,
    }
}

/// The agent's message file of the container, if it has one: the host side of its
/// mount at the termination-message path, when that is a file the agent made for this
/// container (`podsDir/UID/containers/NAME/XXXXXXXX`).
pub fn agent_file(st: &pb::ContainerStatus, pods_dir: &Path) -> Option<PathBuf> {
    let path = st
        .annotations
        .get(labels::CONTAINER_TERMINATION_MESSAGE_PATH)?;
    let uid = st.labels.get(labels::POD_UID)?;
    let name = &st.metadata.as_ref()?.name;
    if path.is_empty() || uid.is_empty() || name.is_empty() {
        return None;
    }
    let dir = container_dir(pods_dir, uid, name);
    st.mounts
        .iter()
        .filter(|m| &m.container_path == path)
        .map(|m| Path::new(&m.host_path))
        .find(|host| {
            let file = host.file_name().and_then(|n| n.to_str()).unwrap_or("");
            host.parent() == Some(dir.as_path())
                && file.len() == 8
                && file.bytes().all(|b| b.is_ascii_hexdigit())
        })
        .map(Path::to_path_buf)
}

/// The message of an exited container: the runtime's message, then the file's (or the
/// log's) text after `": "`. Reading never fails the status: an unreadable file gives
/// kubelet's "Error on reading termination log ..." text instead.
pub fn message(st: &pb::ContainerStatus, pods_dir: &Path) -> String {
    let fallback = policy_of(st) == TerminationMessagePolicy::FallbackToLogsOnError
        && st.exit_code != 0
        && !Reason::ContainerCannotRun.is(&st.reason);
    let (mut text, check_logs) = match agent_file(st, pods_dir) {
        None => (String::new(), fallback),
        Some(path) => match read_tail(&path, MAX_MESSAGE_BYTES) {
            Ok(data) => {
                let empty = data.is_empty();
                (
                    String::from_utf8_lossy(&data).into_owned(),
                    fallback && empty,
                )
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => (String::new(), fallback),
            Err(e) => (
                format!("Error on reading termination log {}: {e}", path.display()),
                false,
            ),
        },
    };
    if check_logs {
        text = match read_tail(Path::new(&st.log_path), LOG_WINDOW) {
            Ok(data) => log_tail(&data, LOG_LINES, LOG_BYTES),
            Err(e) => format!("Error on reading termination message from logs: {e}"),
        };
    }
    match (st.message.is_empty(), text.is_empty()) {
        (_, true) => st.message.clone(),
        (true, false) => text,
        (false, false) => format!("{}: {text}", st.message),
    }
}

/// The last `max` bytes of a regular file, opened without following a symlink and
/// without blocking (a FIFO or device is refused before any read).
fn read_tail(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    if beneath::file_type(fd.as_fd())? != rustix::fs::FileType::RegularFile {
        return Err(io::Error::other("not a regular file"));
    }
    let mut f = File::from(fd);
    let len = f.metadata()?.len();
    let start = len.saturating_sub(max);
    f.seek(SeekFrom::Start(start))?;
    let mut data = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
    f.take(max).read_to_end(&mut data)?;
    Ok(data)
}

/// The container output in the end of a CRI log file (`data`, which may start in the
/// middle of a line): its last `lines` logical lines, each whole one ending in a newline,
/// then at most the last `bytes` bytes of those.
pub fn log_tail(data: &[u8], lines: usize, bytes: usize) -> String {
    let mut joiner = Joiner::default();
    let mut out: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
    // A whole line ends in its newline; a partial last line (the container exited
    // mid-line: `printf DONE`) is shown as written, without one, as kubelet does.
    let mut push = |msg: &[u8], whole: bool| {
        let mut l = msg.to_vec();
        if whole {
            l.push(b'\n');
        }
        out.push_back(l);
        if out.len() > lines {
            out.pop_front();
        }
    };
    for raw in data.split(|&b| b == b'\n') {
        // A cut first line does not parse as a record (it lacks the time) and is skipped.
        if let Some(j) = line::parse(raw).and_then(|rec| joiner.push(rec)) {
            push(j.msg, true);
        }
    }
    for j in joiner.finish() {
        push(j.msg, false);
    }
    let all: Vec<u8> = out.into_iter().flatten().collect();
    let tail = all.get(all.len().saturating_sub(bytes)..).unwrap_or(&all);
    String::from_utf8_lossy(tail).into_owned()
}

#[cfg(test)]
mod tests;
