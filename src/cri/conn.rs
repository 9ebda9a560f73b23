//! [`Channel`]: unary gRPC calls to one CRI endpoint over one shared HTTP/2 connection.
//!
//! The connection is made on the first call and shared by every clone of the channel;
//! calls run concurrently as HTTP/2 streams. When it breaks (runtime restarted, socket
//! removed, GOAWAY, garbage on the wire) the calls in flight fail with `Unavailable`, the
//! connection is dropped, and the next call connects again. Failed connection attempts
//! are spaced by a backoff (see [`super::backoff`]); calls made meanwhile fail at once.
//!
//! Everything runs on the thread's executor ([`crate::rt`]): the h2 connection is a task
//! spawned there, so a `Channel` must be used inside [`crate::rt::block_on`].

use super::backoff::Backoff;
use super::deadline::Deadlines;
use super::error::{Code, CriError};
use super::grpc;
use super::io::TokioIo;
use super::response;
use async_io::Async;
use bytes::Bytes;
use h2::client::{Connection, ResponseFuture, SendRequest};
use std::cell::RefCell;
use std::fmt;
use std::future::{poll_fn, Future};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

/// Receive limit per response message, as kubelet's CRI client (16 MiB).
pub const DEFAULT_MAX_RECV_SIZE: usize = 16 << 20;

/// Largest response header block accepted; gRPC statuses and messages fit easily.
const MAX_HEADER_LIST_SIZE: u32 = 64 << 10;

/// Longest path a Unix socket address can hold (`sun_path` minus the NUL).
const MAX_SOCKET_PATH: usize = 107;

/// A CRI endpoint and its (lazily made, shared) connection. Cheap to clone; `!Send`.
#[derive(Clone)]
pub struct Channel {
    shared: Rc<Shared>,
    max_recv: usize,
}

/// What the clones of a channel share.
struct Shared {
    endpoint: String,
    path: PathBuf,
    state: RefCell<State>,
    /// Held while connecting, so concurrent first calls share one connection.
    connecting: smol::lock::Mutex<()>,
    /// The deadlines of the calls in flight, watched by one timer.
    deadlines: Rc<Deadlines>,
}

#[derive(Default)]
struct State {
    live: Option<Live>,
    generations: u64,
    backoff: Backoff,
}

/// The current connection.
struct Live {
    sender: SendRequest<Bytes>,
    generation: u64,
    /// The runtime answered at least one call on it.
    answered: bool,
}

type H2Connection = Connection<TokioIo<UnixStream>, Bytes>;

impl Channel {
    /// A channel to `endpoint`: `unix:///path/to.sock` or a bare socket path. Only
    /// parses; nothing is connected until the first call.
    pub fn new(endpoint: &str) -> Result<Channel, CriError> {
        let path = parse_endpoint(endpoint)
            .map_err(|e| CriError::new(Code::InvalidArgument, "", e.to_string()))?;
        Ok(Channel {
            shared: Rc::new(Shared {
                endpoint: endpoint.to_string(),
                path,
                state: RefCell::default(),
                connecting: smol::lock::Mutex::new(()),
                deadlines: Rc::default(),
            }),
            max_recv: DEFAULT_MAX_RECV_SIZE,
        })
    }

    /// The endpoint as given to [`Channel::new`].
    pub fn endpoint(&self) -> &str {
        &self.shared.endpoint
    }

    /// Sets the largest response message this handle accepts (default 16 MiB); larger
    /// answers fail with `ResourceExhausted`.
    pub fn set_max_recv_size(&mut self, bytes: usize) {
        self.max_recv = bytes;
    }

