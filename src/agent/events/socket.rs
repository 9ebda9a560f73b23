//! The agent's pod events for `tinylet describe pod`: asked for on a Unix socket in the
//! abstract namespace, answered from the agent's memory.
//!
//! Why so: the events never reach a file (flash wears with every write), so only the
//! agent has them. The status endpoint is optional (off unless `statusAddress`), TCP,
//! may face the network and has no authentication; a socket file would be one more
//! write into the state directory at every start. An abstract socket writes nothing,
//! needs no setting, and the kernel tells each side who the other is (`SO_PEERCRED`):
//! the agent answers only root and the owner of its state directory (who may read the
//! status files anyway), and the CLI believes only the process that holds the state
//! directory's agent lock, so a process that took the name first is not taken for the
//! agent. The name comes from the state
//! directory's device and inode: agents of different state directories on one host do
//! not meet, whatever path names the directory. (Abstract names belong to a network
//! namespace: the CLI must run in the agent's.)
//!
//! The exchange: one line `events NAMESPACE NAME [UID]` (at most [`MAX_REQUEST`] bytes),
//! answered by one JSON object per event ([`Shown`]), in the order they last happened,
//! then the agent closes. One connection at a time, each within [`DEADLINE`]: a client
//! that stalls holds the socket that long at most, and the agent's memory for it is
//! one request and one event line.

use super::{Event, Recorder, MAX_EVENTS};
use crate::model::time::format_rfc3339;
use async_io::{Async, Timer};
use serde::{Deserialize, Serialize};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

/// The longest request accepted.
const MAX_REQUEST: usize = 512;
/// Time one exchange may take, on either side.
pub const DEADLINE: Duration = Duration::from_secs(2);
/// The longest message sent per event (longer ones are cut).
const MAX_MESSAGE: usize = 1024;
/// The longest answer line the CLI reads.
const MAX_LINE: usize = 4096;

/// One event as `tinylet describe` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Shown {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// kubelet's reason (`Failed`, `BackOff`, ...).
    pub reason: String,
    /// What happened (the latest message).
    pub message: String,
    /// Times it happened.
    pub count: u32,
    /// RFC 3339, the first time.
    pub first_timestamp: String,
    /// RFC 3339, the last time.
    pub last_timestamp: String,
    /// `spec.containers{NAME}`, or empty for the pod.
    #[serde(default)]
    pub field_path: String,
}

impl Shown {
    fn of(e: &Event) -> Shown {
        let mut message = e.message.clone();
        if message.len() > MAX_MESSAGE {
            let mut cut = MAX_MESSAGE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        Shown {
            type_: if e.warning { "Warning" } else { "Normal" }.into(),
            reason: e.reason.into(),
            message,
            count: e.count,
            first_timestamp: format_rfc3339(e.first),
            last_timestamp: format_rfc3339(e.last),
            field_path: e.field_path.clone(),
        }
    }
}

/// The socket's name for the agent of `state_dir`, and the directory's owner.
fn address(state_dir: &Path) -> io::Result<(SocketAddr, u32)> {
    let m = std::fs::metadata(state_dir)?;
    let name = format!("tinylet-events/{:x}/{:x}", m.dev(), m.ino());
    Ok((SocketAddr::from_abstract_name(name.as_bytes())?, m.uid()))
}

/// Whether the process at the other end of `s` is root or `owner`.
fn trusted(s: impl AsFd, owner: u32) -> bool {
    rustix::net::sockopt::socket_peercred(s)
        .is_ok_and(|c| c.uid.is_root() || c.uid.as_raw() == owner)
}

/// Whether the process at the other end of `s` holds `state_dir`'s agent lock: only the
/// agent of that directory does, so a process that took the socket's name first (a root
/// pod in the host's network namespace) is not believed.
fn is_the_agent(s: impl AsFd, state_dir: &Path) -> bool {
    let Ok(peer) = rustix::net::sockopt::socket_peercred(s) else {
        return false;
    };
    let holder = std::fs::File::open(state_dir)
        .ok()
        .and_then(|d| crate::store::agent_lock::holder_of_file(&d));
    holder.is_some_and(|(pid, _)| i64::from(pid) == i64::from(peer.pid.as_raw_nonzero().get()))
}

/// Answers for the events of the agent of `state_dir` (`events` of `holder`: the
/// agent's shared state) for as long as it runs. A socket that cannot be had is logged
/// and the agent goes on without it: its pods matter more.
pub fn start<T: 'static>(state_dir: &Path, holder: Rc<T>, events: fn(&T) -> &Recorder) {
    let bound = address(state_dir)
        .and_then(|(addr, owner)| Ok((Async::new(UnixListener::bind_addr(&addr)?)?, owner)));
    match bound {
        Ok((listener, owner)) => {
            crate::rt::spawn(serve(listener, owner, holder, events)).detach();
        }
        Err(e) => log::warn!("events socket: {e}; `tinylet describe` shows no events"),
    }
}

