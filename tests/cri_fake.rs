//! The CRI transport against an in-process fake gRPC server that does what a healthy
//! runtime never does: error statuses, Trailers-Only answers, split and oversized
//! messages, stream resets, GOAWAY, silence, hang-ups, garbage, non-200 answers,
//! restarts. See `cri_fake/server.rs` for the server.

#[path = "cri_fake/server.rs"]
mod server;
#[path = "common/threads.rs"]
mod threads;
#[path = "cri_fake/wire.rs"]
mod wire;

use server::{start_garbage, Echo, FakeServer, TempDir};
use smol::Timer;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::time::{Duration, Instant};
use tinylet::cri::{Channel, Code, CriError};

/// Records the largest single allocation made on each thread, so a test can show that an
/// oversized response is refused before its claimed size is allocated.
struct LargestAllocation;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: forwards every call unchanged to the system allocator; only records sizes.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation(new_size);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// Runs a test body on the crate's executor; a hung test fails instead of hanging CI.
fn run<T>(body: impl Future<Output = T>) -> T {
    let _ = env_logger::builder().is_test(true).try_init();
    tinylet::rt::block_on(smol::future::or(body, async {
        Timer::after(Duration::from_secs(60)).await;
        panic!("test did not finish within 60 s");
    }))
}

const SECOND: Option<Duration> = Some(Duration::from_secs(5));

async fn call(ch: &Channel, method: &'static str, arg: &str) -> Result<String, CriError> {
    call_within(ch, method, arg, SECOND).await
}

async fn call_within(
    ch: &Channel,
    method: &'static str,
    arg: &str,
    timeout: Option<Duration>,
) -> Result<String, CriError> {
    let req = Echo { s: arg.to_string() };
    ch.unary::<Echo, Echo>(method, &req, timeout)
        .await
        .map(|r| r.s)
}

/// A fresh temp dir, a server in it and a channel to it.
fn setup(max_streams: u32) -> (TempDir, FakeServer, Channel) {
    let dir = TempDir::new();
    let sock = dir.join("cri.sock");
    let server = FakeServer::start(&sock, max_streams);
    let ch = Channel::new(&format!("unix://{}", sock.display())).unwrap();
    (dir, server, ch)
}

fn expect_err(r: Result<String, CriError>, code: Code) -> CriError {
    match r {
        Ok(s) => panic!("expected {code}, got Ok({s:?})"),
        Err(e) => {
            assert_eq!(e.code, code, "{e}");
            e
        }
    }
}

#[test]
fn echo_sends_the_headers_a_grpc_server_expects() {
    run(async {
        let (_dir, server, ch) = setup(100);
        assert_eq!(
            call(&ch, "/fake.Fake/Echo", "hello").await.unwrap(),
            "hello"
        );
        assert_eq!(
            call_within(
                &ch,
                "/fake.Fake/Echo",
                "",
                Some(Duration::from_millis(1999))
            )
            .await
            .unwrap(),
            ""
        );
        call_within(&ch, "/fake.Fake/Echo", "no deadline", None)
            .await
            .unwrap();
        let seen = server.stats.requests.borrow().clone();
        assert_eq!(seen.len(), 3);
        let first = &seen[0];
        assert_eq!(first.method, "POST");
        assert_eq!(first.uri, "http://localhost/fake.Fake/Echo");
        assert_eq!(first.headers["content-type"], "application/grpc");
        assert_eq!(first.headers["te"], "trailers");
        assert_eq!(first.headers["grpc-timeout"], "5S");
        let ua = first.headers["user-agent"].to_str().unwrap();
        assert!(ua.starts_with("grpc-rust-tinylet/"), "{ua}");
        assert_eq!(seen[1].headers["grpc-timeout"], "1999m");
        assert!(!seen[2].headers.contains_key("grpc-timeout"));
        assert_eq!(server.stats.connections.get(), 1);
    })
}

#[test]
fn error_status_in_trailers_is_typed_and_percent_decoded() {
    run(async {
        let (_dir, _server, ch) = setup(100);
        let e = expect_err(
            call(&ch, "/fake.Fake/Status", "5|caf%C3%A9 %25 gone%zz").await,
            Code::NotFound,
        );
        assert_eq!(e.message, "caf\u{e9} % gone%zz");
        assert!(e.is_not_found());
        assert_eq!(
            e.to_string(),
            "/fake.Fake/Status: NotFound: caf\u{e9} % gone%zz"
        );
        for (code, want) in [
            ("4", Code::DeadlineExceeded),
            ("14", Code::Unavailable),
            ("16", Code::Unauthenticated),
            ("42", Code::Unknown),
        ] {
            let arg = format!("{code}|x");
            expect_err(call(&ch, "/fake.Fake/Status", &arg).await, want);
        }
        // OK in the trailers but no message: a broken server, not an empty answer.
        expect_err(call(&ch, "/fake.Fake/Status", "0|").await, Code::Internal);
        let e = expect_err(call(&ch, "/fake.Fake/NoStatus", "x").await, Code::Internal);
        assert!(e.message.contains("grpc-status"), "{e}");
    })
}

