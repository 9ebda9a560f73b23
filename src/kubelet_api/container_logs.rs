//! `GET /containerLogs/NS/POD/CONTAINER`: a container's log as kubelet serves it to the
//! API server (what `kubectl logs` shows): plain text, the query's `follow`, `previous`,
//! `timestamps`, `tailLines`, `limitBytes`, `sinceSeconds`/`sinceTime`. The body is
//! chunked; while following, lines go out as the container writes them (checked every
//! `FOLLOW_POLL`) until the container is gone (a newer instance started, its status is
//! no longer running, or the pod left the node) or the client goes.
//!
//! Read with `crate::logs` (as `tinylet logs`), a bounded piece at a time.

use super::pod_names::{self, Asked};
use super::KubeletApi;
use crate::config::Config;
use crate::http;
use crate::http::query::{boolean, decode, number, Refused};
use crate::logs::files;
use crate::logs::read::{LogStream, ReadOptions, Step, FOLLOW_POLL};
use crate::model::Pod;
use async_io::Timer;
use smol::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Bytes read from the files and written per step.
const PIECE: usize = 32 << 10;
/// How long one write may wait for a slow client.
pub const WRITE_WAIT: Duration = Duration::from_secs(30);

/// What is asked: the container and kubelet's `PodLogOptions`.
#[derive(Debug, Default)]
pub struct LogRequest {
    /// The pod's namespace.
    pub ns: String,
    /// The pod's name.
    pub pod: String,
    /// The container.
    pub container: String,
    /// `follow`: lines as they are written, until the container is gone.
    pub follow: bool,
    /// `previous`: the instance before the current one.
    pub previous: bool,
    /// `limitBytes`.
    pub limit_bytes: Option<u64>,
    /// `tailLines`, `timestamps`, `sinceSeconds` / `sinceTime`.
    pub read: ReadOptions,
}

impl LogRequest {
    /// Parses the path after `/containerLogs/` and the query.
    pub fn parse(rest: &str, query: &str) -> Result<LogRequest, Refused> {
        let parts: Vec<&str> = rest.split('/').collect();
        let [ns, pod, container] = parts.as_slice() else {
            return Err(Refused(
                404,
                "expected /containerLogs/NAMESPACE/POD/CONTAINER".into(),
            ));
        };
        if [ns, pod, container].iter().any(|p| p.is_empty()) {
            return Err(Refused(
                404,
                "namespace, pod and container must be named".into(),
            ));
        }
        let mut r = LogRequest {
            ns: decode(ns)?,
            pod: decode(pod)?,
            container: decode(container)?,
            ..LogRequest::default()
        };
        let mut since_seconds = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = decode(v)?;
            match k {
                "follow" => r.follow = boolean(k, &v)?,
                "previous" => r.previous = boolean(k, &v)?,
                "timestamps" => r.read.timestamps = boolean(k, &v)?,
                "tailLines" => {
                    r.read.tail = Some(number(k, &v, 0)?.try_into().unwrap_or(usize::MAX))
                }
                "limitBytes" => r.limit_bytes = Some(number(k, &v, 1)?),
                "sinceSeconds" => since_seconds = Some(number(k, &v, 1)?),
                "sinceTime" => {
                    let t = crate::model::time::parse_rfc3339(&v)
                        .map_err(|e| Refused::bad(format!("sinceTime: {e}")))?;
                    r.read.since = Some(t);
                }
                _ => {} // kubelet ignores what it does not know (e.g. insecureSkipTLSVerify)
            }
        }
        if let Some(s) = since_seconds {
            if r.read.since.is_some() {
                return Err(Refused::bad(
                    "at most one of sinceTime or sinceSeconds may be specified".into(),
                ));
            }
            let ago = SystemTime::now().checked_sub(Duration::from_secs(s));
            r.read.since = Some(ago.unwrap_or(SystemTime::UNIX_EPOCH));
        }
        Ok(r)
    }

    /// Whether the log is followed (a long-lived request: `super::slots`).
    pub fn follows(&self) -> bool {
        self.follow && !self.previous
    }

    /// The pod and container the request names ([`pod_names`]).
    fn pod(&self, api: &KubeletApi) -> Result<Box<Pod>, Refused> {
        let pod = api.pod(Asked {
            ns: &self.ns,
            name: &self.pod,
            uid: None,
        })?;
        pod_names::container(&pod, &self.pod, &self.container)?;
        Ok(pod)
    }

    /// The files to read, from the pod's log directory (`pod` as the store names it:
    /// a local pod under its own name, not its mirror's).
    fn files(&self, cfg: &Config, pod: &Pod) -> Result<(PathBuf, u32, Vec<PathBuf>), Refused> {
        let (c, name) = (&self.container, &self.pod);
        let m = &pod.metadata;
        let dir = cfg
            .pod_logs_dir
            .join(format!("{}_{}_{}", m.namespace, m.name, m.uid))
            .join(c);
        let io_error = |e: std::io::Error| Refused(500, format!("{}: {e}", dir.display()));
        let instance = match files::pick_instance(&dir, self.previous).map_err(io_error)? {
            Some(n) => n,
            None if self.previous => {
                return Err(Refused::bad(format!(
                    "previous terminated container {c:?} in pod {name:?} not found"
                )))
            }
            None => {
                return Err(Refused::bad(format!(
                    "container {c:?} in pod {name:?} is waiting to start: no logs yet"
                )))
            }
        };
        let list = files::instance_files(&dir, instance).map_err(io_error)?;
        Ok((dir, instance, list))
    }

    /// Whether the followed instance of `pod`'s container is gone: a newer one started,
    /// the pod left the node, or its status no longer says running.
    fn gone(&self, api: &KubeletApi, pod: &Pod, dir: &std::path::Path, instance: u32) -> bool {
        if files::newer_instance(dir, instance) || !dir.exists() {
            return true;
        }
        let m = &pod.metadata;
        let status = api.ctx.store.borrow().read_status(&m.namespace, &m.name);
        let Some(status) = status else {
            return true;
        };
        let running = status
            .container_statuses
            .iter()
            .chain(&status.init_container_statuses)
            .find(|s| s.name == self.container)
            .is_some_and(|s| s.state.running.is_some());
        !running
    }
}

