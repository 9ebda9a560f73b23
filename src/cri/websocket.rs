//! WebSocket framing for a client (RFC 6455 section 5): masked frames out, a bounded
//! decoder in. Sans-I/O: the caller feeds the bytes it read and writes the bytes given.
//!
//! The decoder never holds more than one message of at most `max_message` bytes plus
//! one frame header: a longer frame or message is an error before its payload is read,
//! so a broken or hostile server cannot make the client allocate without bound.

use std::fmt;

/// Frame opcodes.
const CONT: u8 = 0x0;
const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;

/// Control frames carry at most this many payload bytes (RFC 6455 5.5).
const MAX_CONTROL: usize = 125;

/// A complete message (data messages reassembled from their fragments).
#[derive(Debug, PartialEq, Eq)]
pub enum Message {
    /// A binary message.
    Binary(Vec<u8>),
    /// A text message (not checked for UTF-8: the channel protocols here are binary).
    Text(Vec<u8>),
    /// A ping: answer it with [`encode_pong`].
    Ping(Vec<u8>),
    /// A pong (ignored by the client).
    Pong,
    /// The server closes, with its status code (1005 when it sent none).
    Close(u16),
}

/// A frame the decoder refuses.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Reserved bits set (no extension was negotiated).
    Reserved,
    /// An opcode RFC 6455 does not define.
    Opcode(u8),
    /// A server frame with a mask (servers must not mask).
    Masked,
    /// A control frame fragmented or over 125 bytes.
    BadControl,
    /// A continuation with no message started, or a new message inside a fragmented one.
    BadFragment,
    /// A frame or message over the limit: (its length, the limit).
    TooLarge(u64, usize),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Reserved => write!(f, "WebSocket frame with reserved bits set"),
            FrameError::Opcode(o) => write!(f, "WebSocket frame with unknown opcode {o:#x}"),
            FrameError::Masked => write!(f, "WebSocket frame from the server is masked"),
            FrameError::BadControl => {
                write!(f, "WebSocket control frame fragmented or over 125 bytes")
            }
            FrameError::BadFragment => write!(f, "WebSocket continuation frame out of order"),
            FrameError::TooLarge(n, max) => {
                write!(f, "WebSocket message of {n} bytes, over the limit of {max}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// Encodes one final frame of `opcode` with `payload`, masked with `mask`.
pub fn encode(opcode: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    encode_frame(true, opcode, payload, mask)
}

/// Encodes one frame (`fin` false for all but the last fragment of a message).
pub fn encode_frame(fin: bool, opcode: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(if fin { 0x80 } else { 0 } | opcode);
    let n = payload.len();
    match n {
        0..=125 => out.push(0x80 | n as u8),
        126..=0xFFFF => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        _ => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// A binary message as one frame, masked with a fresh random key.
pub fn encode_binary(payload: &[u8]) -> Vec<u8> {
    encode(BINARY, payload, new_mask())
}

/// A pong answering a ping's `payload`.
pub fn encode_pong(payload: &[u8]) -> Vec<u8> {
    encode(PONG, &payload[..payload.len().min(MAX_CONTROL)], new_mask())
}

/// A close frame with status 1000 (normal closure).
pub fn encode_close() -> Vec<u8> {
    encode(CLOSE, &1000u16.to_be_bytes(), new_mask())
}

/// A random masking key (RFC 6455 10.3: unpredictable, per frame).
fn new_mask() -> [u8; 4] {
    let mut m = [0u8; 4];
    // A short read leaves zeros: still a valid frame, the mask guards proxies' caches.
    let _ = rustix::rand::getrandom(&mut m, rustix::rand::GetRandomFlags::empty());
    m
}

/// Reassembles messages from the bytes read from the server.
pub struct Decoder {
    buf: Vec<u8>,
    /// The opcode and bytes of a fragmented message in progress.
    partial: Option<(u8, Vec<u8>)>,
    max_message: usize,
}

/// A parsed frame header: fin, opcode, header length, payload length.
struct Header {
    fin: bool,
    opcode: u8,
    len_at: usize,
    payload: u64,
}

impl Decoder {
    /// A decoder refusing messages over `max_message` bytes.
    pub fn new(max_message: usize) -> Decoder {
        Decoder {
            buf: Vec::new(),
            partial: None,
            max_message,
        }
    }

    /// Adds bytes read from the server.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held: read but not yet returned, and the fragments of a message in
    /// progress. Once [`Decoder::next_message`] has answered `None`, at most one frame
    /// header plus `max_message` (what a caller reading only then is bounded by).
    pub fn held(&self) -> usize {
        self.buf.len() + self.partial.as_ref().map_or(0, |(_, p)| p.len())
    }

    /// The next complete message, `None` when more bytes are needed.
    pub fn next_message(&mut self) -> Result<Option<Message>, FrameError> {
        loop {
            let Some(h) = self.header()? else {
                return Ok(None);
            };
            // Bounded: header() refused payloads over the limit.
            let end = h.len_at + h.payload as usize;
            if self.buf.len() < end {
                return Ok(None);
            }
            let payload: Vec<u8> = self.buf.drain(..end).skip(h.len_at).collect();
            if let Some(m) = self.frame(h.fin, h.opcode, payload)? {
                return Ok(Some(m));
            }
        }
    }

    /// The header at the start of the buffer, checked, once complete.
    fn header(&self) -> Result<Option<Header>, FrameError> {
        let b = &self.buf;
        if b.len() < 2 {
            return Ok(None);
        }
        if b[0] & 0x70 != 0 {
            return Err(FrameError::Reserved);
        }
        if b[1] & 0x80 != 0 {
            return Err(FrameError::Masked);
        }
        let (fin, opcode) = (b[0] & 0x80 != 0, b[0] & 0x0F);
        if !matches!(opcode, CONT | TEXT | BINARY | CLOSE | PING | PONG) {
            return Err(FrameError::Opcode(opcode));
        }
        let (len_at, payload) = match b[1] & 0x7F {
            126 if b.len() < 4 => return Ok(None),
            126 => (4, u64::from(u16::from_be_bytes([b[2], b[3]]))),
            127 if b.len() < 10 => return Ok(None),
            127 => {
                let mut n = [0u8; 8];
                n.copy_from_slice(&b[2..10]);
                (10, u64::from_be_bytes(n))
            }
            n => (2, u64::from(n)),
        };
        if opcode >= CLOSE && (!fin || payload > MAX_CONTROL as u64) {
            return Err(FrameError::BadControl);
        }
        // What a continuation adds to; a control frame between fragments is no part of
        // the message (a new data message there is refused in frame()).
        let so_far = match (opcode, &self.partial) {
            (CONT, Some((_, p))) => p.len() as u64,
            _ => 0,
        };
        // Saturating: a 2^64-1 length behind a started message must not overflow.
        let total = so_far.saturating_add(payload);
        if total > self.max_message as u64 {
            return Err(FrameError::TooLarge(total, self.max_message));
        }
        Ok(Some(Header {
            fin,
            opcode,
            len_at,
            payload,
        }))
    }

    /// One frame's part in a message: a message once it is complete.
    fn frame(&mut self, fin: bool, op: u8, data: Vec<u8>) -> Result<Option<Message>, FrameError> {
        let whole = match op {
            PING => return Ok(Some(Message::Ping(data))),
            PONG => return Ok(Some(Message::Pong)),
            CLOSE => {
                let code = match data.as_slice() {
                    [a, b, ..] => u16::from_be_bytes([*a, *b]),
                    _ => 1005,
                };
                return Ok(Some(Message::Close(code)));
            }
            CONT => {
                let (op, mut acc) = self.partial.take().ok_or(FrameError::BadFragment)?;
                acc.extend_from_slice(&data);
                if !fin {
                    self.partial = Some((op, acc));
                    return Ok(None);
                }
                (op, acc)
            }
            _ if self.partial.is_some() => return Err(FrameError::BadFragment),
            _ if !fin => {
                self.partial = Some((op, data));
                return Ok(None);
            }
            _ => (op, data),
        };
        Ok(Some(match whole.0 {
            TEXT => Message::Text(whole.1),
            _ => Message::Binary(whole.1),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server frame (unmasked).
    fn server(fin: bool, op: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = encode_frame(fin, op, payload, [0; 4]);
        // Drop the mask bit and the (zero) key: servers send no mask.
        f[1] &= 0x7F;
        let at = match f[1] {
            126 => 4,
            127 => 10,
            _ => 2,
        };
        f.drain(at..at + 4);
        f
    }

    #[test]
    fn masking_and_length_forms() {
        let mask = [1, 2, 3, 4];
        let f = encode(BINARY, b"abcd", mask);
        assert_eq!(f[..2], [0x82, 0x84]);
        assert_eq!(f[2..6], mask);
        assert_eq!(f[6..], [b'a' ^ 1, b'b' ^ 2, b'c' ^ 3, b'd' ^ 4]);
        for (n, hdr) in [(125, 2), (126, 4), (65535, 4), (65536, 10)] {
            let f = encode(BINARY, &vec![7; n], mask);
            assert_eq!(f.len(), hdr + 4 + n, "length {n}");
            let mut d = Decoder::new(1 << 20);
            d.push(&server(true, BINARY, &vec![7; n]));
            assert_eq!(d.next_message(), Ok(Some(Message::Binary(vec![7; n]))));
        }
    }

    #[test]
    fn byte_by_byte_and_fragments() {
        let mut bytes = server(false, BINARY, b"he");
        bytes.extend(server(true, PING, b"p"));
        bytes.extend(server(false, CONT, b"ll"));
        bytes.extend(server(true, CONT, b"o"));
        bytes.extend(server(true, CLOSE, &1000u16.to_be_bytes()));
        let mut d = Decoder::new(64);
        let mut got = Vec::new();
        for b in bytes {
            d.push(&[b]);
            while let Some(m) = d.next_message().unwrap() {
                got.push(m);
            }
        }
        assert_eq!(
            got,
            [
                Message::Ping(b"p".to_vec()),
                Message::Binary(b"hello".to_vec()),
                Message::Close(1000)
            ]
        );
    }

    #[test]
    fn bad_frames_are_errors() {
        let cases: Vec<(Vec<u8>, FrameError)> = vec![
            (vec![0xC2, 0], FrameError::Reserved),
            (vec![0x83, 0], FrameError::Opcode(3)),
            (vec![0x82, 0x80, 0, 0, 0, 0], FrameError::Masked),
            (server(false, PING, b""), FrameError::BadControl),
            (vec![0x89, 126, 0, 200], FrameError::BadControl),
            (server(true, CONT, b"x"), FrameError::BadFragment),
            // A 2^63-byte frame is refused from its header alone.
            (
                vec![0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0],
                FrameError::TooLarge(1 << 63, 100),
            ),
        ];
        for (bytes, want) in cases {
            let mut d = Decoder::new(100);
            d.push(&bytes);
            assert_eq!(d.next_message(), Err(want));
        }
        // A new message inside a fragmented one; fragments summing over the limit.
        let mut d = Decoder::new(100);
        d.push(&server(false, BINARY, b"a"));
        d.push(&server(true, BINARY, b"b"));
        assert_eq!(d.next_message(), Err(FrameError::BadFragment));
        let mut d = Decoder::new(100);
        d.push(&server(false, BINARY, &[0; 60]));
        d.push(&server(true, CONT, &[0; 60]));
        assert_eq!(d.next_message(), Err(FrameError::TooLarge(120, 100)));
    }

    /// A frame header claiming `len` bytes (the 8-byte form), no payload.
    fn huge(fin: bool, op: u8, len: u64) -> Vec<u8> {
        let mut f = vec![if fin { 0x80 } else { 0 } | op, 127];
        f.extend_from_slice(&len.to_be_bytes());
        f
    }

    #[test]
    fn hostile_lengths_are_refused_from_the_header() {
        // The largest length behind a started message: no overflow, refused.
        let mut d = Decoder::new(100);
        d.push(&server(false, BINARY, b"abc"));
        d.push(&huge(true, CONT, u64::MAX));
        assert_eq!(d.next_message(), Err(FrameError::TooLarge(u64::MAX, 100)));
        for len in [1 << 63, u64::MAX, 101] {
            let mut d = Decoder::new(100);
            d.push(&huge(true, BINARY, len));
            assert_eq!(d.next_message(), Err(FrameError::TooLarge(len, 100)));
        }
        // Control frames: 126 bytes (2-byte form), 2^63 (8-byte form), fragmented close.
        for bytes in [
            vec![0x8A, 126, 0, 126],
            huge(true, PING, 1 << 63),
            server(false, CLOSE, b""),
            server(false, PONG, b"x"),
        ] {
            let mut d = Decoder::new(1 << 20);
            d.push(&bytes);
            assert_eq!(d.next_message(), Err(FrameError::BadControl), "{bytes:?}");
        }
        // A control frame between fragments is fine (RFC 6455 5.4), up to 125 bytes, and
        // does not count toward the message's size (100 + 1 bytes here).
        let mut d = Decoder::new(200);
        d.push(&server(false, TEXT, &[b'a'; 100]));
        d.push(&server(true, PING, &[1; 125]));
        d.push(&server(true, CONT, b"b"));
        assert_eq!(d.next_message(), Ok(Some(Message::Ping(vec![1; 125]))));
        let mut text = vec![b'a'; 100];
        text.push(b'b');
        assert_eq!(d.next_message(), Ok(Some(Message::Text(text))));
    }

    #[test]
    fn truncated_frames_wait_and_stay_bounded() {
        let whole = server(true, BINARY, &[9; 300]);
        for cut in 0..whole.len() {
            let mut d = Decoder::new(300);
            d.push(&whole[..cut]);
            assert_eq!(d.next_message(), Ok(None), "cut at {cut}");
            assert!(d.held() <= 4 + 300, "{}", d.held());
            d.push(&whole[cut..]);
            assert_eq!(d.next_message(), Ok(Some(Message::Binary(vec![9; 300]))));
            assert_eq!((d.held(), d.next_message()), (0, Ok(None)));
        }
        // A close with a 1-byte payload has no valid code: 1005, as with none.
        let mut d = Decoder::new(10);
        d.push(&server(true, CLOSE, b"x"));
        assert_eq!(d.next_message(), Ok(Some(Message::Close(1005))));
    }
}