    /// Calls `method` (full path, `/runtime.v1.RuntimeService/Version`) with `req`.
    ///
    /// With a `timeout`, the whole call (connecting included) is bounded: past it the
    /// stream is cancelled and the call fails with `DeadlineExceeded`; the server is
    /// told the deadline through `grpc-timeout`.
    ///
    /// Only the message encoding and decoding here is generic: everything else is in
    /// [`Channel::call`], compiled once for all message types.
    pub async fn unary<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        method: &'static str,
        req: &Req,
        timeout: Option<Duration>,
    ) -> Result<Resp, CriError> {
        let message = self.unary_bytes(method, req, timeout).await?;
        Resp::decode(message).map_err(|e| decode_error(method, e))
    }

    /// [`Channel::unary`] without decoding: the response message's bytes.
    pub async fn unary_bytes<Req: prost::Message>(
        &self,
        method: &'static str,
        req: &Req,
        timeout: Option<Duration>,
    ) -> Result<Bytes, CriError> {
        let body = grpc::encode_frame(req)
            .map_err(|e| CriError::new(Code::Internal, method, e.to_string()))?;
        self.call(method, body, timeout).await
    }

    /// Makes one call with an encoded request frame and returns the answer's message
    /// bytes, within the deadline `timeout` if given; counts it in [`crate::metrics`].
    async fn call(
        &self,
        method: &'static str,
        body: Bytes,
        timeout: Option<Duration>,
    ) -> Result<Bytes, CriError> {
        let start = Instant::now();
        let result = self.call_within(method, body, timeout).await;
        let code = result.as_ref().map_or_else(|e| e.code(), |_| Code::Ok);
        crate::metrics::cri_call(method, code.as_str(), start.elapsed());
        result
    }

    async fn call_within(
        &self,
        method: &'static str,
        body: Bytes,
        timeout: Option<Duration>,
    ) -> Result<Bytes, CriError> {
        let mut exchange = pin!(self.exchange(method, body, timeout));
        let Some((t, at)) = timeout.and_then(|t| Some((t, Instant::now().checked_add(t)?))) else {
            return exchange.await;
        };
        let deadline = self.shared.deadlines.entry(at);
        poll_fn(|cx| {
            if let Poll::Ready(result) = exchange.as_mut().poll(cx) {
                return Poll::Ready(result);
            }
            if deadline.expired(cx) {
                let msg = format!("no answer within {t:?}");
                return Poll::Ready(Err(CriError::new(Code::DeadlineExceeded, method, msg)));
            }
            Poll::Pending
        })
        .await
    }

    /// Sends the request and reads the answer's message bytes.
    async fn exchange(
        &self,
        method: &'static str,
        body: Bytes,
        timeout: Option<Duration>,
    ) -> Result<Bytes, CriError> {
        let fail = |(code, msg): (Code, String)| CriError::new(code, method, msg);
        let (response, generation) = self.send(method, timeout, body).await?;
        let response = response.await.map_err(|e| fail(response::h2_refusal(&e)))?;
        self.shared.answered(generation);
        response::read_unary(response, self.max_recv)
            .await
            .map_err(fail)
    }

    /// Opens the call's stream and sends the request. A connection found dead before
    /// the request left (it broke while idle) is replaced once, transparently.
    async fn send(
        &self,
        method: &'static str,
        timeout: Option<Duration>,
        body: Bytes,
    ) -> Result<(ResponseFuture, u64), CriError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let head = grpc::request_head(method, timeout)
                .map_err(|m| CriError::new(Code::Internal, method, m.to_string()))?;
            let (sender, generation) = self.shared.connection(method).await?;
            match start(sender, head, body.clone()).await {
                Ok(response) => return Ok((response, generation)),
                Err(e) => {
                    log::debug!("{}: connection unusable: {e}", self.shared.endpoint);
                    let clean = e.is_go_away() && e.reason() == Some(h2::Reason::NO_ERROR);
                    self.shared.forget(generation, clean);
                    if attempt >= 2 {
                        let (code, msg) = response::h2_refusal(&e);
                        return Err(CriError::new(code, method, msg));
                    }
                }
            }
        }
    }
}

/// The error for an answer that is not the expected message.
fn decode_error(method: &'static str, e: prost::DecodeError) -> CriError {
    let msg = format!("decoding the response: {e}");
    CriError::new(Code::Internal, method, msg)
}

