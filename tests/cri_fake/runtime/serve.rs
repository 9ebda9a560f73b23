//! Serving the fake runtime: h2's server side on a Unix socket, on a thread of its own
//! (with its own executor), so the test thread may block on child processes and files
//! while the agent talks to the runtime; or many runtimes on the calling thread
//! ([`serve_here`]), for a fleet of nodes in one light process. The state is shared
//! under a mutex that is never held across an `.await`.

use super::objects::Outcome;
use super::service;
use super::state::{State, Status};
use crate::wire::{frame, grpc_head, percent_encode, trailers, unframe};
use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;
use http::Request;
use smol::channel::{Receiver, Sender};
use smol::{future, Async, Task, Timer};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tinylet::cri::io::TokioIo;

/// A serving thread. Dropping it closes the listener and every connection (calls in
/// flight are abandoned, as when a runtime dies) and removes the socket.
pub struct Server {
    path: PathBuf,
    stop: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `path` (bound before this returns) and serves `state`.
    pub fn start(path: &Path, state: Arc<Mutex<State>>) -> Server {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).expect("bind the fake runtime's socket");
        let (stop, stopped) = smol::channel::bounded(1);
        let thread = std::thread::Builder::new()
            .name("fake-cri".into())
            .spawn(move || tinylet::rt::block_on(accept_loop(listener, state, stopped)))
            .expect("spawn the fake runtime's thread");
        Server {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.try_send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Serves each `(socket, state)` of `runtimes` on the calling thread (one executor for
/// them all) until `until` ends; then closes every listener and connection and removes
/// the sockets.
pub fn serve_here(
    runtimes: Vec<(PathBuf, Arc<Mutex<State>>)>,
    until: impl std::future::Future<Output = ()>,
) {
    let paths: Vec<PathBuf> = runtimes.iter().map(|r| r.0.clone()).collect();
    // Never sent to: the runtimes stop when `until` ends and their tasks are dropped.
    let (_keep, stopped) = smol::channel::bounded::<()>(1);
    tinylet::rt::block_on(async {
        let mut loops = Vec::with_capacity(runtimes.len());
        for (path, state) in runtimes {
            let _ = std::fs::remove_file(&path);
            let listener = UnixListener::bind(&path).expect("bind a fake runtime's socket");
            loops.push(tinylet::rt::spawn(accept_loop(
                listener,
                state,
                stopped.clone(),
            )));
        }
        until.await;
    });
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}

async fn accept_loop(listener: UnixListener, state: Arc<Mutex<State>>, stopped: Receiver<()>) {
    let listener = Async::new(listener).expect("register the fake runtime's socket");
    let mut connections: Vec<Task<()>> = Vec::new();
    loop {
        let accepted = future::or(async { Some(listener.accept().await) }, async {
            let _ = stopped.recv().await;
            None
        })
        .await;
        match accepted {
            Some(Ok((stream, _))) => {
                connections.retain(|t| !t.is_finished());
                connections.push(tinylet::rt::spawn(connection(stream, state.clone())));
            }
            Some(Err(e)) => panic!("fake runtime: accept: {e}"),
            None => return,
        }
    }
}

async fn connection(stream: Async<UnixStream>, state: Arc<Mutex<State>>) {
    let Ok(mut conn) = h2::server::handshake(TokioIo::new(stream)).await else {
        return;
    };
    let mut calls: Vec<Task<()>> = Vec::new();
    while let Some(Ok((req, respond))) = conn.accept().await {
        calls.retain(|t| !t.is_finished());
        calls.push(tinylet::rt::spawn(call(req, respond, state.clone())));
    }
}

/// Reads one request, serves it as planned and records how it ended.
async fn call(
    req: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    state: Arc<Mutex<State>>,
) {
    let (head, mut body) = req.into_parts();
    let mut all = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        all.extend_from_slice(&chunk);
    }
    let plan = service::plan(&state, head.uri.path(), unframe(&all));
    let outcome = match plan.after {
        None => {
            client_gives_up(&mut respond).await;
            Outcome::ClientGaveUp
        }
        Some(after) => {
            let gave_up = future::or(
                async {
                    Timer::after(after).await;
                    false
                },
                async {
                    client_gives_up(&mut respond).await;
                    true
                },
            )
            .await;
            if gave_up {
                Outcome::ClientGaveUp
            } else {
                answer(respond, plan.reply)
            }
        }
    };
    state
        .lock()
        .unwrap()
        .answered(plan.call, plan.heavy, outcome);
}

/// Waits until the client resets the stream (or the connection ends).
async fn client_gives_up(respond: &mut SendResponse<Bytes>) {
    let _ = std::future::poll_fn(|cx| respond.poll_reset(cx)).await;
}

fn answer(mut respond: SendResponse<Bytes>, reply: Result<Vec<u8>, Status>) -> Outcome {
    let sent = match &reply {
        Ok(msg) => respond.send_response(grpc_head(), false).and_then(|mut s| {
            s.send_data(frame(msg).into(), false)?;
            s.send_trailers(trailers("0", ""))
        }),
        Err(e) => {
            let mut head = grpc_head();
            let t = trailers(&e.code.to_string(), &percent_encode(&e.message));
            head.headers_mut().extend(t);
            respond.send_response(head, true).map(|_| ())
        }
    };
    match (sent, reply) {
        (Err(_), _) => Outcome::ClientGaveUp,
        (Ok(()), Ok(_)) => Outcome::Ok,
        (Ok(()), Err(e)) => Outcome::Err(e.code),
    }
}