#[test]
fn dropping_the_last_channel_clone_closes_the_connection() {
    run(async {
        let (_dir, server, ch) = setup(100);
        let clone = ch.clone();
        assert_eq!(call(&ch, "/fake.Fake/Echo", "a").await.unwrap(), "a");
        drop(ch);
        assert_eq!(call(&clone, "/fake.Fake/Echo", "b").await.unwrap(), "b");
        assert_eq!(server.stats.closed.get(), 0);
        drop(clone);
        // The connection task notices and closes the socket (the run guard bounds this).
        while server.stats.closed.get() == 0 {
            Timer::after(Duration::from_millis(5)).await;
        }
        assert_eq!(server.stats.connections.get(), 1);
    })
}

#[test]
fn trailers_only_answers_carry_the_status() {
    run(async {
        let (_dir, _server, ch) = setup(100);
        let e = expect_err(
            call(&ch, "/fake.Fake/TrailersOnly", "6|name%20%22web%22 taken").await,
            Code::AlreadyExists,
        );
        assert_eq!(e.message, "name \"web\" taken");
        expect_err(
            call(&ch, "/fake.Fake/Unknown", "").await,
            Code::Unimplemented,
        );
        expect_err(
            call(&ch, "/fake.Fake/TrailersOnly", "0|").await,
            Code::Internal,
        );
    })
}

#[test]
fn a_message_split_into_one_byte_frames_is_reassembled() {
    run(async {
        let (_dir, _server, ch) = setup(100);
        // h2 itself refuses floods of tiny frames (its DATA frame budget: about 128
        // frames of 1 byte buffered at once), so each case stays below that.
        let text: String = (0..100)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let long = text.repeat(50);
        for (chunk, text) in [(1, &text), (2, &text), (3, &text), (7, &text), (200, &long)] {
            let arg = format!("{chunk}|{text}");
            assert_eq!(&call(&ch, "/fake.Fake/Split", &arg).await.unwrap(), text);
        }
        assert_eq!(call(&ch, "/fake.Fake/Split", "1|").await.unwrap(), "");
    })
}

#[test]
fn large_answers_flow_past_the_http2_window() {
    run(async {
        let (_dir, server, ch) = setup(100);
        // 1 MiB is 16 times the default window: it only arrives if capacity is released,
        // on the stream and on the connection, call after call.
        for _ in 0..3 {
            let s = call(&ch, "/fake.Fake/Big", "1048576").await.unwrap();
            assert_eq!(s.len(), 1 << 20);
        }
        assert_eq!(server.stats.connections.get(), 1);
    })
}

#[test]
fn oversized_answers_are_refused_before_allocating() {
    run(async {
        let (_dir, server, mut ch) = setup(100);
        // 64 MiB claimed, above the 16 MiB default: refused at the prefix, with no
        // allocation anywhere near the claimed size.
        LARGEST.with(|l| l.set(0));
        let e = expect_err(
            call(&ch, "/fake.Fake/Claim", "67108864").await,
            Code::ResourceExhausted,
        );
        assert!(
            e.message.contains("67108864") && e.message.contains("16777216"),
            "{e}"
        );
        let largest = LARGEST.with(|l| l.get());
        assert!(largest < 1 << 20, "largest allocation {largest} bytes");
        // The refused stream is reset, and the connection keeps serving.
        while server.stats.resets.borrow().is_empty() {
            Timer::after(Duration::from_millis(5)).await;
        }
        assert_eq!(server.stats.resets.borrow()[0], h2::Reason::CANCEL);
        assert_eq!(
            call(&ch, "/fake.Fake/Echo", "still").await.unwrap(),
            "still"
        );
        // A lowered limit: exactly the limit passes, one byte more does not.
        ch.set_max_recv_size(1000 + 3);
        assert_eq!(
            call(&ch, "/fake.Fake/Big", "1000").await.unwrap().len(),
            1000
        );
        expect_err(
            call(&ch, "/fake.Fake/Big", "1001").await,
            Code::ResourceExhausted,
        );
        assert_eq!(server.stats.connections.get(), 1);
    })
}

#[test]
fn compressed_messages_are_refused() {
    run(async {
        let (_dir, _server, ch) = setup(100);
        let e = expect_err(
            call(&ch, "/fake.Fake/Compressed", "x").await,
            Code::Internal,
        );
        assert!(e.message.contains("compressed"), "{e}");
    })
}

