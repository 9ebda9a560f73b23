//! A counting TCP relay between agents and the API server: their kubeconfigs point at
//! it, so every byte of the uplinks (TLS records, both directions) is counted on the
//! wire, from outside the agents. It can be cut like a lost uplink (live connections
//! dropped, the port closed so new ones are refused) and restored on the same port.
//!
//! One thread serves every connection (the project's executor on it): a fleet of hundreds of
//! nodes, each with its connection or three, costs one thread, not two per connection.
//! Each connection holds two 16 KiB buffers.

use smol::channel::{Receiver, Sender};
use smol::io::{AsyncReadExt as _, AsyncWriteExt as _};
use smol::net::{TcpListener, TcpStream};
use smol::Task;
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Bytes relayed so far: agent -> API server, API server -> agent; connections accepted.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bytes {
    pub up: u64,
    pub down: u64,
    pub connections: u64,
}

#[derive(Default)]
struct Shared {
    up: AtomicU64,
    down: AtomicU64,
    connections: AtomicU64,
    /// When each connection was accepted.
    accepted: Mutex<Vec<Instant>>,
}

/// What the relay's thread is told; each is acknowledged once done.
enum Command {
    Cut(mpsc::Sender<()>),
    Restore(std::net::TcpListener, mpsc::Sender<()>),
}

pub struct Relay {
    addr: SocketAddr,
    shared: Arc<Shared>,
    control: Option<Sender<Command>>,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    /// Listens on a free loopback port, relaying to `target`.
    pub fn start(target: SocketAddr) -> Result<Relay, String> {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("relay: {e}"))?;
        let addr = listener.local_addr().map_err(|e| format!("relay: {e}"))?;
        let shared = Arc::new(Shared::default());
        let (control, commands) = smol::channel::unbounded();
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("relay".into())
            .spawn(move || serve(listener, target, s, commands))
            .map_err(|e| format!("relay: a thread: {e}"))?;
        Ok(Relay {
            addr,
            shared,
            control: Some(control),
            thread: Some(thread),
        })
    }

    /// "https://127.0.0.1:PORT" (the API server's certificate is for 127.0.0.1).
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    pub fn bytes(&self) -> Bytes {
        Bytes {
            up: self.shared.up.load(Ordering::Relaxed),
            down: self.shared.down.load(Ordering::Relaxed),
            connections: self.shared.connections.load(Ordering::Relaxed),
        }
    }

    /// When the connections accepted at or after `since` were accepted.
    pub fn accepted_since(&self, since: Instant) -> Vec<Instant> {
        let all = self.shared.accepted.lock().unwrap();
        all.iter().copied().filter(|t| *t >= since).collect()
    }

    /// Uplink lost: every live connection closed, the port closed.
    pub fn cut(&mut self) {
        let (done, wait) = mpsc::channel();
        self.tell(Command::Cut(done), &wait);
    }

    /// Uplink back: listens on the same port again.
    pub fn restore(&mut self) -> Result<(), String> {
        let listener = std::net::TcpListener::bind(self.addr)
            .map_err(|e| format!("relay: bind {}: {e}", self.addr))?;
        let (done, wait) = mpsc::channel();
        self.tell(Command::Restore(listener, done), &wait);
        Ok(())
    }

    fn tell(&self, c: Command, wait: &mpsc::Receiver<()>) {
        if let Some(control) = &self.control {
            if control.send_blocking(c).is_ok() {
                let _ = wait.recv();
            }
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // The thread ends when its command channel closes, dropping every connection.
        self.control = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The relay's thread: accepts on `listener` and follows the commands until their
/// channel closes. Cutting drops the acceptor task, which owns the listener and every
/// connection's task, so all of them close at once.
fn serve(
    listener: std::net::TcpListener,
    target: SocketAddr,
    shared: Arc<Shared>,
    commands: Receiver<Command>,
) {
    tinylet::rt::block_on(async {
        let mut acceptor = Some(tinylet::rt::spawn(accept(listener, target, shared.clone())));
        while let Ok(c) = commands.recv().await {
            match c {
                Command::Cut(done) => {
                    acceptor = None;
                    let _ = done.send(());
                }
                Command::Restore(l, done) => {
                    if acceptor.is_none() {
                        acceptor = Some(tinylet::rt::spawn(accept(l, target, shared.clone())));
                    }
                    let _ = done.send(());
                }
            }
        }
        drop(acceptor);
    });
}

/// Accepts connections and relays each to `target`; owns their tasks.
async fn accept(listener: std::net::TcpListener, target: SocketAddr, shared: Arc<Shared>) {
    let Ok(listener) = TcpListener::try_from(listener) else {
        return;
    };
    let mut connections: Vec<Task<()>> = Vec::new();
    while let Ok((agent, _)) = listener.accept().await {
        shared.accepted.lock().unwrap().push(Instant::now());
        shared.connections.fetch_add(1, Ordering::Relaxed);
        connections.retain(|t| !t.is_finished());
        connections.push(tinylet::rt::spawn(relay(agent, target, shared.clone())));
    }
}

/// Pumps both directions of one connection; closes both sides when either ends.
async fn relay(agent: TcpStream, target: SocketAddr, shared: Arc<Shared>) {
    let Ok(api) = TcpStream::connect(target).await else {
        return;
    };
    let _ = agent.set_nodelay(true);
    let _ = api.set_nodelay(true);
    smol::future::zip(
        pump(agent.clone(), api.clone(), &shared.up),
        pump(api, agent, &shared.down),
    )
    .await;
}

/// Copies `from` to `to`, counting.
async fn pump(mut from: TcpStream, mut to: TcpStream, count: &AtomicU64) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                count.fetch_add(n as u64, Ordering::Relaxed);
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
