//! The agent's own counters, read by the status endpoint's `/metrics` (see
//! `crate::server`). One thread, so they are plain `Cell`s in a thread-local: counting
//! costs a few loads and stores, never a lock or an allocation (a CRI method's first
//! call with a new gRPC code adds one entry to a short list; later calls find it).
//!
//! What is derived from files or the runtime at scrape time (pods by phase, restarts,
//! container CPU and memory, process figures) is not kept here: it is read when asked.

pub mod health;
mod histogram;

pub use histogram::{Histogram, BUCKETS, BUCKET_LABELS};

use std::cell::{Cell, RefCell};
use std::time::Duration;

/// Calls of one CRI method that ended with one gRPC code.
#[derive(Debug, Clone)]
pub struct CriCalls {
    /// The method's full path (`/runtime.v1.RuntimeService/ListContainers`).
    pub method: &'static str,
    /// How the calls ended: the gRPC code's name (`OK`, `DeadlineExceeded`), so the
    /// counters need nothing of the CRI client that counts into them.
    pub code: &'static str,
    /// Their latencies.
    pub latency: Histogram,
}

/// The PLEG's event kinds, in the order of [`Counters::pleg_events`].
pub const PLEG_EVENTS: [&str; 5] = [
    "ContainerStarted",
    "ContainerDied",
    "ContainerRemoved",
    "ContainerChanged",
    "SandboxChanged",
];

/// Why the kubelet API refused a connection, as the `reason` label of its counter.
pub const KUBELET_API_REFUSED: [&str; 4] =
    ["tls_handshake", "unauthorized", "forbidden", "evicted"];

/// Why the kubelet API refused a connection (an index of [`KUBELET_API_REFUSED`]).
#[derive(Debug, Clone, Copy)]
pub enum Refused {
    /// The TLS handshake failed (not TLS, a certificate of another CA, ...) or took
    /// too long.
    TlsHandshake = 0,
    /// No client certificate: 401.
    Unauthorized = 1,
    /// The SubjectAccessReview denied the request: 403.
    Forbidden = 2,
    /// Closed for a newcomer past the connection bounds.
    Evicted = 3,
}

/// Every counter of the agent (monotonic unless said otherwise).
#[derive(Debug, Default)]
pub struct Counters {
    /// CRI calls by method and code.
    pub cri: RefCell<Vec<CriCalls>>,
    /// How long each relist took (successful or not).
    pub relist: RefCell<Histogram>,
    /// PLEG events, by kind as in [`PLEG_EVENTS`].
    pub pleg_events: [Cell<u64>; 5],
    /// Image GC passes that ran.
    pub image_gc_runs: Cell<u64>,
    /// Images the image GC removed.
    pub image_gc_removed: Cell<u64>,
    /// Bytes the image GC freed.
    pub image_gc_freed_bytes: Cell<u64>,
    /// Container log files rotated.
    pub log_rotations: Cell<u64>,
    /// Bytes in container log files when they were rotated.
    pub log_rotated_bytes: Cell<u64>,
    /// Bytes written to files in the state directory (flash wear).
    pub state_written_bytes: Cell<u64>,
    /// Files written (replaced) in the state directory.
    pub state_written_files: Cell<u64>,
    /// kubelet API connections whose request was authenticated and authorized.
    pub kubelet_api_accepted: Cell<u64>,
    /// kubelet API connections refused, by reason as in [`KUBELET_API_REFUSED`].
    pub kubelet_api_refused: [Cell<u64>; 4],
    /// Exec, attach and port-forward streams relayed to the runtime.
    pub kubelet_api_streams_opened: Cell<u64>,
    /// Streams refused past `apiServer.maxStreams`.
    pub kubelet_api_streams_refused: Cell<u64>,
    /// Trims of the binary's code pages done ([`crate::code_pages`]).
    pub code_page_trims: Cell<u64>,
    /// KiB of code pages they gave back.
    pub code_page_trimmed_kib: Cell<u64>,
}

thread_local! {
    static COUNTERS: Counters = Counters::default();
}

/// Runs `f` with this thread's counters.
pub fn with<R>(f: impl FnOnce(&Counters) -> R) -> R {
    COUNTERS.with(f)
}

fn add(c: &Cell<u64>, n: u64) {
    c.set(c.get().wrapping_add(n));
}

/// Counts one CRI call of `method` that ended with the gRPC code named `code` after
/// `took`.
pub fn cri_call(method: &'static str, code: &'static str, took: Duration) {
    with(|m| {
        let mut calls = m.cri.borrow_mut();
        match calls
            .iter_mut()
            .find(|c| c.code == code && c.method == method)
        {
            Some(c) => c.latency.observe(took),
            None => {
                let mut latency = Histogram::default();
                latency.observe(took);
                calls.push(CriCalls {
                    method,
                    code,
                    latency,
                });
            }
        }
    })
}

/// Counts one relist that took `took`.
pub fn relist(took: Duration) {
    with(|m| m.relist.borrow_mut().observe(took))
}

/// Counts one PLEG event of kind `PLEG_EVENTS[kind]`.
pub fn pleg_event(kind: usize) {
    with(|m| {
        if let Some(c) = m.pleg_events.get(kind) {
            add(c, 1)
        }
    })
}

/// Counts one image GC pass that removed `images` images and freed `bytes`.
pub fn image_gc(images: u64, bytes: u64) {
    with(|m| {
        add(&m.image_gc_runs, 1);
        add(&m.image_gc_removed, images);
        add(&m.image_gc_freed_bytes, bytes);
    })
}

/// Counts one container log file of `bytes` rotated.
pub fn log_rotated(bytes: u64) {
    with(|m| {
        add(&m.log_rotations, 1);
        add(&m.log_rotated_bytes, bytes);
    })
}

/// Counts one trim of the code pages that gave back `kib`.
pub fn code_pages_trimmed(kib: u64) {
    with(|m| {
        add(&m.code_page_trims, 1);
        add(&m.code_page_trimmed_kib, kib);
    })
}

/// Counts one file of `bytes` written to the state directory.
pub fn state_written(bytes: u64) {
    with(|m| {
        add(&m.state_written_files, 1);
        add(&m.state_written_bytes, bytes);
    })
}

/// Counts one kubelet API connection whose request was authorized.
pub fn kubelet_api_accepted() {
    with(|m| add(&m.kubelet_api_accepted, 1))
}

/// Counts one kubelet API connection refused for `why`.
pub fn kubelet_api_refused(why: Refused) {
    with(|m| {
        if let Some(c) = m.kubelet_api_refused.get(why as usize) {
            add(c, 1)
        }
    })
}

/// Counts one stream opened (`true`) or refused past the limit.
pub fn kubelet_api_stream(opened: bool) {
    with(|m| {
        let c = if opened {
            &m.kubelet_api_streams_opened
        } else {
            &m.kubelet_api_streams_refused
        };
        add(c, 1)
    })
}
