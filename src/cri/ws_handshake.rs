//! The client side of the WebSocket opening handshake (RFC 6455 section 4.1): the
//! upgrade request for a streaming URL and the check of the server's answer.
//!
//! The answer's `Sec-WebSocket-Accept` must be base64(SHA-1(key + GUID)). SHA-1 is
//! written here (a few dozen lines) rather than pulled in as a crate: only this check
//! needs it, and ring (which has SHA-1) is only in the uplink build; base64 is the
//! model's.

use std::fmt;

/// The GUID RFC 6455 appends to the key before hashing.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Most bytes of a handshake answer (status line and headers) we read.
pub const MAX_ANSWER: usize = 8192;

/// Why a handshake failed.
#[derive(Debug, PartialEq, Eq)]
pub enum HandshakeError {
    /// The URL is not `http://HOST:PORT/PATH`.
    BadUrl(String),
    /// The answer's headers were longer than [`MAX_ANSWER`].
    TooLong,
    /// The server answered with another status than 101.
    Status(String),
    /// A header was missing or wrong: (header, what was expected, what came).
    Header(&'static str, String, String),
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::BadUrl(u) => {
                write!(f, "streaming URL {u:?}: expected http://IP:PORT/PATH")
            }
            HandshakeError::TooLong => {
                write!(
                    f,
                    "WebSocket handshake: answer headers over {MAX_ANSWER} bytes"
                )
            }
            HandshakeError::Status(s) => write!(
                f,
                "WebSocket handshake: expected \"HTTP/1.1 101 Switching Protocols\", got {s:?}"
            ),
            HandshakeError::Header(h, want, got) => write!(
                f,
                "WebSocket handshake: header {h}: expected {want}, got {got:?}"
            ),
        }
    }
}

impl std::error::Error for HandshakeError {}

/// `host:port` and path of an `http://` URL (the runtime's streaming server).
pub fn split_url(url: &str) -> Result<(&str, &str), HandshakeError> {
    let bad = || HandshakeError::BadUrl(url.to_string());
    let rest = url.strip_prefix("http://").ok_or_else(bad)?;
    let slash = rest.find('/').ok_or_else(bad)?;
    let (host, path) = rest.split_at(slash);
    if host.is_empty() || !host.contains(':') {
        return Err(bad());
    }
    Ok((host, path))
}

/// The upgrade request for `path` on `host` offering `protocols` (most preferred first).
pub fn request(host: &str, path: &str, key: &str, protocols: &[&str]) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: {}\r\n\r\n",
        protocols.join(", ")
    )
    .into_bytes()
}

/// A fresh key: 16 random bytes, base64.
pub fn new_key() -> String {
    let mut raw = [0u8; 16];
    // getrandom cannot fail for a 16-byte buffer on Linux >= 3.17; a short fill still
    // gives a usable (if weaker) key: it guards against caches, not attackers.
    let _ = rustix::rand::getrandom(&mut raw, rustix::rand::GetRandomFlags::empty());
    crate::model::base64::encode(&raw)
}

/// The `Sec-WebSocket-Accept` value the server must send for `key`.
pub fn accept_for(key: &str) -> String {
    let mut input = key.as_bytes().to_vec();
    input.extend_from_slice(GUID.as_bytes());
    crate::model::base64::encode(&sha1(&input))
}

