//! The accept loop of the status endpoint and the kubelet API, and the bounds that keep
//! a flood of strangers from pushing out the clients that matter.
//!
//! Every connection starts *untrusted*: in the TLS handshake, not yet authenticated, or
//! on an endpoint without authentication. Untrusted connections are bounded in all
//! ([`Limits::untrusted`]) and per peer ([`Limits::per_peer`]; an IPv6 peer is its /64,
//! which one host may fill with addresses). A newcomer past a bound closes an older
//! untrusted connection: its own peer's oldest when that peer is at its bound, else the
//! oldest of the peer holding the most, so a peer with one connection (an API server)
//! goes last. Peers whose requests were authorized lately ([`Ticket::authorized`]) go
//! after all others, and are held by the bound on all only, not by the one per peer:
//! an API server relaying many `kubectl exec` at once opens as many handshakes.
//!
//! A connection whose client authenticated ([`Ticket::authenticated`]) is still
//! untrusted: anyone holding a certificate of the cluster CA gets that far (a stolen
//! gateway's, say). Its user is held by a bound of its own besides
//! ([`Limits::per_user`], however many addresses it comes from; past it the user's
//! oldest untrusted connection is closed), unless a request of that user, or from
//! that address, was authorized lately (the API server's, opening many at once). Only a connection whose request was authorized becomes *trusted*
//! ([`Ticket::authorized`]): untrusted newcomers never close it. Trusted connections
//! have their own bound ([`Limits::trusted`]; past it the oldest other trusted one is
//! closed), and one that takes itself out ([`Ticket::exempt`]: an authorized long-lived
//! stream, bounded by its own count) is never closed for anyone.
//!
//! Everything is on the agent's one thread; the loop yields to the other tasks after
//! every [`ACCEPT_BATCH`] accepts, so a burst of connects cannot hold the thread.

use async_io::{Async, Timer};
use smol::Task;
use std::cell::{Cell, OnceCell, RefCell};
use std::cmp::Reverse;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr, TcpListener, TcpStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Accepts in a row before the loop lets other tasks run.
pub const ACCEPT_BATCH: usize = 16;
/// How long a peer (or user) whose request was authorized is remembered (and so closed
/// last, or not held by the bound per user).
pub const KNOWN_FOR: Duration = Duration::from_secs(600);
/// Peers (and users) remembered at most; past it the one seen longest ago is forgotten.
pub const MAX_KNOWN: usize = 16;

/// The bounds of one listener.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Untrusted connections at once.
    pub untrusted: usize,
    /// Untrusted connections of one peer at once.
    pub per_peer: usize,
    /// Authenticated but not authorized connections of one user at once (a user, or a
    /// peer, whose request was authorized within [`KNOWN_FOR`] is held by the other
    /// bounds only).
    pub per_user: usize,
    /// Trusted connections at once, besides the exempt ones.
    pub trusted: usize,
    /// Called for each connection closed for a newcomer (a counter).
    pub on_evict: fn(),
}

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Stage {
    #[default]
    Untrusted,
    Trusted,
    Exempt,
}

/// Where a connection stands, and who its client is once authenticated.
#[derive(Default)]
struct Place {
    stage: Cell<Stage>,
    user: OnceCell<String>,
}

impl Place {
    /// Whether this is an untrusted connection of `user`.
    fn untrusted_of(&self, user: &str) -> bool {
        self.stage.get() == Stage::Untrusted && self.user.get().is_some_and(|u| u == user)
    }
}

/// A connection being served.
struct Conn {
    task: Task<()>,
    peer: IpAddr,
    place: Rc<Place>,
}

/// What the loop and the connections' tickets share.
struct Table {
    limits: Limits,
    /// In accept order, oldest first.
    conns: RefCell<VecDeque<Conn>>,
    known: RefCell<Known<IpAddr>>,
    known_users: RefCell<Known<String>>,
}

/// A connection's handle on its place in the bounds.
pub struct Ticket {
    table: Rc<Table>,
    peer: IpAddr,
    place: Rc<Place>,
}

impl Ticket {
    /// The client authenticated as `user`: still untrusted, and now held by the bound
    /// per user too (the user's oldest untrusted connection is closed past it), unless
    /// a request of `user` or from this peer was authorized within [`KNOWN_FOR`].
    pub fn authenticated(&self, user: &str) {
        if self.place.user.set(user.to_string()).is_err() {
            return;
        }
        let victim = self.table.over_user(user, self.peer, &self.place);
        self.table.close(victim);
    }

