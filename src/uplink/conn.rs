//! The one connection to the API server: TCP, TLS 1.3, HTTP/2, shared by every request
//! and watch of the node, made on first use and made again after it broke.
//!
//! Reconnecting: a request that finds no connection makes one (one attempt at a time;
//! the others wait for it). Failed attempts are spaced by [`super::backoff`] (1 s to
//! 8 s, to 30 s once the server has been away two minutes, jittered; a connection that
//! breaks before any answer counts as a failed attempt); a request waits for the next attempt while its deadline allows, and
//! otherwise fails with `Unavailable` and the last connection error. Nothing here ever
//! gives up for good: the next request tries again.
//!
//! Overload: a 429 or 503 answer with `Retry-After` holds every request of the
//! connection until then ([`super::backoff::retry_after`]: jittered); a request whose
//! deadline comes first fails at once with `Unavailable`, and its owner tries again
//! with its own pacing, so a loaded API server is not asked again before it said.
//!
//! Dead links: an uplink that goes away without a TCP reset (a cut cable, a NAT that
//! forgot the flow) is noticed by an HTTP/2 PING when nothing was received for
//! `keepalive` (client-go's ReadIdleTimeout, 30 s), answered within `ping_timeout`
//! (15 s) or the connection is dropped, which fails every stream on it, so watches end
//! and their owners relist after reconnecting. With lease renewals flowing no PING is
//! ever sent.

use super::backoff::{self, Backoff};
use super::error::{ApiError, ConnectError};
use crate::tls::config::TlsTarget;
use crate::tls::counters::Counters;
use crate::tls::kubeconfig::ServerUrl;
use crate::tls::stream::TlsStream;
use async_io::{Async, Timer};
use bytes::Bytes;
use h2::client::SendRequest;
use std::cell::RefCell;
use std::net::TcpStream;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Largest response header block accepted.
const MAX_HEADER_LIST_SIZE: u32 = 64 << 10;
/// HTTP/2 receive windows: enough to keep a slow, long link busy, small enough that the
/// server cannot push more unread data at the gateway than this.
const STREAM_WINDOW: u32 = 256 << 10;
const CONNECTION_WINDOW: u32 = 1 << 20;

/// Timing of the dead-link check.
#[derive(Debug, Clone, Copy)]
pub struct Keepalive {
    /// Send a PING after this long without receiving anything.
    pub idle: Duration,
    /// Drop the connection if the PING is not answered within this.
    pub timeout: Duration,
}

impl Default for Keepalive {
    fn default() -> Self {
        Keepalive {
            idle: Duration::from_secs(30),
            timeout: Duration::from_secs(15),
        }
    }
}

/// The API server's address and the shared connection. Cheap to clone; `!Send`.
#[derive(Clone)]
pub struct Connection {
    shared: Rc<Shared>,
}

struct Shared {
    server: ServerUrl,
    tls: TlsTarget,
    keepalive: Keepalive,
    counters: Rc<Counters>,
    state: RefCell<State>,
    /// Held while connecting, so waiting requests share one attempt.
    connecting: smol::lock::Mutex<()>,
}

#[derive(Default)]
struct State {
    live: Option<(SendRequest<Bytes>, u64)>,
    /// The live connection delivered an answer (only then is the back-off reset, so a
    /// server that accepts and then drops every connection is not hammered).
    answered: bool,
    generations: u64,
    backoff: Backoff,
    last_error: Option<String>,
    /// The server asked to wait (Retry-After) until then.
    held_until: Option<Instant>,
}

impl Connection {
    pub fn new(server: ServerUrl, tls: TlsTarget, keepalive: Keepalive) -> Connection {
        Connection {
            shared: Rc::new(Shared {
                server,
                tls,
                keepalive,
                counters: Rc::default(),
                state: RefCell::default(),
                connecting: smol::lock::Mutex::new(()),
            }),
        }
    }

    pub fn server(&self) -> &ServerUrl {
        &self.shared.server
    }

    pub fn counters(&self) -> &Rc<Counters> {
        &self.shared.counters
    }

