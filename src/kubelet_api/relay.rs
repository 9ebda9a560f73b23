//! The byte relay of an exec, attach or port-forward stream: what the API server sends
//! goes to the runtime's streaming server and back, unread (SPDY or WebSocket framing
//! is the two ends' business), until either side closes or nothing moves for the idle
//! timeout.
//!
//! One future polls both directions, so a stream is one task on the agent's executor
//! with one waker. Each direction has a buffer of [`CHUNK`] and reads only once the
//! other side took the previous chunk: a side that stops reading stalls its direction,
//! never grows memory. The buffer is only held while its direction moves or is stalled:
//! it is freed when the reading side has nothing, so an open but quiet stream (a shell
//! waiting for a key) costs no buffer. A busy stream yields after a few chunks so the
//! other tasks run.

use async_io::Timer;
use smol::io::{AsyncRead, AsyncWrite};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Bytes buffered per direction, at most: two per active stream. 8 KiB: 20 streams
/// moving bulk data at once hold 320 KiB of buffers; a TLS record per chunk costs 22
/// bytes of framing (0.3 %).
pub const CHUNK: usize = 8 << 10;
/// Chunks moved per direction in one poll before yielding to other tasks.
const CHUNKS_PER_POLL: usize = 8;

/// How a relay ended.
#[derive(Debug)]
pub enum Ended {
    /// The client (the API server) closed its side.
    ClientClosed,
    /// The runtime's streaming server closed its side (the process ended, say).
    RuntimeClosed,
    /// No byte moved either way for the idle timeout.
    Idle,
    /// Reading or writing failed.
    Failed(io::Error),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::ClientClosed => f.write_str("the client closed"),
            Ended::RuntimeClosed => f.write_str("the runtime closed"),
            Ended::Idle => f.write_str("idle timeout"),
            Ended::Failed(e) => write!(f, "failed: {e}"),
        }
    }
}

/// One direction: a buffer (while one is needed) and what of it is still to be written.
struct Pipe {
    buf: Option<Box<[u8]>>,
    start: usize,
    end: usize,
    unflushed: bool,
}

/// What one poll of a direction did.
enum Step {
    /// Blocked (the waker is registered); `true` when bytes moved first.
    Pending(bool),
    /// Moved its share for this poll; more may follow.
    Busy,
    /// The reading side reached its end, everything read was written.
    Eof,
}

impl Pipe {
    fn new() -> Pipe {
        Pipe {
            buf: None,
            start: 0,
            end: 0,
            unflushed: false,
        }
    }

    /// What was read and not yet written (`None`: nothing).
    fn unwritten(&self) -> Option<&[u8]> {
        let b = self.buf.as_deref()?.get(self.start..self.end)?;
        (!b.is_empty()).then_some(b)
    }

