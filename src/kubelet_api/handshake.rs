//! The TLS handshake of a kubelet API connection, bounded in time and in the agent's
//! one thread.
//!
//! Time: [`HANDSHAKE_DEADLINE`] from accept to a finished handshake; a client that sends
//! a ClientHello and then nothing is closed then (the connection bounds of
//! `crate::http::accept` close it earlier when strangers crowd in).
//!
//! CPU: each handshake costs the server a key exchange and a signature, more than
//! anything else the node does per request, and a flood of ClientHellos from many
//! peers would otherwise take the thread from the pods' probes and workers. The
//! handshakes' cryptography is rationed by [`CpuShare`]: over time at most
//! [`HANDSHAKE_SHARE`] of the thread, in bursts of at most [`HANDSHAKE_BURST`]; past
//! that a handshake waits (on a timer, costing nothing). A peer whose request was
//! authorized lately (the API server, in practice) does not wait, though its
//! handshakes count.

use super::auth::User;
use super::KubeletApi;
use crate::http::accept::Ticket;
use crate::metrics::Refused;
use crate::tls::stream::{Pace, TlsStream};
use crate::tls::ConnectError;
use async_io::{Async, Timer};
use rustls::ServerConnection;
use std::cell::Cell;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// From accept to a finished TLS handshake.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);
/// The part of the thread the handshakes may take over time.
pub const HANDSHAKE_SHARE: f64 = 0.25;
/// The most handshake work done at once before the share applies.
pub const HANDSHAKE_BURST: Duration = Duration::from_millis(50);

/// The TLS handshake and the client's user (`None`: no certificate); `None` when the
/// handshake failed or took too long (counted as refused).
pub async fn handshake(
    tcp: Async<TcpStream>,
    api: &KubeletApi,
    ticket: &Ticket,
) -> Option<(TlsStream<ServerConnection>, Option<User>)> {
    let server = ServerConnection::new(api.tls.clone()).ok()?;
    let pace = Rationed {
        share: &api.handshakes,
        waits: !ticket.peer_is_known(),
    };
    let shake = TlsStream::handshake_paced(tcp, server, api.counters.clone(), &pace);
    let late = async {
        Timer::after(HANDSHAKE_DEADLINE).await;
        Err(ConnectError::Io(std::io::ErrorKind::TimedOut.into()))
    };
    let tls = match smol::future::or(shake, late).await {
        Ok(t) => t,
        Err(e) => {
            log::debug!("kubelet API: TLS handshake: {e}");
            crate::metrics::kubelet_api_refused(Refused::TlsHandshake);
            return None;
        }
    };
    let user = tls
        .connection()
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| User::from_certificate(c));
    Some((tls, user))
}

/// A token bucket of thread time: credit grows by `share` of the wall time passing, up
/// to `burst`; work spends it, and while it is below zero work waits.
pub struct CpuShare {
    share: f64,
    burst: Duration,
    /// Credit in seconds (negative: owed) as of the instant.
    credit: Cell<(f64, Instant)>,
}

impl CpuShare {
    /// A bucket granting `share` (0 to 1) of the time, in bursts up to `burst`; full.
    pub fn new(share: f64, burst: Duration) -> CpuShare {
        CpuShare {
            share: share.clamp(0.01, 1.0),
            burst,
            credit: Cell::new((burst.as_secs_f64(), Instant::now())),
        }
    }

    /// The credit now.
    fn credit(&self, now: Instant) -> f64 {
        let (credit, at) = self.credit.get();
        let grown = now.saturating_duration_since(at).as_secs_f64() * self.share;
        (credit + grown).min(self.burst.as_secs_f64())
    }

    /// How long until there is credit again (`None`: there is).
    pub fn wait_at(&self, now: Instant) -> Option<Duration> {
        let credit = self.credit(now);
        (credit < 0.0).then(|| Duration::from_secs_f64(-credit / self.share))
    }

    /// Spends `time` of credit.
    pub fn spend_at(&self, time: Duration, now: Instant) {
        let credit = self.credit(now) - time.as_secs_f64();
        self.credit.set((credit, now));
    }
}

/// A handshake's view of the shared bucket: it waits (a stranger) or not (a known peer),
/// and spends either way.
struct Rationed<'a> {
    share: &'a CpuShare,
    waits: bool,
}

impl Pace for Rationed<'_> {
    fn wait(&self) -> Option<Duration> {
        self.share.wait_at(Instant::now()).filter(|_| self.waits)
    }

    fn spent(&self, time: Duration) {
        self.share.spend_at(time, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_holds_over_time_after_a_burst() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let b = CpuShare::new(0.25, ms(50));
        // A full burst goes at once; then the debt is paid at a quarter of the time.
        assert_eq!(b.wait_at(t0), None);
        b.spend_at(ms(50), t0);
        assert_eq!(b.wait_at(t0), None, "at zero, not owing");
        b.spend_at(ms(10), t0);
        let wait = b.wait_at(t0).unwrap();
        assert!(wait.abs_diff(ms(40)) < ms(1), "{wait:?}");
        assert_eq!(b.wait_at(t0 + ms(41)), None);
        // Work of 100 ms in steps of 2 ms, each when allowed: over the whole time, a
        // quarter of it plus the burst pays for the work (the last step may still owe).
        let b = CpuShare::new(0.25, ms(50));
        let mut now = t0;
        for _ in 0..50 {
            if let Some(w) = b.wait_at(now) {
                now += w;
            }
            b.spend_at(ms(2), now);
            now += ms(2);
        }
        let took = now - t0;
        assert!(
            took >= (ms(100) - ms(50) - ms(2)) * 4 && took <= ms(400),
            "{took:?}"
        );
        // A long idle time refills only up to the burst.
        assert_eq!(b.credit(now + Duration::from_secs(3600)), 0.05);
    }
}
