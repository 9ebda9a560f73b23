//! `/exec`, `/attach` and `/portForward`: the streams behind `kubectl exec`, `attach`
//! and `port-forward`. As kubelet: find the pod (and container) on the node, ask the
//! runtime for a URL on its streaming server (CRI `Exec`, `Attach`, `PortForward`), and
//! proxy the API server's upgraded connection to it: the request line with the URL's
//! path and the upgrade headers go to the runtime, then bytes are relayed both ways
//! ([`super::relay`]) without reading the streaming protocol.
//!
//! Paths and query as kubelet takes them from the API server: `/exec/NS/POD/CONTAINER`
//! (or `/exec/NS/POD/UID/CONTAINER`) with `command` (repeated), `input`, `output`,
//! `error`, `tty` (also spelt `stdin`, `stdout`, `stderr`); `/attach/...` the same
//! without `command`; `/portForward/NS/POD` (or `.../UID`) with optional `port` values (the API server
//! sends them comma-separated in one: `port=80,443`).
//! The runtime's URL must be on loopback; nothing else is dialled.

use super::container_logs::timed;
use super::pod_names::{self, Asked};
use super::{relay, slots, KubeletApi};
use crate::cri::{pb, Code};
use crate::http::accept::Ticket;
use crate::http::query::{boolean, decode, Refused};
use crate::http::{Answer, Head};
use crate::kuberuntime::labels;
use crate::tls::server::TlsConn;
use async_io::{Async, Timer};
use smol::io::AsyncWriteExt;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long connecting to the runtime's streaming server and sending it the request
/// may take.
const DIAL_WAIT: Duration = Duration::from_secs(10);
/// Request headers passed to the runtime: those of the upgrade and protocol choice.
const PASSED: [&str; 3] = ["upgrade", "connection", "x-stream-protocol-version"];

/// Serves an authorized stream request: refused past `apiServer.maxStreams` (`slots`),
/// else the runtime's URL is dialled and the connection relayed until either side
/// closes or `streamingConnectionIdleTimeout` passes with nothing sent.
pub(super) async fn serve(
    conn: &mut TlsConn,
    api: &KubeletApi,
    ticket: &Ticket,
    head: &Head,
    req: StreamRequest,
) -> std::io::Result<()> {
    let idle = api.setting(|c| c.streaming_connection_idle_timeout);
    if !matches!(head.method.as_str(), "GET" | "POST") {
        return timed(Answer::text(405, "only GET and POST are served\n").write_to(conn)).await;
    }
    if req.kind == StreamKind::PortForward && req.ports.is_empty() && websocket(head) {
        // A WebSocket port-forward has a channel pair per port of the query (a SPDY one
        // names its port in each stream's headers): none is kubelet's 400.
        let answer = Answer::text(400, "query parameter \"port\" is required\n");
        return timed(answer.write_to(conn)).await;
    }
    let _slot = match slots::take(api, ticket) {
        Ok(s) => s,
        Err(too_many) => return timed(too_many.write_to(conn)).await,
    };
    let url = match req.url(api).await {
        Ok(u) => u,
        Err(refused) => return timed(refused.answer().write_to(conn)).await,
    };
    let mut runtime = match dial(&url, head).await {
        Ok(r) => r,
        Err(e) => {
            log::warn!("kubelet API: {:?} {}/{}: {e}", req.kind, req.ns, req.pod);
            return timed(Answer::text(500, &format!("{e}\n")).write_to(conn)).await;
        }
    };
    crate::metrics::kubelet_api_stream(true);
    log::info!(
        "kubelet API: {:?} stream to {}/{} {} opened",
        req.kind,
        req.ns,
        req.pod,
        req.container
    );
    let ended = relay::relay(conn, &mut runtime, idle).await;
    log::info!(
        "kubelet API: {:?} stream to {}/{} ended: {ended}",
        req.kind,
        req.ns,
        req.pod
    );
    let _ = runtime.get_ref().shutdown(std::net::Shutdown::Both);
    Ok(())
}

