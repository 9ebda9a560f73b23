//! How a gRPC call's outcome is read off HTTP/2: `grpc-status`/`grpc-message` headers,
//! non-200 HTTP statuses and HTTP/2 stream or connection errors, each turned into a
//! gRPC [`Code`] the way gRPC's own clients do.

use super::error::Code;
use http::HeaderMap;

/// A gRPC status read from trailers (or from the headers of a Trailers-Only answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub message: String,
}

/// The status carried by `headers`, if they have a `grpc-status`.
///
/// A `grpc-status` that is not a number becomes `Unknown`, naming the bad value;
/// `grpc-message` is percent-decoded.
pub fn from_headers(headers: &HeaderMap) -> Option<Status> {
    let raw = headers.get("grpc-status")?;
    let message = headers
        .get("grpc-message")
        .map(|m| percent_decode(m.as_bytes()))
        .unwrap_or_default();
    let parsed = std::str::from_utf8(raw.as_bytes())
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    Some(match parsed {
        Some(n) => Status {
            code: Code::from_u32(n),
            message,
        },
        None => Status {
            code: Code::Unknown,
            message: format!(
                "malformed grpc-status {:?} (message: {message:?})",
                String::from_utf8_lossy(raw.as_bytes())
            ),
        },
    })
}

/// Decodes gRPC's percent-encoding of `grpc-message` (`%XX` for bytes outside printable
/// ASCII and for `%` itself). A `%` not followed by two hex digits is kept as is, and
/// bytes that do not form UTF-8 are replaced, so a bad message never fails a call.
pub fn percent_decode(raw: &[u8]) -> String {
    if !raw.contains(&b'%') {
        return String::from_utf8_lossy(raw).into_owned();
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw.get(i).copied().unwrap_or_default();
        let hex = raw.get(i + 1..i + 3).and_then(hex_pair);
        match (b, hex) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The byte two hex digits spell, if they are hex digits.
fn hex_pair(pair: &[u8]) -> Option<u8> {
    let digit = |c: u8| (c as char).to_digit(16);
    match pair {
        [hi, lo] => Some((digit(*hi)? * 16 + digit(*lo)?) as u8),
        _ => None,
    }
}

/// The gRPC code for an HTTP status other than 200, per gRPC's
/// "HTTP to gRPC Status Code Mapping".
pub fn code_for_http_status(status: u16) -> Code {
    match status {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502 | 503 | 504 => Code::Unavailable,
        _ => Code::Unknown,
    }
}

/// The gRPC code for an HTTP/2 error, and whether the error broke the whole connection
/// (so it must be dropped and a new one made).
///
/// A stream reset maps by its reason as gRPC clients do (`REFUSED_STREAM` is
/// `Unavailable`, `CANCEL` is `Cancelled`, ...); GOAWAY and I/O errors mean the runtime
/// went away or spoke garbage: `Unavailable`.
pub fn classify_h2(err: &h2::Error) -> (Code, bool) {
    if err.is_reset() {
        return (code_for_reason(err.reason()), false);
    }
    if err.is_go_away() || err.is_io() {
        return (Code::Unavailable, true);
    }
    // A bare reason or a misuse of h2: the connection's state is unknown, so drop it.
    (Code::Internal, true)
}

fn code_for_reason(reason: Option<h2::Reason>) -> Code {
    use h2::Reason as R;
    match reason {
        Some(R::REFUSED_STREAM) => Code::Unavailable,
        Some(R::CANCEL) => Code::Cancelled,
        Some(R::ENHANCE_YOUR_CALM) | Some(R::FLOW_CONTROL_ERROR) => Code::ResourceExhausted,
        Some(R::INADEQUATE_SECURITY) => Code::PermissionDenied,
        _ => Code::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn percent_decoding() {
        let cases: [(&[u8], &str); 7] = [
            (b"plain text", "plain text"),
            (b"caf%C3%A9 %25 done", "caf\u{e9} % done"),
            (b"100%", "100%"),
            (b"%zz and %4", "%zz and %4"),
            (b"%0A%0a", "\n\n"),
            (b"%FF", "\u{fffd}"),
            (b"", ""),
        ];
        for (raw, want) in cases {
            assert_eq!(
                percent_decode(raw),
                want,
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn status_from_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(from_headers(&h), None);
        h.insert("grpc-status", HeaderValue::from_static("5"));
        h.insert(
            "grpc-message",
            HeaderValue::from_static("pod%20%22x%22 not found"),
        );
        let s = from_headers(&h).unwrap();
        assert_eq!(s.code, Code::NotFound);
        assert_eq!(s.message, "pod \"x\" not found");
        h.insert("grpc-status", HeaderValue::from_static("99"));
        assert_eq!(from_headers(&h).unwrap().code, Code::Unknown);
        h.insert("grpc-status", HeaderValue::from_static("five"));
        let s = from_headers(&h).unwrap();
        assert_eq!(s.code, Code::Unknown);
        assert!(s.message.contains("five"), "{}", s.message);
    }

    #[test]
    fn http_status_table() {
        assert_eq!(code_for_http_status(400), Code::Internal);
        assert_eq!(code_for_http_status(401), Code::Unauthenticated);
        assert_eq!(code_for_http_status(403), Code::PermissionDenied);
        assert_eq!(code_for_http_status(404), Code::Unimplemented);
        for s in [429, 502, 503, 504] {
            assert_eq!(code_for_http_status(s), Code::Unavailable);
        }
        assert_eq!(code_for_http_status(500), Code::Unknown);
        assert_eq!(code_for_http_status(302), Code::Unknown);
    }

    #[test]
    fn reset_reasons() {
        assert_eq!(
            code_for_reason(Some(h2::Reason::REFUSED_STREAM)),
            Code::Unavailable
        );
        assert_eq!(code_for_reason(Some(h2::Reason::CANCEL)), Code::Cancelled);
        assert_eq!(
            code_for_reason(Some(h2::Reason::INTERNAL_ERROR)),
            Code::Internal
        );
        assert_eq!(code_for_reason(None), Code::Internal);
    }
}
