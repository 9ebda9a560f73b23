//! TLS over an async-io TCP socket, seen through tokio's `AsyncRead`/`AsyncWrite` (what
//! `h2` is written against), as `crate::cri::io` does for the CRI's Unix socket: no
//! tokio runtime, no thread. rustls does the TLS state machine without I/O of its own;
//! this moves its records to and from the non-blocking socket and registers with the
//! reactor when the socket would block. Every byte on the wire is counted
//! ([`super::counters::Counters`]): that is what the link costs.
//!
//! Generic over the side: the uplink's client and the kubelet API's server (and the
//! tests' servers) use the same adapter.

use super::counters::Counters;
use super::error::ConnectError;
use async_io::{Async, Timer};
use rustls::{ConnectionCommon, SideData};
use std::future::poll_fn;
use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::ops::DerefMut;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A TLS connection (`rustls::ClientConnection` or `ServerConnection`) on a TCP socket.
pub struct TlsStream<C> {
    io: Async<TcpStream>,
    tls: C,
    counters: Rc<Counters>,
}

impl<C, S> TlsStream<C>
where
    C: DerefMut<Target = ConnectionCommon<S>> + Unpin,
    S: SideData,
{
    /// Runs the TLS handshake on a connected socket.
    pub async fn handshake(
        io: Async<TcpStream>,
        tls: C,
        counters: Rc<Counters>,
    ) -> Result<TlsStream<C>, ConnectError> {
        Self::handshake_paced(io, tls, counters, &Unpaced).await
    }

    /// [`TlsStream::handshake`], with the steps that do the handshake's cryptography
    /// (processing what the peer sent: key exchange, signatures, certificate checks)
    /// waiting for `pace` and reported to it, so a server can ration them.
    pub async fn handshake_paced(
        io: Async<TcpStream>,
        tls: C,
        counters: Rc<Counters>,
        pace: &impl Pace,
    ) -> Result<TlsStream<C>, ConnectError> {
        let mut stream = TlsStream { io, tls, counters };
        while stream.tls.is_handshaking() {
            if stream.tls.wants_write() {
                poll_fn(|cx| stream.poll_send(cx))
                    .await
                    .map_err(ConnectError::Io)?;
                continue;
            }
            let n = poll_fn(|cx| stream.poll_receive(cx))
                .await
                .map_err(ConnectError::Io)?;
            while let Some(wait) = pace.wait() {
                Timer::after(wait).await;
            }
            let started = Instant::now();
            let processed = stream.process();
            pace.spent(started.elapsed());
            processed.map_err(|e| match e.downcast::<rustls::Error>() {
                Ok(tls) => ConnectError::Tls(tls),
                Err(e) => ConnectError::Io(e),
            })?;
            if n == 0 && stream.tls.is_handshaking() {
                let eof = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection during the TLS handshake",
                );
                return Err(ConnectError::Io(eof));
            }
        }
        // The client's Finished (and anything queued) goes out now.
        poll_fn(|cx| stream.poll_send(cx))
            .await
            .map_err(ConnectError::Io)?;
        Ok(stream)
    }

    /// The TLS connection (negotiated protocol, peer certificates).
    pub fn connection(&self) -> &C {
        &self.tls
    }

    /// Reads what the socket has into rustls (once); 0 at the peer's EOF.
    fn poll_receive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        loop {
            match self.tls.read_tls(&mut SocketRef(&self.io)) {
                Ok(n) => {
                    self.counters.received(n);
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    ready!(self.io.poll_readable(cx))?
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Writes every pending TLS record to the socket.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut SocketRef(&self.io)) {
                Ok(n) => self.counters.sent(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    ready!(self.io.poll_writable(cx))?
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Decrypts what was received. A TLS error is returned as an `InvalidData` I/O
    /// error carrying the `rustls::Error`, after trying to send the alert rustls queued.
    fn process(&mut self) -> io::Result<()> {
        match self.tls.process_new_packets() {
            Ok(_) => Ok(()),
            Err(e) => {
                let _ = self.tls.write_tls(&mut SocketRef(&self.io));
                self.counters.tls_failed(e.clone());
                Err(io::Error::new(io::ErrorKind::InvalidData, e))
            }
        }
    }
}

/// A rationing of the handshake's cryptography on the one thread.
pub trait Pace {
    /// How long to wait before the next step (`None`: go now).
    fn wait(&self) -> Option<Duration>;
    /// A step took `time`.
    fn spent(&self, time: Duration);
}

/// No rationing (a client's handshakes: one per connection it makes).
struct Unpaced;

impl Pace for Unpaced {
    fn wait(&self) -> Option<Duration> {
        None
    }

    fn spent(&self, _: Duration) {}
}

/// `&TcpStream` as `Read`/`Write` for rustls (the socket is non-blocking).
struct SocketRef<'a>(&'a Async<TcpStream>);

impl Read for SocketRef<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut socket: &TcpStream = self.0.get_ref();
        socket.read(buf)
    }
}

impl Write for SocketRef<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut socket: &TcpStream = self.0.get_ref();
        socket.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut socket: &TcpStream = self.0.get_ref();
        socket.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<C, S> AsyncRead for TlsStream<C>
where
    C: DerefMut<Target = ConnectionCommon<S>> + Unpin,
    S: SideData,
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match this.tls.reader().read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            // No plaintext buffered: read and decrypt more. At EOF rustls's reader
            // then says whether the close was clean (Ok(0)) or not (UnexpectedEof).
            ready!(this.poll_receive(cx))?;
            this.process()?;
            if this.tls.wants_write() {
                // e.g. a KeyUpdate answer; what does not fit now goes with the next flush.
                if let Poll::Ready(Err(e)) = this.poll_send(cx) {
                    return Poll::Ready(Err(e));
                }
            }
        }
    }
}

impl<C, S> AsyncWrite for TlsStream<C>
where
    C: DerefMut<Target = ConnectionCommon<S>> + Unpin,
    S: SideData,
{
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    /// Queued records go out first, so rustls's buffer never grows past one write.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        let n = this.tls.writer().write_vectored(bufs)?;
        if let Poll::Ready(Err(e)) = this.poll_send(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_send(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.tls.send_close_notify();
        ready!(this.poll_send(cx))?;
        Poll::Ready(this.io.get_ref().shutdown(std::net::Shutdown::Write))
    }
}
