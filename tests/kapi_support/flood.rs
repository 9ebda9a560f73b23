//! A bounded flood of strangers against a TCP port on loopback, for the kubelet API's
//! connection bounds (the cluster tests and `make bench-node-port`): idle connects,
//! slow TLS handshakes (a ClientHello, then silence) and full-speed ClientHellos (each
//! costs the server a key exchange and a signature), from many source addresses of
//! 127.0.0.0/8. Each kind runs on a thread of its own, holds at most a given number of
//! sockets, and stops by itself after a number of connects or a time, whichever first.
#![allow(dead_code)]

use rustix::net::sockopt::{set_socket_timeout, Timeout};
use rustix::net::{bind, connect, socket, AddressFamily, SocketType};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a flood thread does with each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Connects and sends nothing.
    Idle,
    /// Sends a ClientHello and nothing more.
    SlowHandshake,
    /// Sends a ClientHello, reads the server's first answer, closes.
    Handshake,
}

/// One flood thread's work.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kind: Kind,
    /// Source addresses 127.0.0.`first` ..= 127.0.0.`last`, in turn.
    pub peers: (u8, u8),
    /// Sockets held open at once (the oldest is closed for a new one).
    pub held: usize,
    /// Connects at most.
    pub max_connects: u64,
    /// Time at most.
    pub max_time: Duration,
}

/// What a thread did.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub kind: Option<Kind>,
    pub connects: u64,
    /// Connects that failed or timed out (a full accept queue, say).
    pub failed: u64,
    /// Handshakes the server answered (`Kind::Handshake`).
    pub answered: u64,
    pub elapsed: Duration,
    /// Still going when stopped (not ended by its own bounds).
    pub stopped: bool,
}

/// A running flood.
pub struct Flood {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Stats>>,
}

impl Flood {
    /// Starts one thread per plan against `target`.
    pub fn start(target: SocketAddr, plans: &[Plan]) -> Flood {
        let stop = Arc::new(AtomicBool::new(false));
        let hello = Arc::new(client_hello());
        let threads = plans
            .iter()
            .cloned()
            .map(|plan| {
                let (stop, hello) = (stop.clone(), hello.clone());
                std::thread::spawn(move || run(target, &plan, &hello, &stop))
            })
            .collect();
        Flood { stop, threads }
    }

    /// Stops every thread (their sockets close) and returns what each did.
    pub fn stop(self) -> Vec<Stats> {
        self.stop.store(true, Ordering::Relaxed);
        self.threads
            .into_iter()
            .map(|t| t.join().unwrap_or_default())
            .collect()
    }
}

/// A TLS 1.3 ClientHello as rustls sends it (for a name nobody serves; the server does
/// its handshake work all the same).
pub fn client_hello() -> Vec<u8> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let name = "flood.invalid".try_into().unwrap();
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    hello
}

fn run(target: SocketAddr, plan: &Plan, hello: &[u8], stop: &AtomicBool) -> Stats {
    let t0 = Instant::now();
    let mut stats = Stats {
        kind: Some(plan.kind),
        ..Stats::default()
    };
    let mut held = VecDeque::new();
    let (first, last) = plan.peers;
    let mut peer = first;
    while !stop.load(Ordering::Relaxed)
        && stats.connects < plan.max_connects
        && t0.elapsed() < plan.max_time
    {
        stats.connects += 1;
        peer = if peer >= last { first } else { peer + 1 };
        let Some(mut s) = connect_from(peer, target) else {
            stats.failed += 1;
            continue;
        };
        match plan.kind {
            Kind::Idle => {}
            Kind::SlowHandshake => {
                let _ = s.write_all(hello);
            }
            Kind::Handshake => {
                let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
                let mut answer = [0u8; 256];
                if s.write_all(hello).is_ok() && matches!(s.read(&mut answer), Ok(n) if n > 0) {
                    stats.answered += 1;
                }
                continue;
            }
        }
        if held.len() >= plan.held {
            held.pop_front();
        }
        held.push_back(s);
    }
    stats.elapsed = t0.elapsed();
    stats.stopped = stop.load(Ordering::Relaxed);
    stats
}

/// A connection from 127.0.0.`from` to `target`, or `None` when it is not made within
/// 200 ms (the server's accept queue is full: its SYN is dropped and retried only after
/// a second; Linux ends a blocking connect at the socket's send timeout).
pub fn connect_from(from: u8, target: SocketAddr) -> Option<TcpStream> {
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).ok()?;
    set_socket_timeout(&fd, Timeout::Send, Some(Duration::from_millis(200))).ok()?;
    bind(&fd, &SocketAddr::from(([127, 0, 0, from], 0))).ok()?;
    connect(&fd, &target).ok()?;
    Some(TcpStream::from(fd))
}
