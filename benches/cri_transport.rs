//! `make bench`, transport part: what one gRPC call costs the client itself, measured
//! against the in-process fake server (tests/cri_fake/server.rs) running on another
//! thread, so only the client's work is on the measuring thread.
//!
//! Per row: calls per second, the client thread's CPU time per call, and the heap
//! allocations (count and bytes) the client thread makes per call. Rows: a tiny message
//! (the size of a Version call) one call after another and from 8 concurrent tasks, and
//! a 64 KiB answer (the size of a ListContainers with a few dozen containers).
//! `TINYLET_BENCH_CALLS` overrides the number of calls per row (default 10000; 100 when
//! run by `cargo test`, which passes no `--bench`).

#[allow(dead_code)]
#[path = "../tests/cri_fake/server.rs"]
mod server;
#[path = "../tests/cri_fake/wire.rs"]
mod wire;

use server::{Echo, FakeServer, TempDir};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tinylet::cri::Channel;

/// Counts allocations made on threads that turned counting on.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            ALLOCS.with(|a| a.set(a.get() + 1));
            BYTES.with(|b| b.set(b.get() + size as u64));
        }
    });
}

// SAFETY: forwards every call unchanged to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const METHOD_ECHO: &str = "/fake.Fake/Echo";
const METHOD_BIG: &str = "/fake.Fake/Big";
const TIMEOUT: Option<Duration> = Some(Duration::from_secs(10));

fn main() {
    // `cargo test --all-targets` (make test) runs this too, unoptimised and without
    // `--bench`: then it is a quick smoke run of 100 calls per row.
    let full = std::env::args().any(|a| a == "--bench");
    let calls: usize = std::env::var("TINYLET_BENCH_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if full { 10_000 } else { 100 });
    let dir = TempDir::new();
    let sock = dir.join("bench.sock");
    start_server_thread(sock.clone());
    let ch = Channel::new(sock.to_str().unwrap_or_default()).expect("channel");
    if !full {
        println!(
            "smoke run (cargo test, unoptimised): figures are not the bench's; see make bench"
        );
    }
    println!(
        "{:<28} {:>7} {:>10} {:>12} {:>12} {:>12}",
        "transport row", "calls", "calls/s", "cpu/call", "allocs/call", "bytes/call"
    );
    tinylet::rt::block_on(async {
        // Warm up: connect, let h2 settle its buffers.
        for _ in 0..100 {
            one(&ch, METHOD_ECHO, "").await;
        }
        row("tiny, sequential", calls, || async {
            for _ in 0..calls {
                one(&ch, METHOD_ECHO, "").await;
            }
        })
        .await;
        row("tiny, 8 concurrent", calls, || async {
            let tasks: Vec<_> = (0..8)
                .map(|_| {
                    let ch = ch.clone();
                    tinylet::rt::spawn(async move {
                        for _ in 0..calls / 8 {
                            one(&ch, METHOD_ECHO, "").await;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await;
            }
        })
        .await;
        let big_calls = (calls / 10).max(1);
        row("64 KiB answer, sequential", big_calls, || async {
            for _ in 0..big_calls {
                one(&ch, METHOD_BIG, "65536").await;
            }
        })
        .await;
    });
}

/// One call; a failure ends the bench.
async fn one(ch: &Channel, method: &'static str, arg: &str) {
    let req = Echo { s: arg.to_string() };
    if let Err(e) = ch.unary::<Echo, Echo>(method, &req, TIMEOUT).await {
        eprintln!("bench call failed: {e}");
        std::process::exit(1);
    }
}

/// Runs `body` (making `calls` calls) and prints its row.
async fn row<F, Fut>(name: &str, calls: usize, body: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    ALLOCS.with(|a| a.set(0));
    BYTES.with(|b| b.set(0));
    let cpu0 = thread_cpu();
    let t0 = Instant::now();
    COUNTING.with(|c| c.set(true));
    body().await;
    COUNTING.with(|c| c.set(false));
    let wall = t0.elapsed();
    let cpu = thread_cpu().saturating_sub(cpu0);
    let n = calls as f64;
    println!(
        "{name:<28} {calls:>7} {:>10.0} {:>10.1}us {:>12.1} {:>12.0}",
        n / wall.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / n,
        ALLOCS.with(|a| a.get()) as f64 / n,
        BYTES.with(|b| b.get()) as f64 / n,
    );
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Runs the fake server on its own thread and executor until the process exits.
fn start_server_thread(sock: PathBuf) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        tinylet::rt::block_on(async move {
            let _server = FakeServer::start(&sock, 100);
            let _ = ready_tx.send(());
            std::future::pending::<()>().await;
        })
    });
    ready_rx.recv().expect("fake server thread started");
}
