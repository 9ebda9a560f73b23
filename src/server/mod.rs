//! The local status endpoint on `statusAddress`: `GET /healthz`, `GET /pods` and
//! `GET /metrics` over a small HTTP/1.1 server of our own (one request per connection,
//! `Connection: close`), on the agent's executor: no thread, no polling task. While
//! nobody connects, the accept waits in the reactor and costs no CPU.
//!
//! Bounded against what a client can do: at most [`MAX_CONNECTIONS`] connections (a
//! new one past that closes the oldest, so idle or slow clients cannot lock others
//! out), a request head of at most [`MAX_HEAD`] bytes (past it: 431 and close), and
//! [`DEADLINE`] for a whole connection (a client sending one byte a second is cut off).
//! A bad request gets a 4xx answer, never a panic.

pub mod http;
pub mod metrics_text;
pub mod pods;
mod process;
pub mod routes;

use crate::agent::context::Context;
use async_io::{Async, Timer};
use smol::Task;
use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::rc::Rc;
use std::time::Duration;

/// Connections served at once; the oldest is closed for a new one past this.
pub const MAX_CONNECTIONS: usize = 32;
/// Largest request head (request line and headers) accepted.
pub const MAX_HEAD: usize = 8 << 10;
/// What is read and dropped after an answer, at most, before closing (see
/// `http::linger_close`).
const LINGER_BYTES: usize = 64 << 10;
/// Time a connection may take, from accept to the last byte of the answer.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// What the endpoint reads: the agent's shared state and, with the uplink, its client.
pub struct Sources {
    /// The agent's config, store and CRI client.
    pub ctx: Rc<Context>,
    /// The uplink (for its byte and reconnect counters), when the agent joined a cluster.
    #[cfg(feature = "uplink")]
    pub uplink: Option<Rc<crate::uplink::agent::Uplink>>,
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
    accept_bounded(listener, MAX_CONNECTIONS, "status endpoint", |stream, _| {
        connection(stream, src.clone())
    })
    .await
}

/// Accepts connections forever, a task from `serve_one` each, at most `max` evictable
/// ones at once: the oldest evictable one is closed for a new one past that, so idle or
/// slow clients cannot lock others out (also the kubelet API's loop). A connection that
/// took itself out of that bound ([`Evictable::exempt`]: an authorized long-lived stream,
/// bounded by its own count) is never closed for a newcomer.
pub async fn accept_bounded<F, T>(
    listener: Async<TcpListener>,
    max: usize,
    what: &str,
    mut serve_one: F,
) where
    F: FnMut(Async<TcpStream>, Evictable) -> T,
    T: std::future::Future<Output = ()> + 'static,
{
    let mut live: VecDeque<(Task<()>, Evictable)> = VecDeque::new();
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of file descriptors, say: let others close theirs first.
                log::debug!("{what}: accept: {e}");
                Timer::after(Duration::from_millis(100)).await;
                continue;
            }
        };
        live.retain(|(t, _)| !t.is_finished());
        let evictable = live.iter().filter(|(_, e)| !e.is_exempt()).count();
        if evictable >= max {
            if let Some(i) = live.iter().position(|(_, e)| !e.is_exempt()) {
                drop(live.remove(i)); // cancels it: its socket closes
            }
        }
        let flag = Evictable::default();
        live.push_back((crate::rt::spawn(serve_one(stream, flag.clone())), flag));
    }
}

/// Whether a connection of [`accept_bounded`] counts against its bound (and so may be
/// closed for a newcomer). Shared between the loop and the connection's task.
#[derive(Clone, Default)]
pub struct Evictable(Rc<std::cell::Cell<bool>>);

impl Evictable {
    /// Out of the bound while the returned guard lives (a stream bounded elsewhere).
    pub fn exempt(&self) -> Exempt {
        self.0.set(true);
        Exempt(self.0.clone())
    }

    fn is_exempt(&self) -> bool {
        self.0.get()
    }
}

/// Keeps a connection out of [`accept_bounded`]'s bound until dropped.
pub struct Exempt(Rc<std::cell::Cell<bool>>);

impl Drop for Exempt {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Reads one request, answers it and closes, all within [`DEADLINE`].
async fn connection(mut stream: Async<TcpStream>, src: Rc<Sources>) {
    let served = async {
        let answer = match http::read_head(&mut stream, MAX_HEAD).await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use smol::io::AsyncReadExt;

    /// Whether the server closed `c` (EOF or reset within a short wait).
    async fn closed(c: &mut Async<TcpStream>) -> bool {
        let mut b = [0u8; 1];
        let read = async { Some(c.read(&mut b).await) };
        let wait = async {
            Timer::after(Duration::from_millis(300)).await;
            None
        };
        matches!(smol::future::or(read, wait).await, Some(Ok(0) | Err(_)))
    }

    #[test]
    fn exempt_connections_are_never_closed_for_newcomers() {
        crate::rt::block_on(async {
            let listener = Async::<TcpListener>::bind(([127, 0, 0, 1], 0)).unwrap();
            let addr = listener.get_ref().local_addr().unwrap();
            let mut n = 0;
            // The first two connections exempt themselves; every one is held open.
            let serve = accept_bounded(listener, 2, "test", move |s, e: Evictable| {
                n += 1;
                let keep = (n <= 2).then(|| e.exempt());
                async move {
                    let _held = (s, keep);
                    Timer::after(Duration::from_secs(3600)).await;
                }
            });
            crate::rt::spawn(serve).detach();
            let mut c = Vec::new();
            for _ in 0..5 {
                c.push(Async::<TcpStream>::connect(addr).await.unwrap());
                Timer::after(Duration::from_millis(50)).await;
            }
            // Exempt 0 and 1 stay; of the evictable 2, 3, 4 the oldest (2) was closed.
            let mut gone = Vec::new();
            for s in &mut c {
                gone.push(closed(s).await);
            }
            assert_eq!(gone, [false, false, true, false, false]);
        });
    }
}