    /// Moves bytes from `r` to `w` until one blocks, the reader ends, or its share ran.
    fn poll_move<R, W>(&mut self, cx: &mut Context<'_>, r: &mut R, w: &mut W) -> io::Result<Step>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let mut moved = false;
        for _ in 0..CHUNKS_PER_POLL {
            while let Some(pending) = self.unwritten() {
                match Pin::new(&mut *w).poll_write(cx, pending) {
                    Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                    Poll::Ready(Ok(n)) => {
                        self.start += n;
                        self.unflushed = true;
                        moved = true;
                    }
                    Poll::Ready(Err(e)) => return Err(e),
                    Poll::Pending => return Ok(Step::Pending(moved)),
                }
            }
            if self.unflushed {
                match Pin::new(&mut *w).poll_flush(cx) {
                    Poll::Ready(Ok(())) => self.unflushed = false,
                    Poll::Ready(Err(e)) => return Err(e),
                    Poll::Pending => return Ok(Step::Pending(moved)),
                }
            }
            let buf = self
                .buf
                .get_or_insert_with(|| vec![0; CHUNK].into_boxed_slice());
            (self.start, self.end) = (0, 0);
            match Pin::new(&mut *r).poll_read(cx, buf) {
                Poll::Ready(Ok(0)) => return Ok(Step::Eof),
                Poll::Ready(Ok(n)) => {
                    self.end = n;
                    moved = true;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {
                    // Nothing held: the buffer goes until bytes come.
                    self.buf = None;
                    return Ok(Step::Pending(moved));
                }
            }
        }
        Ok(Step::Busy)
    }
}

/// Relays between `client` and `runtime` until one closes, an error, or `idle` passes
/// with no byte moved. Neither side is closed here.
pub async fn relay<C, R>(client: &mut C, runtime: &mut R, idle: Duration) -> Ended
where
    C: AsyncRead + AsyncWrite + Unpin,
    R: AsyncRead + AsyncWrite + Unpin,
{
    let mut up = Pipe::new();
    let mut down = Pipe::new();
    let mut timer = Timer::after(idle);
    std::future::poll_fn(move |cx| {
        let mut moved = false;
        let mut busy = false;
        match up.poll_move(cx, client, runtime) {
            Ok(Step::Eof) => return Poll::Ready(Ended::ClientClosed),
            Ok(Step::Busy) => busy = true,
            Ok(Step::Pending(m)) => moved |= m,
            Err(e) => return Poll::Ready(Ended::Failed(e)),
        }
        match down.poll_move(cx, runtime, client) {
            Ok(Step::Eof) => return Poll::Ready(Ended::RuntimeClosed),
            Ok(Step::Busy) => busy = true,
            Ok(Step::Pending(m)) => moved |= m,
            Err(e) => return Poll::Ready(Ended::Failed(e)),
        }
        if busy || moved {
            timer.set_after(idle);
        }
        if busy {
            // Its share is used: run the others, then come back.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        match Pin::new(&mut timer).poll(cx) {
            Poll::Ready(_) => Poll::Ready(Ended::Idle),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_io::Async;
    use smol::io::{AsyncReadExt, AsyncWriteExt};
    use std::net::{TcpListener, TcpStream};

    /// Two connected sockets.
    fn pair() -> (Async<TcpStream>, Async<TcpStream>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (Async::new(a).unwrap(), Async::new(b).unwrap())
    }

    #[test]
    fn bytes_pass_both_ways_and_a_close_ends_it() {
        smol::block_on(async {
            let (mut client, mut near_c) = pair();
            let (mut near_r, mut runtime) = pair();
            let relay = relay(&mut near_c, &mut near_r, Duration::from_secs(30));
            let ends = async {
                let big = vec![7u8; 5 * CHUNK + 3];
                client.write_all(&big).await.unwrap();
                let mut got = vec![0u8; big.len()];
                runtime.read_exact(&mut got).await.unwrap();
                assert_eq!(got, big);
                runtime.write_all(b"exit 3").await.unwrap();
                let mut back = [0u8; 6];
                client.read_exact(&mut back).await.unwrap();
                assert_eq!(&back, b"exit 3");
                drop(runtime);
            };
            let (ended, ()) = smol::future::zip(relay, ends).await;
            assert!(matches!(ended, Ended::RuntimeClosed), "{ended:?}");
        });
    }

    #[test]
    fn nothing_moving_ends_it_after_the_idle_time() {
        smol::block_on(async {
            let (_client, mut near_c) = pair();
            let (mut near_r, _runtime) = pair();
            let ended = relay(&mut near_c, &mut near_r, Duration::from_millis(200)).await;
            assert!(matches!(ended, Ended::Idle), "{ended:?}");
        });
    }

    #[test]
    fn a_reader_that_stops_stalls_its_direction_without_buffering() {
        smol::block_on(async {
            let (mut client, mut near_c) = pair();
            let (mut near_r, _runtime) = pair();
            // The runtime never reads: the client can write no more than the sockets'
            // buffers and one chunk, then the relay goes idle.
            let relay = relay(&mut near_c, &mut near_r, Duration::from_millis(500));
            let flood = async {
                let chunk = vec![1u8; 64 << 10];
                let mut sent = 0usize;
                let stalled = async {
                    loop {
                        client.write_all(&chunk).await.unwrap();
                        sent += chunk.len();
                    }
                };
                let later = async {
                    Timer::after(Duration::from_secs(2)).await;
                };
                smol::future::or(stalled, later).await;
                sent
            };
            let (ended, sent) = smol::future::zip(relay, flood).await;
            assert!(matches!(ended, Ended::Idle), "{ended:?}");
            assert!(sent < 64 << 20, "{sent} bytes taken by a stalled relay");
        });
    }
}
