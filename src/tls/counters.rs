//! What a TLS connection costs and how often it broke: requests, bytes on the wire (TLS
//! records, both directions, handshakes included), connections made, and the TLS error
//! that last broke one: one set for the uplink's client, one for the kubelet API. Read by the metrics endpoint and the bandwidth bench; kept in
//! `Cell`s (one thread, no atomics needed).

use std::cell::{Cell, RefCell};

/// Running totals of one client.
#[derive(Debug, Default)]
pub struct Counters {
    bytes_sent: Cell<u64>,
    bytes_received: Cell<u64>,
    connects: Cell<u64>,
    connect_failures: Cell<u64>,
    requests: Cell<u64>,
    waits: Cell<u64>,
    /// The TLS error that broke the link, kept for the requests that fail because of it
    /// (h2 passes I/O errors on to streams as text only).
    tls_failure: RefCell<Option<rustls::Error>>,
}

/// A copy of the totals at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Bytes written to the connection (TLS included).
    pub bytes_sent: u64,
    /// Bytes read from the connection (TLS included).
    pub bytes_received: u64,
    /// Connections established (TCP + TLS + HTTP/2 handshake done).
    pub connects: u64,
    /// Connections after the first: how often the uplink was re-established.
    pub reconnects: u64,
    /// Connection attempts that failed.
    pub connect_failures: u64,
    /// Requests sent (watches included).
    pub requests: u64,
    /// Answers that asked to wait (429 or 503 with `Retry-After`).
    pub waits: u64,
}

impl Counters {
    /// Counts `n` bytes sent.
    pub fn sent(&self, n: usize) {
        self.bytes_sent
            .set(self.bytes_sent.get().wrapping_add(n as u64));
    }

    /// Counts `n` bytes received.
    pub fn received(&self, n: usize) {
        self.bytes_received
            .set(self.bytes_received.get().wrapping_add(n as u64));
    }

    /// Counts a connection established.
    pub fn connected(&self) {
        self.connects.set(self.connects.get() + 1);
    }

    /// Counts a request sent.
    pub fn request(&self) {
        self.requests.set(self.requests.get() + 1);
    }

    /// Counts an answer that asked to wait.
    pub fn asked_to_wait(&self) {
        self.waits.set(self.waits.get() + 1);
    }

    /// Counts a failed connection attempt.
    pub fn connect_failed(&self) {
        self.connect_failures.set(self.connect_failures.get() + 1);
    }

    /// Records the TLS error of a failed handshake, for the next log line.
    pub fn tls_failed(&self, e: rustls::Error) {
        *self.tls_failure.borrow_mut() = Some(e);
    }

    /// The TLS error recorded since the last call, if any.
    pub fn take_tls_failure(&self) -> Option<rustls::Error> {
        self.tls_failure.borrow_mut().take()
    }

    /// The totals now.
    pub fn snapshot(&self) -> Snapshot {
        let connects = self.connects.get();
        Snapshot {
            bytes_sent: self.bytes_sent.get(),
            bytes_received: self.bytes_received.get(),
            connects,
            reconnects: connects.saturating_sub(1),
            connect_failures: self.connect_failures.get(),
            requests: self.requests.get(),
            waits: self.waits.get(),
        }
    }
}