/// Which stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// `/exec`: a command in a container.
    Exec,
    /// `/attach`: a container's own stdio.
    Attach,
    /// `/portForward`: ports of the pod's network namespace.
    PortForward,
}

/// A parsed stream request.
#[derive(Debug, PartialEq)]
pub struct StreamRequest {
    /// Exec, attach or port-forward.
    pub kind: StreamKind,
    /// The pod's namespace.
    pub ns: String,
    /// The pod's name.
    pub pod: String,
    /// The pod's UID when the path names it.
    pub uid: Option<String>,
    /// The container (empty for a port-forward).
    pub container: String,
    /// The command of an exec (`command`, repeated).
    pub cmd: Vec<String>,
    /// Whether the client sends input (`input`, `stdin`).
    pub stdin: bool,
    /// Whether the client wants the output (`output`, `stdout`).
    pub stdout: bool,
    /// Whether the client wants the errors apart (`error`, `stderr`; never with a TTY).
    pub stderr: bool,
    /// Whether a terminal is asked for (`tty`).
    pub tty: bool,
    /// The ports of a port-forward (`port`, repeated).
    pub ports: Vec<i32>,
}

impl StreamRequest {
    /// The request for `path` and `query`; `None` when `path` is not a stream's.
    pub fn parse(path: &str, query: &str) -> Option<Result<StreamRequest, Refused>> {
        let (kind, rest) = if let Some(r) = path.strip_prefix("/exec/") {
            (StreamKind::Exec, r)
        } else if let Some(r) = path.strip_prefix("/attach/") {
            (StreamKind::Attach, r)
        } else if let Some(r) = path.strip_prefix("/portForward/") {
            (StreamKind::PortForward, r)
        } else {
            return None;
        };
        Some(Self::parse_kind(kind, rest, query))
    }

    fn parse_kind(kind: StreamKind, rest: &str, query: &str) -> Result<StreamRequest, Refused> {
        let parts = rest.split('/').map(decode).collect::<Result<Vec<_>, _>>()?;
        let named = |n: &[String]| n.iter().all(|p| !p.is_empty());
        let (ns, pod, uid, container) = match (kind, parts.as_slice()) {
            (StreamKind::PortForward, [ns, pod]) => (ns, pod, None, None),
            (StreamKind::PortForward, [ns, pod, uid]) => (ns, pod, Some(uid), None),
            (StreamKind::PortForward, _) => {
                return Err(Refused(404, "expected /portForward/NAMESPACE/POD".into()))
            }
            (_, [ns, pod, c]) => (ns, pod, None, Some(c)),
            (_, [ns, pod, uid, c]) => (ns, pod, Some(uid), Some(c)),
            _ => {
                return Err(Refused(
                    404,
                    "expected /exec/NAMESPACE/POD/CONTAINER or /attach/NAMESPACE/POD/CONTAINER"
                        .into(),
                ))
            }
        };
        if !named(&parts) {
            return Err(Refused(
                404,
                "namespace, pod and container must be named".into(),
            ));
        }
        let mut r = StreamRequest {
            kind,
            ns: ns.clone(),
            pod: pod.clone(),
            uid: uid.cloned(),
            container: container.cloned().unwrap_or_default(),
            cmd: Vec::new(),
            stdin: false,
            stdout: false,
            stderr: false,
            tty: false,
            ports: Vec::new(),
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            // The API server encodes a query as Go's url.Values: a space is '+', a
            // '+' is %2B.
            let v = decode(&v.replace('+', " "))?;
            match k {
                "command" => r.cmd.push(v),
                "input" | "stdin" => r.stdin = boolean(k, &v)?,
                "output" | "stdout" => r.stdout = boolean(k, &v)?,
                "error" | "stderr" => r.stderr = boolean(k, &v)?,
                "tty" => r.tty = boolean(k, &v)?,
                "port" => r.ports.extend(ports(&v)?),
                _ => {}
            }
        }
        if kind == StreamKind::PortForward {
            return Ok(r);
        }
        if r.tty {
            // One stream carries both with a terminal (kubelet drops stderr too).
            r.stderr = false;
        }
        if !(r.stdin || r.stdout || r.stderr) {
            return Err(Refused(
                400,
                "you must specify at least 1 of stdin, stdout, stderr".into(),
            ));
        }
        if kind == StreamKind::Exec && r.cmd.is_empty() {
            return Err(Refused(400, "command: at least one is required".into()));
        }
        Ok(r)
    }