    /// The client's request was authorized: the connection leaves the untrusted bounds
    /// for the trusted one (the oldest other trusted connection is closed when that is
    /// full), and its peer and user are remembered for [`KNOWN_FOR`].
    pub fn authorized(&self) {
        let now = Instant::now();
        self.table.known.borrow_mut().remember(self.peer, now);
        if let Some(user) = self.place.user.get() {
            self.table
                .known_users
                .borrow_mut()
                .remember(user.clone(), now);
        }
        if self.place.stage.get() != Stage::Untrusted {
            return;
        }
        self.place.stage.set(Stage::Trusted);
        let victim = self.table.over_trusted(&self.place);
        self.table.close(victim);
    }

    /// Out of every bound while the returned guard lives (a stream bounded elsewhere,
    /// only ever after [`Ticket::authorized`]); trusted again after.
    pub fn exempt(&self) -> Exempt {
        self.place.stage.set(Stage::Exempt);
        Exempt(self.place.clone())
    }

    /// Whether a request of the peer was authorized within [`KNOWN_FOR`].
    pub fn peer_is_known(&self) -> bool {
        self.table
            .known
            .borrow()
            .is_known(&self.peer, Instant::now())
    }
}

/// Keeps a connection out of the bounds until dropped.
pub struct Exempt(Rc<Place>);

impl Drop for Exempt {
    fn drop(&mut self) {
        self.0.stage.set(Stage::Trusted);
    }
}

/// Accepts connections forever, a task from `serve_one` each, within `limits` (see the
/// module's doc).
pub async fn accept_bounded<F, T>(
    listener: Async<TcpListener>,
    limits: Limits,
    what: &str,
    mut serve_one: F,
) where
    F: FnMut(Async<TcpStream>, Ticket) -> T,
    T: std::future::Future<Output = ()> + 'static,
{
    let table = Rc::new(Table {
        limits,
        conns: RefCell::default(),
        known: RefCell::default(),
        known_users: RefCell::default(),
    });
    let mut in_a_row = 0;
    loop {
        let (stream, addr) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, say: let others close theirs first.
                log::debug!("{what}: accept: {e}");
                Timer::after(Duration::from_millis(100)).await;
                continue;
            }
        };
        let peer = peer_key(addr.ip());
        let victim = table.over_untrusted(peer);
        table.close(victim);
        let place = Rc::new(Place::default());
        let ticket = Ticket {
            table: table.clone(),
            peer,
            place: place.clone(),
        };
        let task = crate::rt::spawn(serve_one(stream, ticket));
        table
            .conns
            .borrow_mut()
            .push_back(Conn { task, peer, place });
        in_a_row += 1;
        if in_a_row >= ACCEPT_BATCH {
            in_a_row = 0;
            smol::future::yield_now().await;
        }
    }
}

/// What a peer is counted as: an IPv4 address, an IPv6 /64 (IPv4-mapped IPv6 addresses
/// as IPv4).
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !u128::from(u64::MAX);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

impl Table {
    /// Takes out the untrusted connection to close for a newcomer from `peer`, if one
    /// must go.
    fn over_untrusted(&self, peer: IpAddr) -> Option<Task<()>> {
        let mut conns = self.conns.borrow_mut();
        conns.retain(|c| !c.task.is_finished());
        let untrusted = |c: &&Conn| c.place.stage.get() == Stage::Untrusted;
        let mut per_peer: HashMap<IpAddr, usize> = HashMap::new();
        for c in conns.iter().filter(untrusted) {
            *per_peer.entry(c.peer).or_default() += 1;
        }
        let count = |p: &IpAddr| per_peer.get(p).copied().unwrap_or_default();
        let known = self.known.borrow();
        let now = Instant::now();
        // A known peer (an API server opening many streams at once) is held only by the
        // bound on all, where it goes last.
        let peer_bound = if known.is_known(&peer, now) {
            self.limits.untrusted
        } else {
            self.limits.per_peer
        };
        let victim = if count(&peer) >= peer_bound {
            conns.iter().position(|c| untrusted(&c) && c.peer == peer)
        } else if per_peer.values().sum::<usize>() >= self.limits.untrusted {
            // Unknown peers first, then the peer holding most; the oldest of those.
            let order = |c: &Conn| (known.is_known(&c.peer, now), Reverse(count(&c.peer)));
            let candidates = conns.iter().enumerate().filter(|(_, c)| untrusted(c));
            candidates.min_by_key(|(_, c)| order(c)).map(|(i, _)| i)
        } else {
            None
        };
        victim.and_then(|i| conns.remove(i)).map(|c| c.task)
    }

