//! `tinylet exec -i/-t`: the interactive form. CRI `Exec` gives a URL on the runtime's
//! streaming server; this relays the local stdin, stdout, stderr and window size over a
//! WebSocket to it (the channel protocol of `cri::stream_channels`) and returns the
//! remote command's exit code.
//!
//! One thread: stdin, the socket and the signals are awaited together on the executor.
//! Output is written before more is read (a slow terminal slows the remote command
//! instead of growing a buffer).
//!
//! Stdin EOF: with `v5.channel.k8s.io` the remote stdin is closed (its own message).
//! containerd 1.6 offers only v4, which has no way to close one stream: closing the
//! connection would close stdin but lose the output still in flight and the exit
//! status, so tinylet stops reading and keeps the session open until the command ends.

use super::exec_tty::{self, Restore};
use super::CliError;
use crate::cri::stream_channels::{self as ch, Incoming, Outcome};
use crate::cri::websocket::Message;
use crate::cri::ws_conn::WsConn;
use async_io::Async;
use async_signal::{Signal, Signals};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::stream::StreamExt;
use std::fs::File;
use std::io::{self, Read, Write};

/// What the session forwards.
#[derive(Clone, Copy, Debug)]
pub struct Streams {
    /// Forward stdin (`-i`).
    pub stdin: bool,
    /// The command runs on a terminal (`-t`): raw local terminal, resize messages.
    pub tty: bool,
}

/// A local fd: epoll-driven when it can be (terminal, pipe, socket), plain reads and
/// writes for what epoll refuses (regular files, /dev/null: those never block).
enum Local {
    Async(Async<File>),
    Plain(File),
}

impl Local {
    fn new(fd: rustix::fd::BorrowedFd<'_>) -> io::Result<Local> {
        let file = File::from(rustix::io::dup(fd)?);
        match Async::new(file) {
            Ok(a) => Ok(Local::Async(a)),
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::PERM.raw_os_error()) => {
                Ok(Local::Plain(File::from(rustix::io::dup(fd)?)))
            }
            Err(e) => Err(e),
        }
    }

    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Local::Async(a) => a.read(buf).await,
            Local::Plain(f) => f.read(buf),
        }
    }

    async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Local::Async(a) => a.write_all(data).await,
            Local::Plain(f) => f.write_all(data),
        }
    }
}

/// One thing that happened.
enum Event {
    Socket(Result<Option<Message>, crate::cri::ws_conn::WsError>),
    Stdin(io::Result<usize>),
    Signal(Option<io::Result<Signal>>),
}

fn failed(what: &str, e: impl std::fmt::Display) -> CliError {
    CliError::failed(format!("{what}: {e}"))
}

/// Runs the session on `url`; the remote command's exit code.
pub async fn run(url: &str, streams: Streams) -> Result<i32, CliError> {
    let mut ws = WsConn::connect(url, ch::PROTOCOLS)
        .await
        .map_err(|e| failed("exec stream", e))?;
    log::debug!("exec stream {url}: protocol {}", ws.protocol);
    let signals = [
        Signal::Winch,
        Signal::Term,
        Signal::Hup,
        Signal::Int,
        Signal::Quit,
        Signal::Tstp,
    ];
    let mut signals = Signals::new(signals).map_err(|e| failed("signals", e))?;
    // Before any fd turns non-blocking: the guard puts back what it saved.
    let restore =
        Restore::save(streams.tty && streams.stdin).map_err(|e| failed("terminal raw mode", e))?;
    let io_err = |e| failed("local stdio", e);
    let mut stdin = match streams.stdin {
        true => Some(Local::new(rustix::stdio::stdin()).map_err(io_err)?),
        false => None,
    };
    let mut stdout = Local::new(rustix::stdio::stdout()).map_err(io_err)?;
    let mut stderr = Local::new(rustix::stdio::stderr()).map_err(io_err)?;
    if streams.tty {
        send_size(&mut ws).await?;
    }
    let mut buf = vec![0u8; 16 * 1024];
    let mut outcome = None;
    loop {
        let event = next_event(&mut ws, stdin.as_mut(), &mut signals, &mut buf).await;
        match event {
            Event::Socket(Ok(Some(Message::Binary(m) | Message::Text(m)))) => {
                match ch::incoming(&m) {
                    Incoming::Stdout(d) => stdout.write_all(d).await.map_err(io_err)?,
                    Incoming::Stderr(d) => stderr.write_all(d).await.map_err(io_err)?,
                    Incoming::Status(d) => {
                        outcome = Some(ch::outcome(d).map_err(|e| failed("exec", e))?)
                    }
                    Incoming::Ignored => {}
                }
            }
            Event::Socket(Ok(Some(Message::Ping(p)))) => {
                ws.pong(&p).await.map_err(|e| failed("exec stream", e))?
            }
            Event::Socket(Ok(Some(Message::Pong))) => {}
            Event::Socket(Ok(Some(Message::Close(_)) | None)) => break,
            Event::Socket(Err(e)) => return Err(failed("exec stream", e)),
            Event::Stdin(Ok(0)) => {
                stdin = None;
                if ws.protocol == ch::V5 {
                    send(&mut ws, &ch::close_stdin()).await?;
                }
            }
            Event::Stdin(Ok(n)) => send(&mut ws, &ch::outgoing(ch::STDIN, &buf[..n])).await?,
            Event::Stdin(Err(e)) => return Err(failed("reading stdin", e)),
            Event::Signal(Some(Ok(Signal::Winch))) if streams.tty => send_size(&mut ws).await?,
            Event::Signal(Some(Ok(Signal::Winch))) => {}
            // Ctrl-Z (only without -t: a raw terminal sends it to the remote one).
            Event::Signal(Some(Ok(Signal::Tstp))) => {
                restore.stop_here();
                // The window may have changed while stopped.
                if streams.tty {
                    send_size(&mut ws).await?;
                }
            }
            Event::Signal(Some(Ok(sig))) => {
                let _ = ws.close().await;
                return Err(CliError {
                    code: 128 + sig as i32,
                    msg: format!("exec: ended by signal {sig:?}"),
                });
            }
            Event::Signal(other) => return Err(failed("signals", format!("{other:?}"))),
        }
    }
    let _ = stdout.write_all(b"").await;
    match outcome {
        Some(Outcome::Exited(code)) => Ok(code),
        Some(Outcome::Failed(msg)) => Err(CliError::failed(format!(
            "exec: the runtime could not run the command: {msg}"
        ))),
        None => Err(CliError::failed(
            "exec: the stream ended without the command's exit status",
        )),
    }
}

/// Waits for the socket, stdin (while open) or a signal, the socket first.
async fn next_event(
    ws: &mut WsConn,
    stdin: Option<&mut Local>,
    signals: &mut Signals,
    buf: &mut [u8],
) -> Event {
    let socket = async { Event::Socket(ws.recv().await) };
    let input = async {
        match stdin {
            Some(s) => Event::Stdin(s.read(buf).await),
            None => std::future::pending().await,
        }
    };
    let signal = async { Event::Signal(signals.next().await) };
    smol::future::or(socket, smol::future::or(signal, input)).await
}

async fn send(ws: &mut WsConn, payload: &[u8]) -> Result<(), CliError> {
    ws.send(payload).await.map_err(|e| failed("exec stream", e))
}

/// Tells the remote terminal the local window size (when there is a local terminal).
async fn send_size(ws: &mut WsConn) -> Result<(), CliError> {
    match exec_tty::window_size() {
        Some((w, h)) => send(ws, &ch::resize(w, h)).await,
        None => Ok(()),
    }
}
