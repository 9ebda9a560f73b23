//! The request half of gRPC over HTTP/2: the length-prefixed message frame and the
//! headers a gRPC server expects (see gRPC's "PROTOCOL-HTTP2" document).
//!
//! A unary request is one HEADERS frame and one DATA frame holding a single message
//! prefixed by 1 byte "compressed" flag (always 0 here: we never compress) and a 4-byte
//! big-endian length.

use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, TE, USER_AGENT};
use http::uri::{Authority, PathAndQuery, Scheme, Uri};
use http::{Method, Request};
use std::time::Duration;

/// Size of the message prefix: compressed flag + 4-byte big-endian length.
pub const PREFIX_LEN: usize = 5;

/// Largest value `grpc-timeout` may carry: 8 ASCII digits.
const MAX_TIMEOUT_VALUE: u128 = 99_999_999;

/// Encodes `msg` into one gRPC frame, allocating exactly once and copying nothing later:
/// the returned `Bytes` owns the `Vec` it was encoded into.
pub fn encode_frame<M: prost::Message>(msg: &M) -> Result<Bytes, EncodeError> {
    let len = msg.encoded_len();
    let wire_len = u32::try_from(len).map_err(|_| EncodeError::TooLarge(len))?;
    let mut buf = Vec::with_capacity(PREFIX_LEN + len);
    buf.push(0);
    buf.extend_from_slice(&wire_len.to_be_bytes());
    msg.encode(&mut buf).map_err(EncodeError::Prost)?;
    Ok(Bytes::from(buf))
}

/// Why a request cannot be framed.
#[derive(Debug)]
pub enum EncodeError {
    /// Larger than a gRPC frame's 32-bit length (its size in bytes).
    TooLarge(usize),
    /// prost could not encode it.
    Prost(prost::EncodeError),
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::TooLarge(len) => write!(f, "request message of {len} bytes"),
            EncodeError::Prost(e) => write!(f, "encoding request: {e}"),
        }
    }
}

impl std::error::Error for EncodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EncodeError::TooLarge(_) => None,
            EncodeError::Prost(e) => Some(e),
        }
    }
}

/// A request head that cannot be built: a method path that does not make a URI or a
/// timeout that does not make a header (bugs in the caller, never input).
#[derive(Debug)]
pub enum BadRequestHead {
    /// The method path, and why it is no URI path.
    Path(&'static str, http::Error),
    /// The `grpc-timeout` value is no header value.
    Timeout(http::header::InvalidHeaderValue),
}

impl std::fmt::Display for BadRequestHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadRequestHead::Path(path, e) => write!(f, "method path {path:?}: {e}"),
            BadRequestHead::Timeout(e) => write!(f, "grpc-timeout: {e}"),
        }
    }
}

impl std::error::Error for BadRequestHead {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BadRequestHead::Path(_, e) => Some(e),
            BadRequestHead::Timeout(e) => Some(e),
        }
    }
}

/// Builds the HTTP/2 request head of a unary call to `path`
/// (`/runtime.v1.RuntimeService/Version`).
///
/// `:authority` is `localhost`, as kubelet sends on Unix sockets; `te: trailers` is
/// required by gRPC servers to detect proxies that drop trailers.
pub fn request_head(
    path: &'static str,
    timeout: Option<Duration>,
) -> Result<Request<()>, BadRequestHead> {
    let uri = Uri::builder()
        .scheme(Scheme::HTTP)
        .authority(Authority::from_static("localhost"))
        .path_and_query(PathAndQuery::from_static(path))
        .build()
        .map_err(|e| BadRequestHead::Path(path, e))?;
    let mut req = Request::new(());
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri;
    let headers: &mut HeaderMap = req.headers_mut();
    headers.reserve(4);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(TE, HeaderValue::from_static("trailers"));
    headers.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
    if let Some(t) = timeout {
        // From the String's own buffer: no second allocation for the value.
        let value = HeaderValue::from_maybe_shared(Bytes::from(encode_timeout(t)))
            .map_err(BadRequestHead::Timeout)?;
        headers.insert("grpc-timeout", value);
    }
    Ok(req)
}

/// The `user-agent` sent with every call: gRPC implementations put `grpc-LANG-IMPL/VER`.
const USER_AGENT_VALUE: &str = concat!("grpc-rust-tinylet/", env!("CARGO_PKG_VERSION"));

