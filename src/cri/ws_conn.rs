//! A WebSocket client connection to the runtime's streaming server: TCP to the URL's
//! loopback address, the opening handshake, then whole messages in and out.
//!
//! Plain `http://` only: the streaming server listens on loopback (the packaged
//! containerd config says so), where TLS would add size and nothing else.

use super::websocket::{self, Decoder, FrameError, Message};
use super::ws_handshake::{self as hs, HandshakeError};
use async_io::Async;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::fmt;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};

/// Largest message accepted from the server. containerd sends output in pieces of at
/// most 32 KiB; the status is small.
pub const MAX_MESSAGE: usize = 1 << 20;

/// Why the stream failed.
#[derive(Debug)]
pub enum WsError {
    /// Connecting, reading or writing.
    Io(io::Error),
    /// The opening handshake.
    Handshake(HandshakeError),
    /// A frame the client refuses.
    Frame(FrameError),
}

impl fmt::Display for WsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WsError::Io(e) => write!(f, "streaming connection: {e}"),
            WsError::Handshake(e) => e.fmt(f),
            WsError::Frame(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for WsError {}

impl From<io::Error> for WsError {
    fn from(e: io::Error) -> Self {
        WsError::Io(e)
    }
}

/// An open WebSocket.
pub struct WsConn {
    sock: Async<TcpStream>,
    decoder: Decoder,
    /// The subprotocol the server chose.
    pub protocol: String,
}

impl WsConn {
    /// Connects to `url` (`http://HOST:PORT/PATH`) offering `protocols`.
    pub async fn connect(url: &str, protocols: &[&str]) -> Result<WsConn, WsError> {
        let (host, path) = hs::split_url(url).map_err(WsError::Handshake)?;
        // The runtime gives an IP address: no resolver runs.
        let addr = host
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| WsError::Handshake(HandshakeError::BadUrl(url.into())))?;
        let mut sock = Async::<TcpStream>::connect(addr).await?;
        let key = hs::new_key();
        sock.write_all(&hs::request(host, path, &key, protocols))
            .await?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        let end = loop {
            if let Some(end) = hs::header_end(&buf) {
                break end;
            }
            if buf.len() > hs::MAX_ANSWER {
                return Err(WsError::Handshake(HandshakeError::TooLong));
            }
            let n = sock.read(&mut chunk).await?;
            if n == 0 {
                let got = String::from_utf8_lossy(&buf).into_owned();
                return Err(WsError::Handshake(HandshakeError::Status(got)));
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let protocol =
            hs::check_answer(&buf[..end], &key, protocols).map_err(WsError::Handshake)?;
        let mut decoder = Decoder::new(MAX_MESSAGE);
        // Frames the server sent right behind its answer.
        decoder.push(&buf[end..]);
        Ok(WsConn {
            sock,
            decoder,
            protocol,
        })
    }

    /// The next message; `None` when the server closed the connection without a close
    /// frame. Cancel-safe: bytes read are kept in the decoder before any other await.
    pub async fn recv(&mut self) -> Result<Option<Message>, WsError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(m) = self.decoder.next_message().map_err(WsError::Frame)? {
                return Ok(Some(m));
            }
            let n = self.sock.read(&mut chunk).await?;
            if n == 0 {
                return Ok(None);
            }
            self.decoder.push(&chunk[..n]);
        }
    }

    /// Sends `payload` as one binary message.
    pub async fn send(&mut self, payload: &[u8]) -> Result<(), WsError> {
        Ok(self
            .sock
            .write_all(&websocket::encode_binary(payload))
            .await?)
    }

    /// Answers a ping.
    pub async fn pong(&mut self, payload: &[u8]) -> Result<(), WsError> {
        Ok(self
            .sock
            .write_all(&websocket::encode_pong(payload))
            .await?)
    }

    /// Sends a close frame (status 1000); the server answers and closes.
    pub async fn close(&mut self) -> Result<(), WsError> {
        Ok(self.sock.write_all(&websocket::encode_close()).await?)
    }
}