/// Serves the request on `stream`: an error answer, or the log as a chunked body.
pub(super) async fn serve<S>(
    stream: &mut S,
    api: &KubeletApi,
    req: &LogRequest,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let found = req
        .pod(api)
        .and_then(|pod| Ok((req.files(&api.ctx.cfg, &pod)?, pod)));
    let ((dir, instance, list), pod) = match found {
        Ok(f) => f,
        Err(refused) => return refused.answer().write_to(stream).await,
    };
    let follow = req.follows();
    let mut logs = match LogStream::new(list, &req.read, follow) {
        Ok(s) => s,
        Err(e) => return Refused(500, e.to_string()).answer().write_to(stream).await,
    };
    timed(http::start_chunked(stream, "text/plain")).await?;
    let mut left = req.limit_bytes.unwrap_or(u64::MAX);
    let mut piece = Vec::with_capacity(PIECE);
    while left > 0 {
        piece.clear();
        let step = logs.fill(&mut piece, PIECE)?;
        let n = piece.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        timed(http::write_chunk(stream, &piece[..n])).await?;
        left -= n as u64;
        match step {
            Step::More => {}
            Step::End => break,
            Step::Idle => {
                if req.gone(api, &pod, &dir, instance) {
                    // What the container wrote last is read before ending.
                    piece.clear();
                    let _ = logs.fill(&mut piece, PIECE)?;
                    let n = piece.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    timed(http::write_chunk(stream, &piece[..n])).await?;
                    break;
                }
                if client_left(stream).await {
                    return Ok(());
                }
            }
        }
    }
    timed(http::end_chunks(stream)).await
}

/// Waits [`FOLLOW_POLL`]; true when the client closed (or wrote) meanwhile.
async fn client_left<S: AsyncRead + Unpin>(stream: &mut S) -> bool {
    let mut byte = [0u8; 1];
    let read = async { Some(stream.read(&mut byte).await) };
    let wait = async {
        Timer::after(FOLLOW_POLL).await;
        None
    };
    // A client has nothing to send after its request: data is as good as a close.
    smol::future::or(read, wait).await.is_some()
}

/// A write that fails when the client does not take it within [`WRITE_WAIT`].
pub async fn timed(
    write: impl std::future::Future<Output = std::io::Result<()>>,
) -> std::io::Result<()> {
    let late = async {
        Timer::after(WRITE_WAIT).await;
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "client too slow",
        ))
    };
    smol::future::or(write, late).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectls_query_is_read() {
        let r = LogRequest::parse(
            "ns/p/c",
            "follow=true&tailLines=10&limitBytes=500&timestamps=true&previous=false",
        )
        .unwrap();
        assert_eq!(
            (r.ns.as_str(), r.pod.as_str(), r.container.as_str()),
            ("ns", "p", "c")
        );
        assert!(r.follow && r.read.timestamps && !r.previous);
        assert_eq!((r.read.tail, r.limit_bytes), (Some(10), Some(500)));
        let t = LogRequest::parse("ns/p/c", "sinceTime=2026-12-04T10%3A00%3A00Z").unwrap();
        assert_eq!(
            t.read.since,
            Some(crate::model::time::parse_rfc3339("2026-12-04T10:00:00Z").unwrap())
        );
        assert!(LogRequest::parse("ns/p/c", "sinceSeconds=60")
            .unwrap()
            .read
            .since
            .is_some());
    }

    #[test]
    fn bad_requests_are_refused_with_the_field() {
        for (rest, q, code) in [
            ("ns/p", "", 404),
            ("ns/p/c/x", "", 404),
            ("ns//c", "", 404),
            ("ns/p/c", "tailLines=-1", 400),
            ("ns/p/c", "limitBytes=0", 400),
            ("ns/p/c", "follow=maybe", 400),
            ("ns/p/c", "sinceTime=yesterday", 400),
            (
                "ns/p/c",
                "sinceSeconds=5&sinceTime=2026-12-04T10:00:00Z",
                400,
            ),
            ("ns/p%zz/c", "", 400),
            ("ns/p%ff/c", "", 400),
        ] {
            let e = LogRequest::parse(rest, q).unwrap_err();
            assert_eq!(e.0, code, "{rest}?{q}: {e:?}");
        }
    }
}