/// Waits for room for a new stream, then sends the head and the whole body.
async fn start(
    sender: SendRequest<Bytes>,
    head: http::Request<()>,
    body: Bytes,
) -> Result<ResponseFuture, h2::Error> {
    let mut sender = sender.ready().await?;
    let (response, mut stream) = sender.send_request(head, false)?;
    stream.send_data(body, true)?;
    Ok(response)
}

impl Shared {
    /// The live connection, connecting first if there is none (and the backoff allows).
    async fn connection(
        self: &Rc<Self>,
        method: &'static str,
    ) -> Result<(SendRequest<Bytes>, u64), CriError> {
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let _connecting = self.connecting.lock().await;
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let unavailable = |msg: String| CriError::new(Code::Unavailable, method, msg);
        if let Err((wait, why)) = self.state.borrow().backoff.check(Instant::now()) {
            return Err(unavailable(format!(
                "{}: not connected ({why}); next attempt in {wait:?}",
                self.endpoint
            )));
        }
        match connect(&self.path).await {
            Ok((sender, connection)) => Ok(self.install(sender, connection)),
            Err(e) => {
                let why = format!("connecting to {}: {e}", self.path.display());
                log::debug!("{}: {why}", self.endpoint);
                self.state
                    .borrow_mut()
                    .backoff
                    .failed(Instant::now(), why.clone());
                Err(unavailable(why))
            }
        }
    }

    fn current(&self) -> Option<(SendRequest<Bytes>, u64)> {
        let state = self.state.borrow();
        let live = state.live.as_ref()?;
        Some((live.sender.clone(), live.generation))
    }

    /// Makes a fresh connection the current one and spawns the task driving it; the
    /// task forgets the connection when it ends.
    fn install(
        self: &Rc<Self>,
        sender: SendRequest<Bytes>,
        connection: H2Connection,
    ) -> (SendRequest<Bytes>, u64) {
        let mut state = self.state.borrow_mut();
        state.generations += 1;
        let generation = state.generations;
        state.live = Some(Live {
            sender: sender.clone(),
            generation,
            answered: false,
        });
        log::debug!("{}: connected", self.endpoint);
        let shared = Rc::downgrade(self);
        let endpoint = self.endpoint.clone();
        crate::rt::spawn(async move {
            let clean = match connection.await {
                Ok(()) => {
                    log::debug!("{endpoint}: connection closed");
                    true
                }
                Err(e) => {
                    log::info!("{endpoint}: connection lost: {e}");
                    false
                }
            };
            if let Some(shared) = shared.upgrade() {
                shared.forget(generation, clean);
            }
        })
        .detach();
        (sender, generation)
    }

    /// Drops connection `generation` if it is still the current one. One that broke
    /// (not a clean close) without answering counts as a failed attempt, so a peer that
    /// accepts and then breaks every connection is retried with backoff too.
    fn forget(&self, generation: u64, clean: bool) {
        let mut state = self.state.borrow_mut();
        if state.live.as_ref().map(|l| l.generation) != Some(generation) {
            return;
        }
        if let Some(live) = state.live.take() {
            if !live.answered && !clean {
                let why = "connection broke before answering".to_string();
                state.backoff.failed(Instant::now(), why);
            }
        }
    }

    /// Connection `generation` delivered a response: the runtime is up. This can be
    /// noticed after the connection task already forgot the connection (answer and
    /// EOF read together), so the newest connection clears the backoff even then.
    fn answered(&self, generation: u64) {
        let mut state = self.state.borrow_mut();
        let newest = state.generations == generation;
        let first_answer = match state.live.as_mut() {
            Some(live) if live.generation == generation => {
                !std::mem::replace(&mut live.answered, true)
            }
            None => newest,
            Some(_) => false,
        };
        if first_answer {
            state.backoff.succeeded();
        }
    }
}