    /// The runtime's streaming URL for this request.
    async fn url(&self, api: &KubeletApi) -> Result<String, Refused> {
        let uid = self.pod_uid(api)?;
        let mut filter = [(labels::POD_UID.to_string(), uid)].into();
        let rt = &api.ctx.cri.runtime;
        if self.kind == StreamKind::PortForward {
            let f = pb::PodSandboxFilter {
                state: Some(pb::PodSandboxStateValue {
                    state: pb::PodSandboxState::SandboxReady as i32,
                }),
                label_selector: filter,
                ..Default::default()
            };
            let sandboxes = rt.list_pod_sandbox(Some(f)).await.map_err(cri_refused)?;
            let Some(s) = sandboxes.iter().max_by_key(|s| s.created_at) else {
                return Err(Refused(
                    404,
                    format!("pod {}/{} has no ready sandbox", self.ns, self.pod),
                ));
            };
            return rt
                .port_forward(&s.id, self.ports.clone())
                .await
                .map_err(cri_refused);
        }
        filter.insert(labels::CONTAINER_NAME.to_string(), self.container.clone());
        let f = pb::ContainerFilter {
            label_selector: filter,
            ..Default::default()
        };
        let found = rt.list_containers(Some(f)).await.map_err(cri_refused)?;
        let Some(id) = current(&found) else {
            // No ": " in it: kubectl (1.20) reads a body with one as YAML, a map, and
            // shows an empty "Error from server".
            return Err(Refused(
                404,
                format!(
                    "container not found ({:?} in pod {}/{}; no attempt of it is running)",
                    self.container, self.ns, self.pod
                ),
            ));
        };
        let id = id.to_string();
        let (stdin, stdout, stderr, tty) = (self.stdin, self.stdout, self.stderr, self.tty);
        let url = if self.kind == StreamKind::Exec {
            let cmd = self.cmd.clone();
            let req = pb::ExecRequest {
                container_id: id,
                cmd,
                tty,
                stdin,
                stdout,
                stderr,
            };
            rt.exec(req).await
        } else {
            let req = pb::AttachRequest {
                container_id: id,
                stdin,
                tty,
                stdout,
                stderr,
            };
            rt.attach(req).await
        };
        url.map_err(cri_refused)
    }

    /// The uid of the pod the request names ([`pod_names`]); 404 when no pod of the
    /// node is named so (or, for exec and attach, it has no such container).
    fn pod_uid(&self, api: &KubeletApi) -> Result<String, Refused> {
        let pod = api.pod(Asked {
            ns: &self.ns,
            name: &self.pod,
            uid: self.uid.as_deref(),
        })?;
        if self.kind != StreamKind::PortForward {
            pod_names::container(&pod, &self.pod, &self.container)?;
        }
        Ok(pod.metadata.uid.clone())
    }
}

/// The id of the container a stream goes to among the attempts carrying the pod's and
/// container's labels: the running one, as kubelet (it looks only at running
/// containers). Not simply the newest: an exited attempt can be the newest by
/// `created_at` while another runs (a clock set back, as on a gateway without a
/// real-time clock booting before NTP), and exec into it would fail. Two running
/// (briefly, while one is replaced): the newest.
fn current(attempts: &[pb::Container]) -> Option<&str> {
    let running = pb::ContainerState::ContainerRunning as i32;
    attempts
        .iter()
        .filter(|c| c.state == running)
        .max_by_key(|c| c.created_at)
        .map(|c| c.id.as_str())
}

