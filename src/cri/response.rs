//! The response half of a unary gRPC call: the head (HTTP status, content-type, or a
//! Trailers-Only status), the body's single message, then the status in the trailers.

use super::deframe::{Deframer, Refusal};
use super::error::Code;
use super::status;
use bytes::Bytes;
use h2::RecvStream;
use http::{HeaderMap, Response, StatusCode};

/// Reads a unary call's answer to the end and returns the message bytes (without the
/// prefix), or why the call failed.
///
/// Flow-control capacity is released as each DATA frame is taken, so answers larger
/// than the HTTP/2 window keep flowing; the message is bounded by `limit` bytes.
pub async fn read_unary(response: Response<RecvStream>, limit: usize) -> Result<Bytes, Refusal> {
    let (head, mut body) = response.into_parts();
    check_head(head.status, &head.headers)?;
    let mut deframer = Deframer::new(limit);
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| h2_refusal(&e))?;
        if let Err(e) = body.flow_control().release_capacity(chunk.len()) {
            log::debug!("releasing {} bytes of HTTP/2 window: {e}", chunk.len());
        }
        deframer.push(chunk)?;
    }
    let message = deframer.finish()?;
    let trailers = body.trailers().await.map_err(|e| h2_refusal(&e))?;
    let status = trailers.as_ref().and_then(status::from_headers);
    match (status, message) {
        (None, _) => Err((
            Code::Internal,
            "response ended without a grpc-status trailer".into(),
        )),
        (Some(s), _) if s.code != Code::Ok => Err((s.code, s.message)),
        (Some(_), Some(message)) => Ok(message),
        (Some(_), None) => Err((
            Code::Internal,
            "status OK but the response carries no message".into(),
        )),
    }
}

/// Checks the response head: HTTP status 200 and a gRPC content-type, unless the head
/// already carries the final status (a Trailers-Only answer, how servers send errors).
fn check_head(http_status: StatusCode, headers: &HeaderMap) -> Result<(), Refusal> {
    let grpc_status = status::from_headers(headers);
    if http_status != StatusCode::OK {
        let code = status::code_for_http_status(http_status.as_u16());
        let detail = grpc_status
            .map(|s| format!(" ({}: {})", s.code, s.message))
            .unwrap_or_default();
        return Err((code, format!("HTTP status {http_status}{detail}")));
    }
    if let Some(s) = grpc_status {
        return Err(match s.code {
            Code::Ok => (
                Code::Internal,
                "status OK but the response carries no message".into(),
            ),
            code => (code, s.message),
        });
    }
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !content_type.starts_with(b"application/grpc") {
        return Err((
            Code::Unknown,
            format!(
                "response content-type {:?} is not application/grpc",
                String::from_utf8_lossy(content_type)
            ),
        ));
    }
    Ok(())
}

/// The code and message for an HTTP/2 error met while the call was in flight.
pub fn h2_refusal(e: &h2::Error) -> Refusal {
    let (code, _) = status::classify_h2(e);
    let what = if e.is_reset() {
        "stream reset"
    } else if e.is_go_away() {
        "connection closed (GOAWAY)"
    } else if e.is_io() {
        "connection lost"
    } else {
        "HTTP/2 error"
    };
    (code, format!("{what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn grpc_headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("content-type", HeaderValue::from_static("application/grpc"));
        h
    }

    #[test]
    fn head_checks() {
        assert!(check_head(StatusCode::OK, &grpc_headers()).is_ok());
        let mut proto = HeaderMap::new();
        proto.insert(
            "content-type",
            HeaderValue::from_static("application/grpc+proto"),
        );
        assert!(check_head(StatusCode::OK, &proto).is_ok());
        let err = check_head(StatusCode::OK, &HeaderMap::new()).unwrap_err();
        assert_eq!(err.0, Code::Unknown);
        let err = check_head(StatusCode::SERVICE_UNAVAILABLE, &HeaderMap::new()).unwrap_err();
        assert_eq!(err.0, Code::Unavailable);
        assert!(err.1.contains("503"), "{}", err.1);
    }

    #[test]
    fn trailers_only_head_is_the_status() {
        let mut h = grpc_headers();
        h.insert("grpc-status", HeaderValue::from_static("6"));
        h.insert("grpc-message", HeaderValue::from_static("name%20taken"));
        assert_eq!(
            check_head(StatusCode::OK, &h).unwrap_err(),
            (Code::AlreadyExists, "name taken".to_string())
        );
        h.insert("grpc-status", HeaderValue::from_static("0"));
        assert_eq!(
            check_head(StatusCode::OK, &h).unwrap_err().0,
            Code::Internal
        );
    }
}