/// Where the answer's headers end (just past the blank line), once they are in `buf`.
pub fn header_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Checks a complete answer's headers against `key` and the offered `protocols`;
/// returns the protocol the server chose.
pub fn check_answer(head: &[u8], key: &str, protocols: &[&str]) -> Result<String, HandshakeError> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let status = lines.next().unwrap_or("");
    let mut parts = status.splitn(3, ' ');
    let (version, code) = (parts.next(), parts.next());
    if !matches!(version, Some("HTTP/1.1")) || code != Some("101") {
        return Err(HandshakeError::Status(status.to_string()));
    }
    let header = |name: &str| {
        text.split("\r\n").skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let expect = |name: &'static str, ok: &dyn Fn(&str) -> bool, want: String| {
        let got = header(name).unwrap_or_default();
        if ok(&got) {
            Ok(got)
        } else {
            Err(HandshakeError::Header(name, want, got))
        }
    };
    expect(
        "Upgrade",
        &|v| v.eq_ignore_ascii_case("websocket"),
        "websocket".into(),
    )?;
    expect(
        "Connection",
        &|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        },
        "Upgrade".into(),
    )?;
    let accept = accept_for(key);
    expect("Sec-WebSocket-Accept", &|v| v == accept, accept.clone())?;
    expect(
        "Sec-WebSocket-Protocol",
        &|v| protocols.contains(&v),
        format!("one of {}", protocols.join(", ")),
    )
}

/// SHA-1 (FIPS 180-4). Used only for the handshake check, where RFC 6455 names it.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A827999),
                20..=39 => (b ^ c ^ d, 0x6ED9EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1BBCDC),
                _ => (b ^ c ^ d, 0xCA62C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            (e, d, c, b, a) = (d, c, b.rotate_left(30), a, t);
        }
        for (hv, v) in h.iter_mut().zip([a, b, c, d, e]) {
            *hv = hv.wrapping_add(v);
        }
    }
    let mut out = [0u8; 20];
    for (i, v) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTOS: &[&str] = &["v5.channel.k8s.io", "v4.channel.k8s.io"];

    #[test]
    fn rfc6455_example_accept() {
        // The example of RFC 6455 section 1.3.
        assert_eq!(
            accept_for("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn sha1_and_base64_vectors() {
        assert_eq!(crate::model::base64::encode(b""), "");
        assert_eq!(crate::model::base64::encode(b"f"), "Zg==");
        assert_eq!(crate::model::base64::encode(b"fo"), "Zm8=");
        assert_eq!(crate::model::base64::encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(
            crate::model::base64::encode(&sha1(b"abc")),
            "qZk+NkcGgWq6PiVxeFDCbJzQ2J0="
        );
        // Two blocks of padding (56..64 bytes of input).
        let long = [b'a'; 60];
        assert_eq!(
            crate::model::base64::encode(&sha1(&long)),
            "E9lWAz2a9Em/4sTveMF8IEacS/E="
        );
    }

    fn answer(accept: &str, proto: &str) -> String {
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: {proto}\r\n\r\n"
        )
    }

    #[test]
    fn answer_checked() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let ok = answer(&accept_for(key), "v4.channel.k8s.io");
        assert_eq!(header_end(ok.as_bytes()), Some(ok.len()));
        assert_eq!(
            check_answer(ok.as_bytes(), key, PROTOS).unwrap(),
            "v4.channel.k8s.io"
        );
        let bad_accept = answer("AAAA", "v4.channel.k8s.io");
        let e = check_answer(bad_accept.as_bytes(), key, PROTOS).unwrap_err();
        assert!(e.to_string().contains("Sec-WebSocket-Accept"), "{e}");
        let bad_proto = answer(&accept_for(key), "channel.k8s.io");
        let e = check_answer(bad_proto.as_bytes(), key, PROTOS).unwrap_err();
        assert!(e.to_string().contains("v4.channel.k8s.io"), "{e}");
        let refused = "HTTP/1.1 404 Not Found\r\n\r\n";
        let e = check_answer(refused.as_bytes(), key, PROTOS).unwrap_err();
        assert!(e.to_string().contains("404"), "{e}");
    }

    #[test]
    fn urls() {
        assert_eq!(
            split_url("http://127.0.0.1:3456/exec/abc").unwrap(),
            ("127.0.0.1:3456", "/exec/abc")
        );
        assert!(split_url("https://127.0.0.1:1/x").is_err());
        assert!(split_url("http://127.0.0.1").is_err());
    }
}
