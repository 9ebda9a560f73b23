//! gRPC's framing on HTTP/2, server side, shared by the fake servers: the 5-byte
//! message prefix, the response head and the status trailers.

use http::{HeaderMap, HeaderValue, Response};

/// `msg` behind gRPC's prefix (not compressed, big-endian length).
pub fn frame(msg: &[u8]) -> Vec<u8> {
    let mut v = vec![0];
    v.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    v.extend_from_slice(msg);
    v
}

/// The message of a request body holding one frame (empty when the body is shorter).
#[allow(dead_code)]
pub fn unframe(body: &[u8]) -> &[u8] {
    body.get(5..).unwrap_or_default()
}

/// The head of a gRPC answer.
pub fn grpc_head() -> Response<()> {
    Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap()
}

/// The trailers of a call ending with `code` (a decimal string) and `message`, sent as
/// given (the transport tests send malformed encodings on purpose).
pub fn trailers(code: &str, message: &str) -> HeaderMap {
    let mut t = HeaderMap::new();
    t.insert("grpc-status", HeaderValue::from_str(code).unwrap());
    if !message.is_empty() {
        t.insert("grpc-message", HeaderValue::from_str(message).unwrap());
    }
    t
}

/// gRPC's percent-encoding of `grpc-message`: printable ASCII except `%` as is.
#[allow(dead_code)]
pub fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for b in message.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