/// The ports of one `port` value: the API server sends every port of a request in one,
/// comma-separated (`port=80,443`); other clients repeat `port` (both are taken).
fn ports(v: &str) -> Result<Vec<i32>, Refused> {
    v.split(',')
        .map(|p| match p.parse::<u16>() {
            Ok(n) if n > 0 => Ok(i32::from(n)),
            _ => Err(Refused(
                400,
                format!("port: expected 1 to 65535 (comma-separated), got {v:?}"),
            )),
        })
        .collect()
}

/// Whether `head` asks to upgrade to a WebSocket.
fn websocket(head: &Head) -> bool {
    head.headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("upgrade") && v.trim().eq_ignore_ascii_case("websocket")
    })
}

/// A runtime error as kubelet answers it: the runtime's message, 404 for `NotFound`.
fn cri_refused(e: crate::cri::CriError) -> Refused {
    let status = if e.code == Code::NotFound { 404 } else { 500 };
    Refused(status, e.to_string())
}

/// Why the runtime's streaming server could not be reached.
#[derive(Debug)]
pub struct DialError(String);

impl std::fmt::Display for DialError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DialError {}

/// Connects to `url` (`http://` on loopback only) and sends the request: `head`'s method,
/// the URL's path, the upgrade headers, then what the client sent past its head.
pub async fn dial(url: &str, head: &Head) -> Result<Async<TcpStream>, DialError> {
    let (addr, path) = loopback(url)?;
    let mut req = format!("{} {path} HTTP/1.1\r\nHost: {addr}\r\n", head.method);
    for (name, value) in &head.headers {
        let lower = name.to_ascii_lowercase();
        if PASSED.contains(&lower.as_str()) || lower.starts_with("sec-websocket-") {
            req.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    req.push_str("\r\n");
    let send = async {
        let mut s = Async::<TcpStream>::connect(addr).await?;
        s.write_all(req.as_bytes()).await?;
        s.write_all(&head.early).await?;
        s.flush().await?;
        Ok::<_, std::io::Error>(s)
    };
    let late = async {
        Timer::after(DIAL_WAIT).await;
        Err(std::io::ErrorKind::TimedOut.into())
    };
    smol::future::or(send, late)
        .await
        .map_err(|e| DialError(format!("runtime streaming server {addr}: {e}")))
}

/// The address and path of an `http://` URL on a loopback address.
fn loopback(url: &str) -> Result<(SocketAddr, &str), DialError> {
    let bad = || {
        DialError(format!(
            "runtime streaming URL {url:?}: expected http://LOOPBACK:PORT/..."
        ))
    };
    let rest = url.strip_prefix("http://").ok_or_else(bad)?;
    let (host, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
    let addr: SocketAddr = host.parse().map_err(|_| bad())?;
    if !addr.ip().is_loopback() {
        return Err(bad());
    }
    Ok((addr, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(path: &str, query: &str) -> Result<StreamRequest, Refused> {
        StreamRequest::parse(path, query).unwrap()
    }

    #[test]
    fn exec_takes_kubelets_query() {
        let r = parse(
            "/exec/ns/p/c",
            "command=sh&command=-c&command=echo+hi%2B1&input=1&output=1&error=1&tty=0",
        )
        .unwrap();
        assert_eq!(r.kind, StreamKind::Exec);
        assert_eq!(
            (r.ns.as_str(), r.pod.as_str(), r.container.as_str()),
            ("ns", "p", "c")
        );
        assert_eq!(r.cmd, ["sh", "-c", "echo hi+1"]);
        assert!(r.stdin && r.stdout && r.stderr && !r.tty);
        let r = parse(
            "/exec/ns/p/uid-1/c",
            "command=ls&stdout=true&tty=1&stderr=1",
        )
        .unwrap();
        assert_eq!(r.uid.as_deref(), Some("uid-1"));
        assert!(
            r.stdout && r.tty && !r.stderr,
            "a tty has no separate stderr"
        );
        assert!(StreamRequest::parse("/containerLogs/a/b/c", "").is_none());
    }

    #[test]
    fn bad_stream_requests_are_refused() {
        let cases = [
            ("/exec/ns/p", "command=ls&output=1", 404),
            ("/exec/ns//c", "command=ls&output=1", 404),
            ("/exec/ns/p/c", "command=ls", 400),
            ("/exec/ns/p/c", "output=1", 400),
            ("/exec/ns/p/c", "command=ls&output=maybe", 400),
            ("/attach/ns/p/c/d/e", "output=1", 404),
            ("/portForward/ns/p/u/x", "", 404),
            ("/portForward/ns/p", "port=0", 400),
            ("/portForward/ns/p", "port=70000", 400),
        ];
        for (path, query, status) in cases {
            let e = parse(path, query).unwrap_err();
            assert_eq!(e.0, status, "{path}?{query}: {e:?}");
        }
        let r = parse("/portForward/ns/p", "port=80&port=8080").unwrap();
        assert_eq!(r.ports, [80, 8080]);
        // As the API server sends them: one value, comma-separated (%2C encoded too).
        let r = parse("/portForward/ns/p", "port=80,443").unwrap();
        assert_eq!(r.ports, [80, 443]);
        let r = parse("/portForward/ns/p", "port=80%2C443&port=8080").unwrap();
        assert_eq!(r.ports, [80, 443, 8080]);
        for bad in ["port=", "port=80,", "port=,80", "port=80,,443", "port=80,x"] {
            let e = parse("/portForward/ns/p", bad).unwrap_err();
            assert_eq!(e.0, 400, "{bad}: {e:?}");
        }
        let r = parse("/attach/ns/p/c", "input=1&output=1").unwrap();
        assert_eq!(r.kind, StreamKind::Attach);
    }

    #[test]
    fn the_running_attempt_is_picked_not_the_newest() {
        let attempt = |id: &str, state: pb::ContainerState, created_at: i64| pb::Container {
            id: id.into(),
            state: state as i32,
            created_at,
            ..Default::default()
        };
        use pb::ContainerState::*;
        // The exited attempt is the newest (a clock set back between the two).
        let found = [
            attempt("old-running", ContainerRunning, 100),
            attempt("new-exited", ContainerExited, 200),
            attempt("made", ContainerCreated, 300),
        ];
        assert_eq!(current(&found), Some("old-running"));
        let found = [
            attempt("a", ContainerRunning, 100),
            attempt("b", ContainerRunning, 200),
            attempt("c", ContainerExited, 50),
        ];
        assert_eq!(current(&found), Some("b"));
        let none = [
            attempt("x", ContainerExited, 1),
            attempt("y", ContainerUnknown, 2),
        ];
        assert_eq!(current(&none), None);
        assert_eq!(current(&[]), None);
    }

    #[test]
    fn only_loopback_urls_are_dialled() {
        let (a, p) = loopback("http://127.0.0.1:4100/exec/abc").unwrap();
        assert_eq!((a.port(), p), (4100, "/exec/abc"));
        let (a, p) = loopback("http://[::1]:9/portforward/x").unwrap();
        assert!(a.ip().is_loopback() && p == "/portforward/x");
        for bad in [
            "http://10.0.0.1:4100/exec/abc",
            "https://127.0.0.1:1/x",
            "http://localhost:1/x",
            "http://127.0.0.1/x",
        ] {
            assert!(loopback(bad).is_err(), "{bad}");
        }
    }
}
