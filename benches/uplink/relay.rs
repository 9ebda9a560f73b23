//! A counting TCP relay between the agent and the API server: the agent's kubeconfig
//! points at it, so every byte of the uplink (TLS records, both directions) is counted
//! on the wire, from outside the agent. It can be cut like a lost uplink (live
//! connections dropped, the port closed so new ones are refused) and restored on the
//! same port.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

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
    cut: AtomicBool,
    /// Both sockets of every connection accepted since the last cut.
    live: Mutex<Vec<TcpStream>>,
}

pub struct Relay {
    addr: SocketAddr,
    target: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl Relay {
    /// Listens on a free loopback port, relaying to `target`.
    pub fn start(target: SocketAddr) -> Result<Relay, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("relay: {e}"))?;
        let addr = listener.local_addr().map_err(|e| format!("relay: {e}"))?;
        let mut relay = Relay {
            addr,
            target,
            shared: Arc::default(),
            acceptor: None,
        };
        relay.accept_on(listener);
        Ok(relay)
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

    /// Uplink lost: every live connection closed, the port closed.
    pub fn cut(&mut self) {
        self.shared.cut.store(true, Ordering::SeqCst);
        // Wake the acceptor, which then drops the listener.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
        for s in self.shared.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Uplink back: listens on the same port again.
    pub fn restore(&mut self) -> Result<(), String> {
        if self.acceptor.is_some() {
            return Ok(());
        }
        let listener =
            TcpListener::bind(self.addr).map_err(|e| format!("relay: bind {}: {e}", self.addr))?;
        self.shared.cut.store(false, Ordering::SeqCst);
        self.accept_on(listener);
        Ok(())
    }

    fn accept_on(&mut self, listener: TcpListener) {
        let shared = self.shared.clone();
        let target = self.target;
        self.acceptor = Some(std::thread::spawn(move || {
            for conn in listener.incoming() {
                if shared.cut.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(agent) = conn else { continue };
                let Ok(api) = TcpStream::connect(target) else {
                    continue;
                };
                shared.connections.fetch_add(1, Ordering::Relaxed);
                connect(&shared, agent, api);
            }
        }));
    }
}

/// Pumps both directions of one connection on two threads.
fn connect(shared: &Arc<Shared>, agent: TcpStream, api: TcpStream) {
    let _ = agent.set_nodelay(true);
    let _ = api.set_nodelay(true);
    let clones = (agent.try_clone(), api.try_clone());
    let (Ok(agent2), Ok(api2)) = clones else {
        return;
    };
    {
        let mut live = shared.live.lock().unwrap();
        for s in [&agent, &api] {
            if let Ok(c) = s.try_clone() {
                live.push(c);
            }
        }
    }
    let s = shared.clone();
    std::thread::spawn(move || pump(agent, api2, &s.up));
    let s = shared.clone();
    std::thread::spawn(move || pump(api, agent2, &s.down));
}

/// Copies `from` to `to`, counting; closes both when either side ends.
fn pump(mut from: TcpStream, mut to: TcpStream, count: &AtomicU64) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                count.fetch_add(n as u64, Ordering::Relaxed);
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
    }
}
