//! An in-process gRPC server (h2's server side) on a Unix socket in a temp directory,
//! driven by the test's own executor. It behaves as a broken or hostile runtime on
//! demand: the method called picks the misbehaviour, the request message (an `Echo`
//! string) carries its parameter.

use crate::wire::{frame, grpc_head, trailers};
use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream};
use http::{HeaderMap, Request, Response};
use smol::channel::{Receiver, Sender};
use smol::{Async, Task, Timer};
use std::cell::{Cell, RefCell};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tinylet::cri::io::TokioIo;

/// The test message: one string.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Echo {
    #[prost(string, tag = "1")]
    pub s: String,
}

/// A scratch directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tinylet-cri-fake-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What one request looked like on the wire.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub uri: String,
    pub headers: HeaderMap,
}

/// Counters the tests assert on.
#[derive(Default)]
pub struct Stats {
    pub connections: Cell<usize>,
    /// Connections that ended (closed by either side).
    pub closed: Cell<usize>,
    pub requests: RefCell<Vec<Seen>>,
    pub active: Cell<usize>,
    pub max_active: Cell<usize>,
    /// Reasons of RST_STREAMs the client sent on streams the server was holding.
    pub resets: RefCell<Vec<Reason>>,
}

/// Connection-level misbehaviour, asked for by a handler.
enum Control {
    /// Send GOAWAY with this reason and close, abandoning open streams.
    AbruptGoAway(Reason),
    /// Send GOAWAY and close once the open streams are done.
    GracefulGoAway,
    /// Close the socket without a word.
    Hangup,
}

/// A running fake server. Dropping it (or [`FakeServer::stop`]) closes the listener and
/// every connection and removes the socket.
pub struct FakeServer {
    pub path: PathBuf,
    pub stats: Rc<Stats>,
    tasks: Rc<RefCell<Vec<Task<()>>>>,
}

impl FakeServer {
    /// Listens on `path`; at most `max_streams` concurrent streams per connection.
    pub fn start(path: &Path, max_streams: u32) -> FakeServer {
        let listener = Async::<UnixListener>::bind(path).expect("bind fake server");
        let stats = Rc::new(Stats::default());
        let tasks = Rc::new(RefCell::new(Vec::new()));
        let accept = tinylet::rt::spawn(accept_loop(
            listener,
            stats.clone(),
            tasks.clone(),
            max_streams,
        ));
        tasks.borrow_mut().push(accept);
        FakeServer {
            path: path.to_path_buf(),
            stats,
            tasks,
        }
    }

    pub fn stop(self) {}
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        let tasks = std::mem::take(&mut *self.tasks.borrow_mut());
        drop(tasks);
        let _ = std::fs::remove_file(&self.path);
    }
}

async fn accept_loop(
    listener: Async<UnixListener>,
    stats: Rc<Stats>,
    tasks: Rc<RefCell<Vec<Task<()>>>>,
    max_streams: u32,
) {
    while let Ok((stream, _)) = listener.accept().await {
        stats.connections.set(stats.connections.get() + 1);
        let stats = stats.clone();
        let conn = tinylet::rt::spawn(async move {
            serve_connection(stream, stats.clone(), max_streams).await;
            stats.closed.set(stats.closed.get() + 1);
        });
        tasks.borrow_mut().push(conn);
    }
}

/// A request and the handle to answer it.
struct Incoming(Request<RecvStream>, SendResponse<Bytes>);

async fn serve_connection(stream: Async<UnixStream>, stats: Rc<Stats>, max_streams: u32) {
    let handshake = h2::server::Builder::new()
        .max_concurrent_streams(max_streams)
        .handshake::<_, Bytes>(TokioIo::new(stream));
    let Ok(mut conn) = handshake.await else {
        return;
    };
    let (control_tx, control_rx) = smol::channel::unbounded::<Control>();
    let mut handlers: Vec<Task<()>> = Vec::new();
    enum Event {
        Request(Option<Result<Box<Incoming>, h2::Error>>),
        Control(Control),
    }
    loop {
        let rx: &Receiver<Control> = &control_rx;
        let accept = async {
            let next = conn.accept().await;
            Event::Request(next.map(|r| r.map(|(req, respond)| Box::new(Incoming(req, respond)))))
        };
        let event = smol::future::or(accept, async {
            match rx.recv().await {
                Ok(c) => Event::Control(c),
                Err(_) => std::future::pending().await,
            }
        })
        .await;
        match event {
            Event::Request(Some(Ok(incoming))) => {
                let Incoming(req, respond) = *incoming;
                let task =
                    tinylet::rt::spawn(handle(req, respond, stats.clone(), control_tx.clone()));
                handlers.push(task);
            }
            Event::Request(_) => return,
            Event::Control(Control::AbruptGoAway(reason)) => conn.abrupt_shutdown(reason),
            Event::Control(Control::GracefulGoAway) => conn.graceful_shutdown(),
            Event::Control(Control::Hangup) => return,
        }
    }
}