/// Accepts one connection at a time, each within [`DEADLINE`].
async fn serve<T>(
    listener: Async<UnixListener>,
    owner: u32,
    holder: Rc<T>,
    events: fn(&T) -> &Recorder,
) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let timeout = async {
                    Timer::after(DEADLINE).await;
                    Ok(())
                };
                let answered = answer(stream, owner, events(&holder));
                if let Err(e) = smol::future::or(answered, timeout).await {
                    log::debug!("events socket: {e}");
                }
            }
            Err(e) => {
                // Out of descriptors, say: no busy loop while it lasts.
                log::debug!("events socket: {e}");
                Timer::after(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Answers one connection: the events of the pod its request names.
async fn answer(mut s: Async<UnixStream>, owner: u32, events: &Recorder) -> io::Result<()> {
    if !trusted(s.get_ref(), owner) {
        return Ok(());
    }
    let request = read_request(&mut s).await?;
    let Some((ns, name, uid)) = parse_request(&request) else {
        return Ok(());
    };
    for e in events.for_pod(ns, name, uid) {
        let mut line = serde_json::to_vec(&Shown::of(&e))?;
        line.push(b'\n');
        s.write_all(&line).await?;
    }
    Ok(())
}

/// The request's first line, read until its newline, the peer's end or
/// [`MAX_REQUEST`] bytes.
async fn read_request(s: &mut Async<UnixStream>) -> io::Result<String> {
    let mut buf = [0u8; MAX_REQUEST];
    let mut n = 0;
    while n < buf.len() && !buf[..n].contains(&b'\n') {
        match s.read(&mut buf[n..]).await? {
            0 => break,
            got => n += got,
        }
    }
    let line = buf[..n].split(|b| *b == b'\n').next().unwrap_or_default();
    Ok(String::from_utf8_lossy(line).into_owned())
}

/// `events NAMESPACE NAME [UID]`.
fn parse_request(line: &str) -> Option<(&str, &str, &str)> {
    let mut words = line.split(' ');
    if words.next()? != "events" {
        return None;
    }
    let (ns, name, uid) = (words.next()?, words.next()?, words.next().unwrap_or(""));
    words.next().is_none().then_some((ns, name, uid))
}

/// Why the agent's events cannot be shown.
#[derive(Debug)]
pub enum Unavailable {
    /// No agent runs on this state directory.
    NotRunning,
    /// What answered is neither root nor the state directory's owner.
    Untrusted,
    /// The exchange failed.
    Failed(String),
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::NotRunning => {
                f.write_str("the agent is not running (its events are kept in its memory only)")
            }
            Unavailable::Untrusted => {
                f.write_str("the agent's socket is held by another user's process; not read")
            }
            Unavailable::Failed(e) => write!(f, "asking the agent failed: {e}"),
        }
    }
}

/// The events the agent of `state_dir` keeps for pod `ns/name` (`uid`: that instance of
/// it), in the order they last happened. Blocking, within [`DEADLINE`] per read or write.
pub fn fetch(state_dir: &Path, ns: &str, name: &str, uid: &str) -> Result<Vec<Shown>, Unavailable> {
    let failed = |e: io::Error| Unavailable::Failed(e.to_string());
    let (addr, owner) = address(state_dir).map_err(|_| Unavailable::NotRunning)?;
    let mut s = UnixStream::connect_addr(&addr).map_err(|e| match e.kind() {
        io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound => Unavailable::NotRunning,
        _ => failed(e),
    })?;
    if !trusted(&s, owner) || !is_the_agent(&s, state_dir) {
        return Err(Unavailable::Untrusted);
    }
    s.set_read_timeout(Some(DEADLINE)).map_err(failed)?;
    s.set_write_timeout(Some(DEADLINE)).map_err(failed)?;
    s.write_all(format!("events {ns} {name} {uid}\n").as_bytes())
        .map_err(failed)?;
    let mut reader = BufReader::new(s);
    let mut out = Vec::new();
    let mut line = Vec::new();
    while out.len() < MAX_EVENTS {
        line.clear();
        let n = (&mut reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
            .map_err(failed)?;
        if n == 0 {
            break;
        }
        let shown = serde_json::from_slice(&line).map_err(|e| failed(e.into()))?;
        out.push(shown);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_strictly() {
        assert_eq!(parse_request("events ns web u1"), Some(("ns", "web", "u1")));
        assert_eq!(parse_request("events ns web"), Some(("ns", "web", "")));
        for bad in [
            "",
            "events",
            "events ns",
            "evil ns web",
            "events ns web u1 extra",
        ] {
            assert_eq!(parse_request(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_agent_answers_its_own_user_with_the_pods_events_only() {
        let dir = std::env::temp_dir().join(format!("tinylet-events-sock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(matches!(
            fetch(&dir, "ns", "a", ""),
            Err(Unavailable::NotRunning)
        ));
        let events = Rc::new(Recorder::default());
        let mut pod = crate::model::Pod::default();
        pod.metadata.namespace = "ns".into();
        pod.metadata.name = "a".into();
        pod.metadata.uid = "u".into();
        let long = "x".repeat(MAX_MESSAGE * 2);
        events.record(&pod, "app", true, "Failed", long);
        events.record(&pod, "app", true, "Failed", "pull failed".into());
        pod.metadata.name = "b".into();
        events.record(&pod, "", false, "Started", "other pod".into());
        let (addr, owner) = address(&dir).unwrap();
        let listener = Async::new(UnixListener::bind_addr(&addr).unwrap()).unwrap();
        // Whoever holds the name is believed only while it holds the agent's lock.
        assert!(matches!(
            fetch(&dir, "ns", "a", "u"),
            Err(Unavailable::Untrusted)
        ));
        crate::rt::block_on(async { drop(listener.accept().await.unwrap()) });
        let _lock = crate::store::agent_lock::acquire(&dir).unwrap();
        let client = std::thread::spawn({
            let dir = dir.clone();
            move || fetch(&dir, "ns", "a", "u")
        });
        crate::rt::block_on(async {
            let (stream, _) = listener.accept().await.unwrap();
            answer(stream, owner, &events).await.unwrap();
        });
        let shown = client.join().unwrap().unwrap();
        assert_eq!(shown.len(), 2);
        assert_eq!(shown[0].message.len(), MAX_MESSAGE, "cut");
        assert_eq!(
            (
                shown[1].type_.as_str(),
                shown[1].reason.as_str(),
                shown[1].message.as_str()
            ),
            ("Warning", "Failed", "pull failed")
        );
        assert_eq!(shown[1].field_path, "spec.containers{app}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