#[test]
fn stream_resets_map_by_reason_and_spare_the_connection() {
    run(async {
        let (_dir, server, ch) = setup(100);
        let cases = [
            ("2", Code::Internal),           // INTERNAL_ERROR
            ("7", Code::Unavailable),        // REFUSED_STREAM
            ("8", Code::Cancelled),          // CANCEL
            ("11", Code::ResourceExhausted), // ENHANCE_YOUR_CALM
        ];
        for (reason, code) in cases {
            expect_err(call(&ch, "/fake.Fake/Reset", reason).await, code);
        }
        expect_err(
            call(&ch, "/fake.Fake/ResetMidway", "2").await,
            Code::Internal,
        );
        assert_eq!(call(&ch, "/fake.Fake/Echo", "ok").await.unwrap(), "ok");
        assert_eq!(server.stats.connections.get(), 1);
    })
}

#[test]
fn a_silent_server_hits_the_deadline_and_the_stream_is_cancelled() {
    run(async {
        let (_dir, server, ch) = setup(100);
        let started = Instant::now();
        let e = expect_err(
            call_within(
                &ch,
                "/fake.Fake/Never",
                "",
                Some(Duration::from_millis(200)),
            )
            .await,
            Code::DeadlineExceeded,
        );
        assert!(e.is_deadline_exceeded());
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert_eq!(
            server.stats.requests.borrow()[0].headers["grpc-timeout"],
            "200m"
        );
        // The server learns the call is over: RST_STREAM(CANCEL).
        while server.stats.resets.borrow().is_empty() {
            Timer::after(Duration::from_millis(5)).await;
        }
        assert_eq!(server.stats.resets.borrow()[0], h2::Reason::CANCEL);
        assert_eq!(
            call(&ch, "/fake.Fake/Echo", "after").await.unwrap(),
            "after"
        );
        assert_eq!(server.stats.connections.get(), 1);
    })
}

#[test]
fn goaway_fails_the_call_in_flight_and_the_next_call_reconnects() {
    run(async {
        let (_dir, server, ch) = setup(100);
        assert_eq!(call(&ch, "/fake.Fake/Echo", "a").await.unwrap(), "a");
        for reason in ["0", "2"] {
            let e = expect_err(
                call(&ch, "/fake.Fake/GoAway", reason).await,
                Code::Unavailable,
            );
            assert!(e.is_unavailable());
            assert_eq!(call(&ch, "/fake.Fake/Echo", "b").await.unwrap(), "b");
        }
        assert_eq!(server.stats.connections.get(), 3);
    })
}

#[test]
fn a_gracefully_closed_idle_connection_is_replaced_transparently() {
    run(async {
        let (_dir, server, ch) = setup(100);
        for i in 0..3 {
            let arg = i.to_string();
            assert_eq!(
                call(&ch, "/fake.Fake/EchoThenGoAway", &arg).await.unwrap(),
                arg
            );
            Timer::after(Duration::from_millis(20)).await;
        }
        assert_eq!(server.stats.connections.get(), 3);
    })
}

#[test]
fn a_server_that_hangs_up_mid_call_gives_unavailable_then_reconnects() {
    run(async {
        let (_dir, server, ch) = setup(100);
        assert_eq!(call(&ch, "/fake.Fake/Echo", "a").await.unwrap(), "a");
        expect_err(call(&ch, "/fake.Fake/Hangup", "").await, Code::Unavailable);
        assert_eq!(call(&ch, "/fake.Fake/Echo", "b").await.unwrap(), "b");
        assert_eq!(server.stats.connections.get(), 2);
    })
}

#[test]
fn garbage_instead_of_http2_is_unavailable_with_backoff() {
    run(async {
        let dir = TempDir::new();
        let replies: [&'static [u8]; 3] = [
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
            &[0xff; 64],
            b"",
        ];
        for (i, reply) in replies.into_iter().enumerate() {
            let sock = dir.join(&format!("garbage{i}.sock"));
            let _server = start_garbage(&sock, reply);
            let ch = Channel::new(sock.to_str().unwrap()).unwrap();
            let e = expect_err(call(&ch, "/fake.Fake/Echo", "x").await, Code::Unavailable);
            // The connection never answered: the next call waits out the backoff and
            // says when the next attempt is.
            let e2 = expect_err(call(&ch, "/fake.Fake/Echo", "x").await, Code::Unavailable);
            assert!(e2.message.contains("next attempt in"), "{e} / {e2}");
        }
    })
}