/// Connects to the socket and starts HTTP/2 on it (client preface and settings).
async fn connect(path: &Path) -> Result<(SendRequest<Bytes>, H2Connection), ConnectError> {
    let stream = Async::<UnixStream>::connect(path)
        .await
        .map_err(ConnectError::Socket)?;
    h2::client::Builder::new()
        .enable_push(false)
        .max_header_list_size(MAX_HEADER_LIST_SIZE)
        .handshake(TokioIo::new(stream))
        .await
        .map_err(ConnectError::Handshake)
}

/// Why a connection to the runtime's socket could not be set up.
#[derive(Debug)]
enum ConnectError {
    /// Connecting to the socket failed.
    Socket(std::io::Error),
    /// The socket took the connection, but HTTP/2 did not start on it.
    Handshake(h2::Error),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Socket(e) => e.fmt(f),
            ConnectError::Handshake(e) => write!(f, "HTTP/2 handshake: {e}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::Socket(e) => Some(e),
            ConnectError::Handshake(e) => Some(e),
        }
    }
}

/// The socket path of `unix:///path`, `unix:/path` or a bare path; other schemes and
/// relative `unix:` paths are refused.
fn parse_endpoint(endpoint: &str) -> Result<PathBuf, EndpointError> {
    let path = if let Some(rest) = endpoint.strip_prefix("unix:") {
        let path = rest.strip_prefix("//").unwrap_or(rest);
        if !path.starts_with('/') {
            return Err(EndpointError::NotAbsolute(endpoint.to_string()));
        }
        path
    } else if endpoint.contains("://") {
        return Err(EndpointError::Scheme(endpoint.to_string()));
    } else {
        endpoint
    };
    if path.is_empty() {
        return Err(EndpointError::Empty);
    }
    if path.len() > MAX_SOCKET_PATH {
        return Err(EndpointError::TooLong(endpoint.to_string()));
    }
    Ok(PathBuf::from(path))
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("endpoint", &self.shared.endpoint)
            .field("max_recv", &self.max_recv)
            .finish()
    }
}

/// Why a CRI endpoint is refused (each names the endpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointError {
    /// `unix:` with a relative path.
    NotAbsolute(String),
    /// Another scheme than `unix:`.
    Scheme(String),
    /// No path at all.
    Empty,
    /// A socket path longer than a Unix socket address holds.
    TooLong(String),
}

impl std::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndpointError::NotAbsolute(e) => write!(
                f,
                "CRI endpoint {e:?}: expected an absolute path as in \
                 unix:///run/containerd/containerd.sock"
            ),
            EndpointError::Scheme(e) => write!(
                f,
                "CRI endpoint {e:?}: only unix:///path or a bare socket path is supported"
            ),
            EndpointError::Empty => f.write_str("CRI endpoint is empty"),
            EndpointError::TooLong(e) => write!(
                f,
                "CRI endpoint {e:?}: socket path longer than {MAX_SOCKET_PATH} bytes"
            ),
        }
    }
}

impl std::error::Error for EndpointError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`super::parse_endpoint`], its error as logged.
    fn parse_endpoint(endpoint: &str) -> Result<PathBuf, String> {
        super::parse_endpoint(endpoint).map_err(|e| e.to_string())
    }

    #[test]
    fn endpoints() {
        let ok = [
            (
                "unix:///run/containerd/containerd.sock",
                "/run/containerd/containerd.sock",
            ),
            ("unix:/run/crio/crio.sock", "/run/crio/crio.sock"),
            ("/tmp/x.sock", "/tmp/x.sock"),
            ("rel/x.sock", "rel/x.sock"),
        ];
        for (e, want) in ok {
            assert_eq!(parse_endpoint(e).unwrap(), PathBuf::from(want), "{e}");
        }
        for bad in [
            "",
            "unix://",
            "unix://relative.sock",
            "unix:x",
            "tcp://127.0.0.1:1234",
            "npipe:////./pipe/x",
            "http://localhost/x",
        ] {
            assert!(parse_endpoint(bad).is_err(), "{bad:?} accepted");
        }
        let long = format!("unix:///{}", "a".repeat(200));
        assert!(parse_endpoint(&long).unwrap_err().contains("longer"));
        let err = Channel::new("tcp://x:1").unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument);
    }
}