/// Formats a deadline as gRPC's `grpc-timeout`: at most 8 digits and a unit
/// (`H` hours, `M` minutes, `S` seconds, `m` millis, `u` micros, `n` nanos).
///
/// The coarsest unit that states the duration exactly is chosen (`30S`, `1999m`); when no
/// unit is exact in 8 digits, the finest unit that fits, rounded up, so the server never
/// gives up before we do. Longer than 99,999,999 hours is clamped.
pub fn encode_timeout(t: Duration) -> String {
    const UNITS: [(u128, char); 6] = [
        (3_600_000_000_000, 'H'),
        (60_000_000_000, 'M'),
        (1_000_000_000, 'S'),
        (1_000_000, 'm'),
        (1_000, 'u'),
        (1, 'n'),
    ];
    let nanos = t.as_nanos();
    for (size, unit) in UNITS {
        if nanos % size == 0 && nanos / size <= MAX_TIMEOUT_VALUE {
            return format!("{}{unit}", nanos / size);
        }
    }
    for (size, unit) in UNITS.iter().rev() {
        let value = nanos.div_ceil(*size);
        if value <= MAX_TIMEOUT_VALUE {
            return format!("{value}{unit}");
        }
    }
    format!("{MAX_TIMEOUT_VALUE}H")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, PartialEq, prost::Message)]
    struct Echo {
        #[prost(string, tag = "1")]
        s: String,
    }

    #[test]
    fn timeout_uses_the_coarsest_exact_unit() {
        let cases = [
            (Duration::from_secs(30), "30S"),
            (Duration::from_millis(1999), "1999m"),
            (Duration::from_secs(120), "2M"),
            (Duration::from_secs(7200), "2H"),
            (Duration::from_micros(1500), "1500u"),
            (Duration::from_nanos(7), "7n"),
            (Duration::ZERO, "0H"),
            (Duration::from_secs(99_999_999), "99999999S"),
        ];
        for (d, want) in cases {
            assert_eq!(encode_timeout(d), want, "{d:?}");
        }
    }

    #[test]
    fn timeout_rounds_up_when_no_unit_is_exact() {
        // 1 s + 1 ns needs 10 digits in nanos: micros, rounded up, fit in 8 digits.
        assert_eq!(encode_timeout(Duration::new(1, 1)), "1000001u");
        assert_eq!(encode_timeout(Duration::new(100, 1)), "100001m");
        // 10^10 s + 1 ns: only hours, rounded up, fit.
        assert_eq!(encode_timeout(Duration::new(10_000_000_000, 1)), "2777778H");
        assert_eq!(encode_timeout(Duration::MAX), "99999999H");
        for d in [Duration::new(12_345, 678), Duration::new(987_654_321, 1)] {
            let s = encode_timeout(d);
            assert!(s.len() <= 9, "{s}");
        }
    }

    #[test]
    fn frame_has_flag_length_and_message() {
        let msg = Echo { s: "hi".into() };
        let frame = encode_frame(&msg).unwrap();
        assert_eq!(&frame[..], &[0, 0, 0, 0, 4, 0x0a, 2, b'h', b'i']);
        let empty = encode_frame(&Echo::default()).unwrap();
        assert_eq!(&empty[..], &[0, 0, 0, 0, 0]);
    }

    #[test]
    fn head_carries_what_grpc_servers_check() {
        let req = request_head(
            "/runtime.v1.RuntimeService/Version",
            Some(Duration::from_secs(2)),
        )
        .unwrap();
        assert_eq!(req.method(), Method::POST);
        assert_eq!(
            req.uri().to_string(),
            "http://localhost/runtime.v1.RuntimeService/Version"
        );
        let h = req.headers();
        assert_eq!(h["content-type"], "application/grpc");
        assert_eq!(h["te"], "trailers");
        assert_eq!(h["grpc-timeout"], "2S");
        assert!(h["user-agent"]
            .to_str()
            .unwrap()
            .starts_with("grpc-rust-tinylet/"));
        let no_deadline = request_head("/a.B/C", None).unwrap();
        assert!(!no_deadline.headers().contains_key("grpc-timeout"));
    }
}
