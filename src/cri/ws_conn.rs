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
use std::net::{SocketAddr, TcpStream};

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
        // The runtime gives an IP address; parsed, not resolved (no resolver linked in).
        let addr: SocketAddr = host
            .parse()
            .map_err(|_| WsError::Handshake(HandshakeError::BadUrl(url.into())))?;
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

#[cfg(test)]
mod tests {
    //! Fault injection: a server on loopback answering what a broken or hostile one
    //! would. The real streaming server is exercised by tests/e2e_exec_stream.rs.
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    /// A server that reads the request, then answers `answer(key)`; returns the URL.
    fn serve(answer: impl FnOnce(&str) -> Vec<u8> + Send + 'static) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/exec/tok", l.local_addr().unwrap());
        std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut key = String::new();
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(k) = line.strip_prefix("Sec-WebSocket-Key: ") {
                    key = k.trim().to_string();
                }
            }
            let _ = (&s).write_all(&answer(&key));
            // Keep the socket open until the client is done with it.
            let _ = r.read_line(&mut String::new());
        });
        url
    }

    fn ok_head(key: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n",
            hs::accept_for(key)
        )
        .into_bytes()
    }

    fn connect(url: &str) -> Result<WsConn, WsError> {
        crate::rt::block_on(WsConn::connect(
            url,
            &["v5.channel.k8s.io", "v4.channel.k8s.io"],
        ))
    }

    #[test]
    fn handshake_faults_are_named() {
        let url = serve(|_| {
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: AAAA\r\n\r\n".to_vec()
        });
        let e = connect(&url).err().unwrap().to_string();
        assert!(e.contains("Sec-WebSocket-Accept: expected"), "{e}");
        let url = serve(|_| vec![b'x'; 20_000]);
        let e = connect(&url).err().unwrap().to_string();
        assert!(e.contains("over 8192 bytes"), "{e}");
        let url = serve(|_| b"HTTP/1.1 404 Not Found\r\n\r\n".to_vec());
        let e = connect(&url).err().unwrap().to_string();
        assert!(e.contains("404"), "{e}");
    }

    #[test]
    fn frames_right_behind_the_answer_and_a_huge_frame() {
        let url = serve(|key| {
            let mut a = ok_head(key);
            a.extend_from_slice(b"\x82\x03\x01hi");
            // A frame claiming 2^62 bytes: refused from its header.
            a.extend_from_slice(&[0x82, 127, 0x40, 0, 0, 0, 0, 0, 0, 0]);
            a
        });
        crate::rt::block_on(async {
            let mut ws = WsConn::connect(&url, &["v4.channel.k8s.io"]).await.unwrap();
            assert_eq!(ws.protocol, "v4.channel.k8s.io");
            let m = ws.recv().await.unwrap();
            assert_eq!(m, Some(Message::Binary(b"\x01hi".to_vec())));
            let e = ws.recv().await.err().unwrap().to_string();
            assert!(e.contains("over the limit"), "{e}");
        });
    }
}