    /// The live connection (and its generation), connecting first if needed, by
    /// `deadline`.
    pub async fn sender(&self, deadline: Instant) -> Result<(SendRequest<Bytes>, u64), ApiError> {
        self.wait_if_held(deadline).await?;
        loop {
            if let Some(live) = self.current() {
                return Ok(live);
            }
            let _one_attempt = self.shared.connecting.lock().await;
            if let Some(live) = self.current() {
                return Ok(live);
            }
            let retry_at = self.shared.state.borrow().backoff.retry_at();
            if let Some(at) = retry_at.filter(|&at| at > Instant::now()) {
                if at > deadline {
                    let state = self.shared.state.borrow();
                    let last = state.last_error.clone().unwrap_or_default();
                    let retry_in = at.saturating_duration_since(Instant::now());
                    return Err(ApiError::Unavailable(ConnectError::BackingOff {
                        last,
                        retry_in,
                    }));
                }
                Timer::at(at).await;
            }
            let attempt = smol::future::or(async { Some(self.connect().await) }, async {
                Timer::at(deadline).await;
                None
            });
            match attempt.await {
                Some(Ok(live)) => return Ok(live),
                Some(Err(e)) => {
                    self.shared.counters.connect_failed();
                    self.failed(&e);
                    let retry_at = self.shared.state.borrow().backoff.retry_at();
                    if retry_at.is_none_or(|at| at >= deadline) {
                        return Err(ApiError::Unavailable(e));
                    }
                }
                None => {
                    self.shared.counters.connect_failed();
                    self.failed(&ConnectError::TimedOut);
                    return Err(ApiError::Unavailable(ConnectError::TimedOut));
                }
            }
        }
    }

    /// Waits out a `Retry-After` the server gave, or fails when it outlasts `deadline`.
    async fn wait_if_held(&self, deadline: Instant) -> Result<(), ApiError> {
        let now = Instant::now();
        let Some(until) = self.shared.state.borrow().held_until.filter(|t| *t > now) else {
            return Ok(());
        };
        if until > deadline {
            let retry_in = until - now;
            return Err(ApiError::Unavailable(ConnectError::AskedToWait {
                retry_in,
            }));
        }
        Timer::at(until).await;
        Ok(())
    }

    /// Notes an answer's `Retry-After` when it is a 429 or 503: no request of this
    /// connection goes before it passed.
    pub fn told<B>(&self, answer: &http::Response<B>) {
        if !matches!(answer.status().as_u16(), 429 | 503) {
            return;
        }
        let header = answer.headers().get(http::header::RETRY_AFTER);
        let Some(wait) = header
            .and_then(|v| v.to_str().ok())
            .and_then(|v| backoff::retry_after(v, backoff::random()))
        else {
            return;
        };
        let until = Instant::now() + wait;
        let mut state = self.shared.state.borrow_mut();
        if state.held_until.is_none_or(|t| t < until) {
            log::debug!(
                "API server: HTTP {}; asked to wait {wait:.1?}",
                answer.status()
            );
            state.held_until = Some(until);
        }
        self.shared.counters.asked_to_wait();
    }

    fn current(&self) -> Option<(SendRequest<Bytes>, u64)> {
        self.shared.state.borrow().live.clone()
    }

    fn failed(&self, e: &ConnectError) {
        let why = format!("connecting to {}: {e}", self.shared.server);
        let mut state = self.shared.state.borrow_mut();
        if state.last_error.as_deref() != Some(&why) {
            log::warn!("API server: {why}");
        } else {
            log::debug!("API server: {why}");
        }
        state.last_error = Some(why);
        state.backoff.failed(Instant::now(), backoff::random());
    }

    /// The error for an HTTP/2 failure: the TLS error under it when TLS broke the link
    /// (with TLS 1.3 the server's verdict on the client certificate arrives only after
    /// the client finished its handshake, so it surfaces here).
    pub(super) fn h2_error(&self, e: h2::Error) -> ConnectError {
        match self.shared.counters.take_tls_failure() {
            Some(tls) if e.is_io() || e.is_go_away() => ConnectError::Tls(tls),
            _ => ConnectError::H2(e),
        }
    }

    /// Drops connection `generation` if it is still the current one (a request saw it
    /// fail); the next request connects again.
    pub fn broken(&self, generation: u64) {
        let mut state = self.shared.state.borrow_mut();
        if state.live.as_ref().map(|l| l.1) == Some(generation) {
            state.live = None;
            if !state.answered {
                state.last_error = Some("the connection broke before any answer".into());
                state.backoff.failed(Instant::now(), backoff::random());
                self.shared.counters.connect_failed();
            }
        }
    }

