//! Lets `h2` drive an async-io socket: h2 is written against tokio's `AsyncRead` /
//! `AsyncWrite` traits, async-io implements the `futures-io` ones. This adapter maps one
//! onto the other, so no tokio runtime (and no extra thread) is ever started.
//!
//! Public because test servers (h2's server side) need the same adapter.

use async_io::Async;
use smol::io::{AsyncRead as FuturesRead, AsyncWrite as FuturesWrite};
use std::io::{self, IoSlice, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// An async-io socket seen through tokio's I/O traits.
///
/// Reads skip the `read` that would only say "would block": after a read shorter than
/// the buffer (a stream socket's receive queue was emptied), the next read first asks
/// the reactor whether an event came since, and registers for one if not. async-io's own
/// `poll_read` tries the read first, which costs one or two failed `recvfrom` calls per
/// wakeup, and h2 polls the socket again each time a request is queued.
pub struct TokioIo<T> {
    io: Async<T>,
    /// The last read returned less than asked: the socket had nothing more then.
    drained: bool,
}

impl<T> TokioIo<T> {
    /// Wraps the socket `io`.
    pub fn new(io: Async<T>) -> Self {
        TokioIo { io, drained: false }
    }
}

impl<T> AsyncRead for TokioIo<T>
where
    for<'a> &'a T: Read,
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.drained {
            // Pending here registers for the next event; an event that came meanwhile
            // (or data that arrived just after the short read) makes it Ready at once.
            std::task::ready!(this.io.poll_readable(cx))?;
        }
        // h2 hands a fresh uninitialised buffer each time; zeroing it is a memset of
        // at most a few KiB, cheaper than a syscall, and keeps this file free of unsafe.
        let dst = buf.initialize_unfilled();
        let want = dst.len();
        let n = std::task::ready!(Pin::new(&mut &this.io).poll_read(cx, dst))?;
        this.drained = n < want;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl<T> AsyncWrite for TokioIo<T>
where
    for<'a> &'a T: Write,
{
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut &self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut &self.io).poll_write_vectored(cx, bufs)
    }

    /// Lets h2 hand headers and message payloads to one `writev` instead of copying
    /// payloads into its write buffer.
    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &self.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &self.io).poll_close(cx)
    }
}