#[test]
fn non_200_http_statuses_map_to_grpc_codes() {
    run(async {
        let (_dir, _server, ch) = setup(100);
        for (status, code) in [
            ("503", Code::Unavailable),
            ("404", Code::Unimplemented),
            ("401", Code::Unauthenticated),
            ("500", Code::Unknown),
            ("200", Code::Unknown), // 200 but text/html
        ] {
            let e = expect_err(call(&ch, "/fake.Fake/Http", status).await, code);
            assert!(
                e.message.contains(status) || e.message.contains("text/html"),
                "{e}"
            );
        }
    })
}

#[test]
fn many_concurrent_calls_share_one_connection() {
    run(async {
        // The server allows 4 streams at a time: the client must queue the rest.
        let (_dir, server, ch) = setup(4);
        let calls: Vec<_> = (0..64)
            .map(|i| {
                let ch = ch.clone();
                tinylet::rt::spawn(async move {
                    let arg = format!("call {i}");
                    (arg.clone(), call(&ch, "/fake.Fake/Slow", &arg).await)
                })
            })
            .collect();
        for task in calls {
            let (arg, got) = task.await;
            assert_eq!(got.unwrap(), arg);
        }
        assert_eq!(server.stats.connections.get(), 1);
        let max = server.stats.max_active.get();
        assert!((2..=4).contains(&max), "max concurrent streams {max}");
    })
}

#[test]
fn reconnects_after_the_runtime_restarts_on_the_same_path() {
    run(async {
        let dir = TempDir::new();
        let sock = dir.join("cri.sock");
        let ch = Channel::new(&format!("unix://{}", sock.display())).unwrap();
        let first = FakeServer::start(&sock, 100);
        assert_eq!(call(&ch, "/fake.Fake/Echo", "1").await.unwrap(), "1");
        first.stop();
        Timer::after(Duration::from_millis(10)).await;
        let e = expect_err(call(&ch, "/fake.Fake/Echo", "2").await, Code::Unavailable);
        assert!(e.message.contains("cri.sock"), "{e}");
        let second = FakeServer::start(&sock, 100);
        let got = retry_until_ok(&ch, "3").await;
        assert_eq!(got, "3");
        assert_eq!(second.stats.connections.get(), 1);
    })
}

/// Calls Echo until it succeeds (backoff may make the first tries fail fast).
async fn retry_until_ok(ch: &Channel, arg: &str) -> String {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        match call(ch, "/fake.Fake/Echo", arg).await {
            Ok(s) => return s,
            Err(e) if e.is_unavailable() && Instant::now() < give_up => {
                Timer::after(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("no reconnect: {e}"),
        }
    }
}

#[test]
fn a_missing_socket_is_unavailable_until_the_runtime_appears() {
    run(async {
        let dir = TempDir::new();
        let sock = dir.join("later.sock");
        let ch = Channel::new(sock.to_str().unwrap()).unwrap();
        let e = expect_err(call(&ch, "/fake.Fake/Echo", "x").await, Code::Unavailable);
        assert!(e.message.contains("later.sock"), "{e}");
        // Failing fast: no connection attempt, just when the next one will be.
        let e = expect_err(call(&ch, "/fake.Fake/Echo", "x").await, Code::Unavailable);
        assert!(e.message.contains("next attempt in"), "{e}");
        let _server = FakeServer::start(&sock, 100);
        assert_eq!(retry_until_ok(&ch, "y").await, "y");
    })
}

#[test]
fn a_channel_stays_on_the_executor_thread_and_async_io_helper() {
    threads::run_child("threads added by Channel: ");
}

#[test]
#[ignore = "run as a child process by a_channel_stays_on_the_executor_thread_and_async_io_helper"]
fn thread_count_child() {
    assert!(threads::in_child());
    let before = threads::thread_names();
    run(async {
        let (_dir, _server, ch) = setup(100);
        let calls: Vec<_> = (0..16)
            .map(|i| {
                let ch = ch.clone();
                tinylet::rt::spawn(
                    async move { call(&ch, "/fake.Fake/Slow", &i.to_string()).await },
                )
            })
            .collect();
        for c in calls {
            c.await.unwrap();
        }
        let _ = call_within(&ch, "/fake.Fake/Never", "", Some(Duration::from_millis(50))).await;
    });
    let after = threads::thread_names();
    let mut added = after.clone();
    for name in &before {
        if let Some(i) = added.iter().position(|n| n == name) {
            added.remove(i);
        }
    }
    println!("threads before: {before:?}, after: {after:?}");
    println!("threads added by Channel: {}", added.len());
    assert!(
        added.iter().all(|n| n == "async-io"),
        "unexpected threads {added:?}"
    );
    assert!(added.len() <= 1, "{added:?}");
}
