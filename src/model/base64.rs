//! Standard base64 (RFC 4648, with padding), as Kubernetes uses for Secret and
//! ConfigMap binary data. Small enough that a crate would cost more than it saves.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes bytes as padded standard base64.
pub fn encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Why base64 text does not decode; the byte offsets count from the start of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base64Error {
    /// The length (given) is not a multiple of 4.
    Length(usize),
    /// `=` inside the text rather than only at its end (the group's offset).
    Padding(usize),
    /// A byte outside the alphabet, and where.
    Byte(u8, usize),
}

impl std::fmt::Display for Base64Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Base64Error::Length(n) => {
                write!(f, "invalid base64: length {n} is not a multiple of 4")
            }
            Base64Error::Padding(at) => write!(f, "invalid base64: misplaced '=' at byte {at}"),
            Base64Error::Byte(c, at) => write!(f, "invalid base64: byte {:?} at {at}", c as char),
        }
    }
}

impl std::error::Error for Base64Error {}

/// Decodes padded standard base64, as Go's `base64.StdEncoding` (what Kubernetes uses):
/// the length must be a multiple of 4, padding only at the end, no whitespace.
pub fn decode(text: &str) -> Result<Vec<u8>, Base64Error> {
    let b = text.as_bytes();
    if b.len() % 4 != 0 {
        return Err(Base64Error::Length(b.len()));
    }
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    let chunks = b.len() / 4;
    for (ci, chunk) in b.chunks(4).enumerate() {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && ci + 1 != chunks) {
            return Err(Base64Error::Padding(ci * 4));
        }
        let mut n: u32 = 0;
        for (i, &c) in chunk.iter().enumerate() {
            let v = if i >= 4 - pad {
                0
            } else {
                sextet(c).ok_or(Base64Error::Byte(c, ci * 4 + i))?
            };
            n = n << 6 | v;
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Ok(out)
}

fn sextet(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), enc);
            assert_eq!(decode(enc).unwrap(), plain.as_bytes());
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&all)).unwrap(), all);
    }

    #[test]
    fn malformed_is_refused() {
        for (s, why) in [
            ("Zg=", "multiple of 4"),
            ("Zg", "multiple of 4"),
            ("Z===", "misplaced"),
            ("Zg==Zg==", "misplaced"),
            ("Zm9v\n", "multiple of 4"),
            ("Zm9*", "byte '*'"),
            ("Zm 9", "byte ' '"),
        ] {
            let e = decode(s).expect_err(s).to_string();
            assert!(e.contains(why), "{s:?}: {e}");
        }
    }
}