/// Serves one call according to its method.
async fn handle(
    req: Request<RecvStream>,
    respond: SendResponse<Bytes>,
    stats: Rc<Stats>,
    control: Sender<Control>,
) {
    let (head, body) = req.into_parts();
    let method = head.uri.path().to_string();
    stats.requests.borrow_mut().push(Seen {
        method: head.method.to_string(),
        uri: head.uri.to_string(),
        headers: head.headers.clone(),
    });
    stats.active.set(stats.active.get() + 1);
    stats
        .max_active
        .set(stats.max_active.get().max(stats.active.get()));
    let arg = read_request(body).await;
    let _ = behave(&method, arg, respond, &stats, &control).await;
    stats.active.set(stats.active.get() - 1);
}

/// Reads the whole request body and decodes its `Echo` string.
async fn read_request(mut body: RecvStream) -> String {
    let mut all = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        all.extend_from_slice(&chunk);
    }
    let msg = all.get(5..).unwrap_or_default();
    <Echo as prost::Message>::decode(msg)
        .map(|e| e.s)
        .unwrap_or_default()
}

fn echo_frame(s: &str) -> Vec<u8> {
    frame(&prost::Message::encode_to_vec(&Echo { s: s.to_string() }))
}

/// `"CODE|MESSAGE"` split in two.
fn code_and_message(arg: &str) -> (&str, &str) {
    arg.split_once('|').unwrap_or((arg, ""))
}

fn reason(arg: &str) -> Reason {
    Reason::from(arg.parse::<u32>().unwrap_or(2))
}

/// Waits until the client resets the stream and records the reason.
async fn await_reset(respond: &mut SendResponse<Bytes>, stats: &Stats) {
    let r = std::future::poll_fn(|cx| respond.poll_reset(cx)).await;
    if let Ok(reason) = r {
        stats.resets.borrow_mut().push(reason);
    }
}

