//! The local status endpoint on `statusAddress`: `GET /healthz`, `GET /pods` and
//! `GET /metrics` over a small HTTP/1.1 server of our own (one request per connection,
//! `Connection: close`), on the agent's executor: no thread, no polling task. While
//! nobody connects, the accept waits in the reactor and costs no CPU.
//!
//! Bounded against what a client can do: at most [`MAX_CONNECTIONS`] connections (a
//! new one past that closes the oldest, so idle or slow clients cannot lock others
//! out), a request head of at most [`http::MAX_HEAD`] bytes (past it: 431 and close), and
//! [`DEADLINE`] for a whole connection (a client sending one byte a second is cut off).
//! A bad request gets a 4xx answer, never a panic.

pub mod metrics_text;
pub mod routes;

use crate::agent::context::Context;
use crate::http;
use crate::http::accept::{accept_bounded, Limits};
use async_io::{Async, Timer};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::rc::Rc;
use std::time::Duration;

/// Connections served at once; the oldest is closed for a new one past this.
pub const MAX_CONNECTIONS: usize = 32;
/// What is read and dropped after an answer, at most, before closing (see
/// `http::linger_close`).
const LINGER_BYTES: usize = 64 << 10;
/// Time a connection may take, from accept to the last byte of the answer.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// What the endpoint reads: the agent's shared state and, with the uplink, what the
/// cluster links cost.
pub struct Sources {
    /// The agent's config, store and CRI client.
    pub ctx: Rc<Context>,
    /// The cluster links' counters, when the agent joined a cluster.
    #[cfg(feature = "uplink")]
    pub links: Option<Links>,
}

/// What the cluster links cost, for `/metrics`: the uplink's client (bytes, reconnects)
/// and the kubelet API's connections (bytes).
#[cfg(feature = "uplink")]
pub struct Links {
    /// The uplink's API client.
    pub uplink: Rc<crate::tls::counters::Counters>,
    /// The kubelet API, all its connections.
    pub kubelet_api: Rc<crate::tls::counters::Counters>,
}

/// Binds `addr` and serves it on the executor for as long as the agent runs. A bind
/// that fails is logged and the agent goes on without the endpoint: the pods matter more.
pub fn start(addr: SocketAddr, src: Sources) {
    let listener = match TcpListener::bind(addr).and_then(Async::new) {
        Ok(l) => l,
        Err(e) => {
            log::error!("statusAddress {addr}: cannot listen: {e}; no status endpoint");
            return;
        }
    };
    if addr.ip().is_loopback() {
        log::info!("status endpoint on http://{addr}/ (healthz, pods, metrics)");
    } else {
        log::warn!(
            "status endpoint on http://{addr}/, a non-loopback address \
             (statusAllowNonLoopback): anyone who reaches it sees the pods and metrics"
        );
    }
    crate::rt::spawn(serve(listener, Rc::new(src))).detach();
}

/// Accepts connections forever, one task each, at most [`MAX_CONNECTIONS`] at once.
async fn serve(listener: Async<TcpListener>, src: Rc<Sources>) {
    // No authentication here: every client is a stranger, bounded only in all.
    let limits = Limits {
        untrusted: MAX_CONNECTIONS,
        per_peer: MAX_CONNECTIONS,
        per_user: MAX_CONNECTIONS,
        trusted: 0,
        on_evict: || {},
    };
    accept_bounded(listener, limits, "status endpoint", |stream, _| {
        connection(stream, src.clone())
    })
    .await
}

/// Reads one request, answers it and closes, all within [`DEADLINE`].
async fn connection(mut stream: Async<TcpStream>, src: Rc<Sources>) {
    let served = async {
        let answer = match http::read_head(&mut stream, http::MAX_HEAD).await {
            Ok(head) => routes::answer(&src, &head).await,
            Err(http::BadHead::Closed) => return,
            Err(bad) => bad.answer(),
        };
        match answer.write_to(&mut stream).await {
            Ok(()) => http::linger_close(&mut stream, LINGER_BYTES).await,
            Err(e) => log::debug!("status endpoint: writing the answer: {e}"),
        }
    };
    smol::future::or(served, async {
        Timer::after(DEADLINE).await;
    })
    .await;
}