    /// Takes out the oldest untrusted connection of `user` other than `newcomer`'s (from
    /// `peer`) when the user holds more than its bound, unless the user or the peer had
    /// a request authorized lately.
    fn over_user(&self, user: &str, peer: IpAddr, newcomer: &Rc<Place>) -> Option<Task<()>> {
        let now = Instant::now();
        if self.known_users.borrow().is_known(user, now) || self.known.borrow().is_known(&peer, now)
        {
            return None;
        }
        let mut conns = self.conns.borrow_mut();
        conns.retain(|c| !c.task.is_finished());
        let held = conns.iter().filter(|c| c.place.untrusted_of(user)).count();
        if held <= self.limits.per_user {
            return None;
        }
        let i = conns
            .iter()
            .position(|c| c.place.untrusted_of(user) && !Rc::ptr_eq(&c.place, newcomer))?;
        conns.remove(i).map(|c| c.task)
    }

    /// Takes out the oldest trusted connection other than `newcomer`'s when there are
    /// more than the bound.
    fn over_trusted(&self, newcomer: &Rc<Place>) -> Option<Task<()>> {
        let mut conns = self.conns.borrow_mut();
        conns.retain(|c| !c.task.is_finished());
        let trusted = |c: &Conn| c.place.stage.get() == Stage::Trusted;
        if conns.iter().filter(|c| trusted(c)).count() <= self.limits.trusted {
            return None;
        }
        let i = conns
            .iter()
            .position(|c| trusted(c) && !Rc::ptr_eq(&c.place, newcomer))?;
        conns.remove(i).map(|c| c.task)
    }

    /// Closes a connection taken out of the table: dropping its task cancels it (its
    /// socket closes). Done outside any borrow of the table, since the task's own
    /// drop runs then.
    fn close(&self, victim: Option<Task<()>>) {
        if let Some(task) = victim {
            drop(task);
            (self.limits.on_evict)();
        }
    }
}

/// Peers (or users) whose requests were authorized lately, at most [`MAX_KNOWN`].
struct Known<K>(Vec<(K, Instant)>);

impl<K> Default for Known<K> {
    fn default() -> Self {
        Known(Vec::new())
    }
}

impl<K: PartialEq> Known<K> {
    fn remember(&mut self, key: K, now: Instant) {
        self.0.retain(|(k, _)| *k != key);
        if self.0.len() >= MAX_KNOWN {
            self.0.remove(0);
        }
        self.0.push((key, now));
    }