async fn behave(
    method: &str,
    arg: String,
    mut respond: SendResponse<Bytes>,
    stats: &Stats,
    control: &Sender<Control>,
) -> Result<(), h2::Error> {
    match method {
        // The request string back, in one DATA frame, status in trailers.
        "/fake.Fake/Echo" => {
            let mut s = respond.send_response(grpc_head(), false)?;
            s.send_data(echo_frame(&arg).into(), false)?;
            s.send_trailers(trailers("0", ""))?;
        }
        // Echo after a pause, so calls overlap.
        "/fake.Fake/Slow" => {
            Timer::after(Duration::from_millis(20)).await;
            let mut s = respond.send_response(grpc_head(), false)?;
            s.send_data(echo_frame(&arg).into(), false)?;
            s.send_trailers(trailers("0", ""))?;
        }
        // Echo in DATA frames of N bytes (prefix included): arg is "N|TEXT".
        "/fake.Fake/Split" => {
            let (n, text) = code_and_message(&arg);
            let n = n.parse().unwrap_or(1);
            let mut s = respond.send_response(grpc_head(), false)?;
            for c in echo_frame(text).chunks(n) {
                s.send_data(Bytes::copy_from_slice(c), false)?;
            }
            s.send_trailers(trailers("0", ""))?;
        }
        // A message of `arg` bytes, in 16 KiB DATA frames.
        "/fake.Fake/Big" => {
            let n: usize = arg.parse().unwrap_or(0);
            let data = echo_frame(&"x".repeat(n));
            let mut s = respond.send_response(grpc_head(), false)?;
            for c in data.chunks(16 << 10) {
                s.send_data(Bytes::copy_from_slice(c), false)?;
            }
            s.send_trailers(trailers("0", ""))?;
        }
        // A prefix claiming `arg` bytes, a few bytes, then nothing until reset.
        "/fake.Fake/Claim" => {
            let n: u32 = arg.parse().unwrap_or(0);
            let mut data = vec![0];
            data.extend_from_slice(&n.to_be_bytes());
            data.extend_from_slice(b"abcdefgh");
            let mut s = respond.send_response(grpc_head(), false)?;
            s.send_data(data.into(), false)?;
            let r = std::future::poll_fn(|cx| s.poll_reset(cx)).await;
            if let Ok(reason) = r {
                stats.resets.borrow_mut().push(reason);
            }
        }
        // A message with the compressed flag set.
        "/fake.Fake/Compressed" => {
            let mut data = echo_frame(&arg);
            data[0] = 1;
            let mut s = respond.send_response(grpc_head(), false)?;
            s.send_data(data.into(), false)?;
            s.send_trailers(trailers("0", ""))?;
        }
        // Headers and an error status in trailers: arg is "CODE|MESSAGE".
        "/fake.Fake/Status" => {
            let (code, message) = code_and_message(&arg);
            let mut s = respond.send_response(grpc_head(), false)?;
            s.send_trailers(trailers(code, message))?;
        }
        // Trailers-Only: the status in the only HEADERS frame.
        "/fake.Fake/TrailersOnly" => {
            let (code, message) = code_and_message(&arg);
            let mut head = grpc_head();
            head.headers_mut().extend(trailers(code, message));
            respond.send_response(head, true)?;
        }
        // A message, then the stream ends without trailers.
        "/fake.Fake/NoStatus" => {
            let mut s = respond.send_response(grpc_head(), false)?;
            s.send_data(echo_frame(&arg).into(), true)?;
        }
        // A plain HTTP answer: arg is the status.
        "/fake.Fake/Http" => {
            let status: u16 = arg.parse().unwrap_or(500);
            let head = Response::builder()
                .status(status)
                .header("content-type", "text/html")
                .body(())
                .unwrap();
            let mut s = respond.send_response(head, false)?;
            s.send_data(Bytes::from_static(b"<html>nope</html>"), true)?;
        }
        // RST_STREAM with reason `arg` before any answer.
        "/fake.Fake/Reset" => respond.send_reset(reason(&arg)),
        // Half a message, then RST_STREAM with reason `arg`.
        "/fake.Fake/ResetMidway" => {
            let data = echo_frame("some reply text");
            let mut s = respond.send_response(grpc_head(), false)?;
            s.send_data(Bytes::copy_from_slice(&data[..8]), false)?;
            Timer::after(Duration::from_millis(10)).await;
            s.send_reset(reason(&arg));
        }
        // Never answers; records the client's reset.
        "/fake.Fake/Never" => await_reset(&mut respond, stats).await,
        // Abrupt GOAWAY with reason `arg` while this call waits.
        "/fake.Fake/GoAway" => {
            let _ = control.send(Control::AbruptGoAway(reason(&arg))).await;
            await_reset(&mut respond, stats).await;
        }
        // Echo, then a graceful GOAWAY: the connection is done after this call.
        "/fake.Fake/EchoThenGoAway" => {
            let mut s = respond.send_response(grpc_head(), false)?;
            s.send_data(echo_frame(&arg).into(), false)?;
            s.send_trailers(trailers("0", ""))?;
            let _ = control.send(Control::GracefulGoAway).await;
        }
        // The connection is closed while this call waits.
        "/fake.Fake/Hangup" => {
            let _ = control.send(Control::Hangup).await;
            await_reset(&mut respond, stats).await;
        }
        _ => {
            let mut head = grpc_head();
            head.headers_mut().extend(trailers("12", "unknown method"));
            respond.send_response(head, true)?;
        }
    }
    Ok(())
}

/// A "server" that answers every connection with `reply` instead of HTTP/2, then closes.
pub fn start_garbage(path: &Path, reply: &'static [u8]) -> Task<()> {
    let listener = Async::<UnixListener>::bind(path).expect("bind garbage server");
    tinylet::rt::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            use smol::io::AsyncWriteExt;
            let mut stream = stream;
            let _ = stream.write_all(reply).await;
            // Linger a moment so the client reads the bytes rather than a reset.
            Timer::after(Duration::from_millis(20)).await;
        }
    })
}