    /// Connection `generation` delivered an answer: the API server is really there.
    pub fn answered(&self, generation: u64) {
        let mut state = self.shared.state.borrow_mut();
        if !state.answered && state.live.as_ref().map(|l| l.1) == Some(generation) {
            state.answered = true;
            state.backoff.succeeded();
            state.last_error = None;
        }
    }

    /// One attempt: resolve, TCP connect, TLS and HTTP/2 handshakes; then the
    /// connection's task is spawned and the connection becomes the current one.
    async fn connect(&self) -> Result<(SendRequest<Bytes>, u64), ConnectError> {
        let shared = &self.shared;
        let addrs = super::resolve::resolve(&shared.server.host, shared.server.port).await?;
        let mut last = None;
        let mut tcp = None;
        for addr in addrs {
            match Async::<TcpStream>::connect(addr).await {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let tcp = match (tcp, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(ConnectError::Io(e)),
            (None, None) => return Err(ConnectError::Resolve("no address".into())),
        };
        let _ = tcp.get_ref().set_nodelay(true);
        let tls = rustls::ClientConnection::new(
            shared.tls.config.clone(),
            shared.tls.server_name.clone(),
        )
        .map_err(ConnectError::Tls)?;
        shared.counters.take_tls_failure();
        let stream = TlsStream::handshake(tcp, tls, shared.counters.clone()).await?;
        if stream.connection().alpn_protocol() != Some(b"h2") {
            return Err(ConnectError::NoH2);
        }
        let (sender, mut connection) = h2::client::Builder::new()
            .enable_push(false)
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .max_header_list_size(MAX_HEADER_LIST_SIZE)
            .handshake::<_, Bytes>(stream)
            .await
            .map_err(|e| self.h2_error(e))?;
        let ping_pong = connection.ping_pong();
        let generation = {
            let mut state = shared.state.borrow_mut();
            state.generations += 1;
            state.live = Some((sender.clone(), state.generations));
            state.answered = false;
            if state.last_error.is_some() || state.generations > 1 {
                log::info!("API server: connected to {}", shared.server);
            }
            state.generations
        };
        shared.counters.connected();
        let weak = Rc::downgrade(shared);
        let counters = shared.counters.clone();
        let keepalive = shared.keepalive;
        crate::rt::spawn(async move {
            let end = smol::future::or(
                async { connection.await.map_err(LinkLost::H2) },
                watch_link(ping_pong, counters, keepalive),
            )
            .await;
            if let Err(why) = end {
                log::info!("API server: connection lost: {why}");
            }
            if let Some(shared) = weak.upgrade() {
                (Connection { shared }).broken(generation);
            }
        })
        .detach();
        Ok((sender, generation))
    }
}

/// Why a connection to the API server ended.
#[derive(Debug)]
enum LinkLost {
    /// The connection failed (or the server closed it with an error).
    H2(h2::Error),
    /// A keepalive PING could not be sent.
    Ping(h2::Error),
    /// No PONG within the keepalive timeout (given).
    NoPong(Duration),
}

impl std::fmt::Display for LinkLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkLost::H2(e) => e.fmt(f),
            LinkLost::Ping(e) => write!(f, "PING failed: {e}"),
            LinkLost::NoPong(t) => write!(f, "no answer to a PING within {t:?}"),
        }
    }
}

impl std::error::Error for LinkLost {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LinkLost::H2(e) | LinkLost::Ping(e) => Some(e),
            LinkLost::NoPong(_) => None,
        }
    }
}

/// Ends (with the reason) when the link looks dead: nothing received for
/// `keepalive.idle`, then no PONG within `keepalive.timeout`.
async fn watch_link(
    ping_pong: Option<h2::PingPong>,
    counters: Rc<Counters>,
    keepalive: Keepalive,
) -> Result<(), LinkLost> {
    let Some(mut ping_pong) = ping_pong else {
        return std::future::pending().await;
    };
    let mut seen = counters.snapshot().bytes_received;
    loop {
        Timer::after(keepalive.idle).await;
        let now = counters.snapshot().bytes_received;
        if now != seen {
            seen = now;
            continue;
        }
        let pong = smol::future::or(
            async { Some(ping_pong.ping(h2::Ping::opaque()).await) },
            async {
                Timer::after(keepalive.timeout).await;
                None
            },
        );
        match pong.await {
            Some(Ok(_)) => seen = counters.snapshot().bytes_received,
            Some(Err(e)) => return Err(LinkLost::Ping(e)),
            None => return Err(LinkLost::NoPong(keepalive.timeout)),
        }
    }
}