    fn is_known<Q>(&self, key: &Q, now: Instant) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        self.0
            .iter()
            .any(|(k, seen)| k.borrow() == key && now.duration_since(*seen) < KNOWN_FOR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smol::io::{AsyncReadExt, AsyncWriteExt};
    use std::net::SocketAddr;

    /// A server within `limits` whose connections greet with `h`, then take commands:
    /// `M` authenticated as mallory, `S` as the API server, `T` authorized, `E` exempt
    /// (held), `P` ping; each answered with one byte.
    fn server(limits: Limits) -> SocketAddr {
        let listener = Async::<TcpListener>::bind(([127, 0, 0, 1], 0)).unwrap();
        let addr = listener.get_ref().local_addr().unwrap();
        let serve = accept_bounded(
            listener,
            limits,
            "test",
            |mut s, ticket: Ticket| async move {
                let mut held = None;
                let _ = s.write_all(b"h").await;
                let mut b = [0u8; 1];
                while let Ok(1) = s.read(&mut b).await {
                    match b[0] {
                        b'M' => ticket.authenticated("mallory"),
                        b'S' => ticket.authenticated("apiserver"),
                        b'T' => ticket.authorized(),
                        b'E' => held = Some(ticket.exempt()),
                        _ => {}
                    }
                    let _ = s.write_all(b"k").await;
                }
                drop(held);
            },
        );
        crate::rt::spawn(serve).detach();
        addr
    }

    /// A connection from 127.0.0.`from` to `to`, once the server greeted it.
    async fn connect(from: u8, to: SocketAddr) -> Async<TcpStream> {
        use rustix::net::{bind, connect, socket, AddressFamily, SocketType};
        let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
        bind(&fd, &SocketAddr::from(([127, 0, 0, from], 0))).unwrap();
        connect(&fd, &to).unwrap();
        let mut s = Async::new(TcpStream::from(fd)).unwrap();
        assert_eq!(command(&mut s, None).await, Some(b'h'));
        s
    }

    /// Sends `cmd` (if any) and reads the one-byte answer; `None` once closed.
    async fn command(s: &mut Async<TcpStream>, cmd: Option<u8>) -> Option<u8> {
        if let Some(c) = cmd {
            s.write_all(&[c]).await.ok()?;
        }
        let mut b = [0u8; 1];
        match s.read(&mut b).await {
            Ok(1) => Some(b[0]),
            _ => None,
        }
    }

    async fn alive(s: &mut Async<TcpStream>) -> bool {
        command(s, Some(b'P')).await.is_some()
    }

    fn limits(untrusted: usize, per_peer: usize, trusted: usize) -> Limits {
        Limits {
            untrusted,
            per_peer,
            per_user: untrusted,
            trusted,
            on_evict: || {},
        }
    }

    #[test]
    fn untrusted_newcomers_never_close_trusted_or_exempt_connections() {
        crate::rt::block_on(async {
            let addr = server(limits(3, 3, 2));
            let mut trusted = connect(2, addr).await;
            command(&mut trusted, Some(b'T')).await.unwrap();
            let mut stream = connect(2, addr).await;
            command(&mut stream, Some(b'E')).await.unwrap();
            let mut flood = Vec::new();
            for i in 0..40 {
                flood.push(connect(10 + i % 7, addr).await);
            }
            assert!(alive(&mut trusted).await && alive(&mut stream).await);
            let mut open = 0;
            for s in &mut flood {
                open += usize::from(alive(s).await);
            }
            assert_eq!(open, 3, "the untrusted bound");
        });
    }

    #[test]
    fn a_peer_at_its_bound_closes_its_own_oldest() {
        crate::rt::block_on(async {
            let addr = server(limits(10, 2, 0));
            let mut a = Vec::new();
            for _ in 0..3 {
                a.push(connect(2, addr).await);
            }
            let mut b = [connect(3, addr).await, connect(3, addr).await];
            let mut got = Vec::new();
            for s in a.iter_mut().chain(&mut b) {
                got.push(alive(s).await);
            }
            assert_eq!(got, [false, true, true, true, true]);
        });
    }

    #[test]
    fn a_known_peer_is_held_by_the_bound_on_all_only() {
        crate::rt::block_on(async {
            let addr = server(limits(6, 2, 4));
            let mut known = connect(2, addr).await;
            command(&mut known, Some(b'T')).await.unwrap();
            // An API server opening streams at once: more handshakes than a stranger
            // may hold, all kept up to the bound on all.
            let mut k = Vec::new();
            for _ in 0..6 {
                k.push(connect(2, addr).await);
            }
            for s in &mut k {
                assert!(alive(s).await);
            }
            // One more of its own closes its oldest.
            let mut last = connect(2, addr).await;
            assert!(!alive(&mut k[0]).await);
            assert!(alive(&mut last).await);
        });
    }

    #[test]
    fn the_peer_holding_most_goes_first_known_peers_last() {
        crate::rt::block_on(async {
            let addr = server(limits(4, 4, 4));
            // A known peer: authorized once; its next connection is untrusted.
            let mut known = connect(2, addr).await;
            command(&mut known, Some(b'T')).await.unwrap();
            let mut k = connect(2, addr).await;
            let mut a = [connect(3, addr).await, connect(3, addr).await];
            let mut b = connect(4, addr).await;
            // Full (k, a0, a1, b): a newcomer closes a0, the oldest of the peer holding
            // most; the next one (a1, b, c: one each, and k) the oldest unknown, a1.
            let mut c = connect(5, addr).await;
            assert!(!alive(&mut a[0]).await);
            let mut d = connect(6, addr).await;
            assert!(!alive(&mut a[1]).await);
            for s in [&mut known, &mut k, &mut b, &mut c, &mut d] {
                assert!(alive(s).await);
            }
        });
    }

    #[test]
    fn past_the_trusted_bound_the_oldest_other_trusted_goes() {
        crate::rt::block_on(async {
            let addr = server(limits(8, 8, 2));
            let mut t = Vec::new();
            for _ in 0..3 {
                let mut s = connect(2, addr).await;
                command(&mut s, Some(b'T')).await.unwrap();
                t.push(s);
            }
            let mut got = Vec::new();
            for s in &mut t {
                got.push(alive(s).await);
            }
            assert_eq!(got, [false, true, true]);
        });
    }

    #[test]
    fn authenticated_is_not_trusted_idle_certificates_never_close_authorized_requests() {
        crate::rt::block_on(async {
            // Room for 2 trusted; 17 connections that authenticate and stop there (any
            // certificate of the cluster CA) from 17 addresses.
            let mut l = limits(32, 8, 2);
            l.per_user = 4;
            let addr = server(l);
            let mut served = Vec::new();
            for _ in 0..2 {
                let mut s = connect(2, addr).await;
                command(&mut s, Some(b'S')).await.unwrap();
                command(&mut s, Some(b'T')).await.unwrap();
                served.push(s);
            }
            let mut idle = Vec::new();
            for i in 0..17 {
                let mut s = connect(10 + i, addr).await;
                command(&mut s, Some(b'M')).await.unwrap();
                idle.push(s);
            }
            for s in &mut served {
                assert!(alive(s).await, "an authorized request was closed");
            }
            // The user holds its bound, however many addresses it comes from: its
            // oldest went.
            let mut open = Vec::new();
            for s in &mut idle {
                open.push(alive(s).await);
            }
            assert_eq!(open.iter().filter(|o| **o).count(), 4, "{open:?}");
            assert!(open[13..].iter().all(|o| *o), "the newest stay: {open:?}");
        });
    }

    #[test]
    fn a_user_authorized_lately_is_not_held_by_the_bound_per_user() {
        crate::rt::block_on(async {
            let mut l = limits(32, 32, 8);
            l.per_user = 2;
            let addr = server(l);
            // Before any authorized request the API server's user is held too ...
            let mut first = Vec::new();
            for _ in 0..3 {
                let mut s = connect(2, addr).await;
                command(&mut s, Some(b'S')).await.unwrap();
                first.push(s);
            }
            assert!(!alive(&mut first[0]).await);
            command(&mut first[1], Some(b'T')).await.unwrap();
            // ... after one, many handshakes at once (streams opened together) stay.
            let mut many = Vec::new();
            for _ in 0..6 {
                let mut s = connect(2, addr).await;
                command(&mut s, Some(b'S')).await.unwrap();
                many.push(s);
            }
            for s in &mut many {
                assert!(alive(s).await);
            }
            // Another user from that address too (the API server's host).
            let mut other = Vec::new();
            for _ in 0..4 {
                let mut s = connect(2, addr).await;
                command(&mut s, Some(b'M')).await.unwrap();
                other.push(s);
            }
            for s in &mut other {
                assert!(alive(s).await);
            }
        });
    }

    #[test]
    fn past_the_trusted_bound_only_authorized_connections_compete() {
        crate::rt::block_on(async {
            let addr = server(limits(8, 8, 1));
            let mut a = connect(2, addr).await;
            command(&mut a, Some(b'S')).await.unwrap();
            command(&mut a, Some(b'T')).await.unwrap();
            // Authenticated only: no place in the trusted bound, a stays.
            let mut m = connect(3, addr).await;
            command(&mut m, Some(b'M')).await.unwrap();
            assert!(alive(&mut a).await && alive(&mut m).await);
            // A second authorized one past the bound of 1 closes the older.
            let mut b = connect(4, addr).await;
            command(&mut b, Some(b'S')).await.unwrap();
            command(&mut b, Some(b'T')).await.unwrap();
            assert!(!alive(&mut a).await);
            assert!(alive(&mut b).await && alive(&mut m).await);
        });
    }

    #[test]
    fn peers_are_addresses_or_ipv6_prefixes() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(peer_key(ip("192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(peer_key(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(peer_key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            peer_key(ip("2001:db8:1:2:ffff::9")),
            peer_key(ip("2001:db8:1:2::1"))
        );
    }

    #[test]
    fn known_peers_are_bounded_and_forgotten() {
        let t0 = Instant::now();
        let mut k = Known::default();
        for i in 0..=MAX_KNOWN as u8 {
            k.remember(IpAddr::from([10, 0, 0, i]), t0);
        }
        assert_eq!(k.0.len(), MAX_KNOWN);
        assert!(
            !k.is_known(&IpAddr::from([10, 0, 0, 0]), t0),
            "the oldest went"
        );
        assert!(k.is_known(&IpAddr::from([10, 0, 0, 1]), t0));
        assert!(!k.is_known(&IpAddr::from([10, 0, 0, 1]), t0 + KNOWN_FOR));
    }
}
