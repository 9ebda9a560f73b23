//! Just enough HTTP/1.1 for the status endpoint and the kubelet API: read a request head
//! (bounded), parse its request line and headers, write an answer with `Content-Length`
//! (or a chunked body, for a log being followed) and `Connection: close`. Generic over
//! the stream: a TCP socket for the status endpoint, TLS for the kubelet API.
//!
//! [`accept`]: the accept loop both share, with its bounds and eviction; [`query`]: the
//! refusal of a request and the decoding of its path and query.

pub mod accept;
pub mod query;

use async_io::Async;
use smol::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use std::net::TcpStream;

/// Largest request head (request line and headers) accepted.
pub const MAX_HEAD: usize = 8 << 10;

/// A request's method, path (without the query) and headers.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    /// `GET`, ...
    pub method: String,
    /// `/metrics`, ...
    pub path: String,
    /// What follows `?` in the target (undecoded), empty without one.
    pub query: String,
    /// The header fields as sent (names as the client spelt them), in order; bounded
    /// by the head's size limit.
    pub headers: Vec<(String, String)>,
    /// Bytes read past the head (the start of a body or of an upgraded stream).
    pub early: Vec<u8>,
}

impl Head {
    /// The values of header `name` (case-insensitive), in order.
    pub fn header<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub enum BadHead {
    /// The connection failed or closed early: nobody to answer.
    Closed,
    /// The head grew past the limit.
    TooLarge,
    /// The request line is not `METHOD PATH HTTP/1.x`, a header line has no `:`, a
    /// name is not a token, or a control character (a bare CR or LF, NUL, ...) is in
    /// the request line or a header.
    Malformed,
}

impl BadHead {
    /// The answer to a bad request.
    pub fn answer(&self) -> Answer {
        match self {
            BadHead::TooLarge => Answer::text(431, "request header fields too large\n"),
            _ => Answer::text(400, "bad request\n"),
        }
    }
}

/// Reads up to the blank line ending the head, at most `max` bytes, and parses it.
pub async fn read_head<S: AsyncRead + Unpin>(stream: &mut S, max: usize) -> Result<Head, BadHead> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.map_err(|_| BadHead::Closed)?;
        if n == 0 {
            return Err(BadHead::Closed);
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            let mut head = parse(&buf[..from + end])?;
            head.early = buf[from + end + 4..].to_vec();
            return Ok(head);
        }
        if buf.len() > max {
            return Err(BadHead::TooLarge);
        }
    }
}

/// Parses a head (without its final blank line): the request line, then header lines.
pub fn parse(head: &[u8]) -> Result<Head, BadHead> {
    let text = std::str::from_utf8(head).map_err(|_| BadHead::Malformed)?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BadHead::Malformed);
    };
    let well_formed = version.starts_with("HTTP/1.")
        && target.starts_with('/')
        && is_token(method)
        && !line.bytes().any(is_control);
    if !well_formed {
        return Err(BadHead::Malformed);
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = Vec::new();
    for field in lines {
        let (name, value) = field.split_once(':').ok_or(BadHead::Malformed)?;
        // A bare CR or LF would end the line for whoever reads it next (the runtime's
        // streaming server gets the upgrade headers): refused, as Go's server does.
        if !is_token(name) || value.bytes().any(|b| is_control(b) && b != b'\t') {
            return Err(BadHead::Malformed);
        }
        let value = value.trim_matches([' ', '\t']);
        headers.push((name.to_string(), value.to_string()));
    }
    Ok(Head {
        method: method.into(),
        path: path.into(),
        query: query.into(),
        headers,
        early: Vec::new(),
    })
}

/// RFC 9110's `token`: what a method and a header name are made of.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// An ASCII control character (NUL, CR, LF, ..., DEL).
fn is_control(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// A complete answer.
pub struct Answer {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
}

impl Answer {
    /// An answer with a body of `content_type`.
    pub fn new(status: u16, content_type: &'static str, body: Vec<u8>) -> Answer {
        Answer {
            status,
            content_type,
            body,
        }
    }

    /// A plain-text answer.
    pub fn text(status: u16, body: &str) -> Answer {
        Answer::new(
            status,
            "text/plain; charset=utf-8",
            body.as_bytes().to_vec(),
        )
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Writes the status line, headers and body.
    pub async fn write_to<W: AsyncWrite + Unpin>(&self, stream: &mut W) -> std::io::Result<()> {
        let head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&self.body).await?;
        stream.flush().await
    }
}

/// The reason phrase of a status code.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

/// Starts a 200 answer whose body follows in chunks ([`write_chunk`], [`end_chunks`]):
/// for output whose length is not known when it starts (a log being followed).
pub async fn start_chunked<W: AsyncWrite + Unpin>(
    stream: &mut W,
    content_type: &str,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await
}

/// Writes one chunk of a chunked body and flushes it (an empty `data` writes nothing:
/// an empty chunk would end the body).
pub async fn write_chunk<W: AsyncWrite + Unpin>(
    stream: &mut W,
    data: &[u8],
) -> std::io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    stream
        .write_all(format!("{:x}\r\n", data.len()).as_bytes())
        .await?;
    stream.write_all(data).await?;
    stream.write_all(b"\r\n").await?;
    stream.flush().await
}

/// Ends a chunked body.
pub async fn end_chunks<W: AsyncWrite + Unpin>(stream: &mut W) -> std::io::Result<()> {
    stream.write_all(b"0\r\n\r\n").await?;
    stream.flush().await
}

/// Ends the connection after an answer: our side is shut, then what the client still
/// sends is read and dropped (at most `max` bytes) until it closes too. Closing with
/// unread input would reset the connection, and a reset can destroy the answer before
/// the client reads it (a 431 to a client still sending its huge header).
pub async fn linger_close(stream: &mut Async<TcpStream>, max: usize) {
    let _ = stream.get_ref().shutdown(std::net::Shutdown::Write);
    drain(stream, max).await;
}

/// Reads and drops what the client still sends, at most `max` bytes, until it closes.
pub async fn drain<S: AsyncRead + Unpin>(stream: &mut S, max: usize) {
    let mut chunk = [0u8; 1024];
    let mut left = max;
    while left > 0 {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_line_gives_method_and_path_without_query() {
        let h = parse(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a").unwrap();
        assert_eq!(h.method, "GET");
        assert_eq!(h.path, "/metrics");
        assert_eq!(h.query, "x=1");
        assert_eq!(h.header("host").collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn headers_keep_order_and_repeats() {
        let h = parse(
            b"POST /exec/a/b/c HTTP/1.1\r\nUpgrade: SPDY/3.1\r\n\
            X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\
            x-stream-protocol-version:  v3.channel.k8s.io ",
        )
        .unwrap();
        assert_eq!(h.header("upgrade").collect::<Vec<_>>(), ["SPDY/3.1"]);
        let versions: Vec<_> = h.header("X-Stream-Protocol-Version").collect();
        assert_eq!(versions, ["v4.channel.k8s.io", "v3.channel.k8s.io"]);
        for bad in [
            &b"GET / HTTP/1.1\r\nno colon"[..],
            b"GET / HTTP/1.1\r\nA b: c",
        ] {
            assert!(matches!(parse(bad), Err(BadHead::Malformed)), "{bad:?}");
        }
    }

    #[test]
    fn control_characters_in_the_head_are_refused() {
        for bad in [
            &b"GET / HTTP/1.1\r\nUpgrade: a\rInjected: b"[..],
            b"GET / HTTP/1.1\r\nUpgrade: a\nInjected: b",
            b"GET / HTTP/1.1\r\nUpgrade: a\0b",
            b"GET / HTTP/1.1\r\nUpgrade: a\x7f",
            b"GET / HTTP/1.1\r\nUp\ngrade: a",
            b"GET / HTTP/1.1\r\nUp\0grade: a",
            b"GET /a\nb HTTP/1.1",
            b"GET /a\0b HTTP/1.1",
            b"G\rET / HTTP/1.1",
            b"GET / HTTP/1.1\n",
            b"GET / HTTP/1.1\r\nX(y): z",
        ] {
            assert!(matches!(parse(bad), Err(BadHead::Malformed)), "{bad:?}");
        }
        // A tab is whitespace in a value; outer spaces and tabs are not the value's.
        let h = parse(b"GET / HTTP/1.1\r\nX-A:\t a\tb \t").unwrap();
        assert_eq!(h.header("x-a").collect::<Vec<_>>(), ["a\tb"]);
        assert_eq!(BadHead::Malformed.answer().status(), 400);
    }

    #[test]
    fn malformed_request_lines_are_refused() {
        for bad in [
            &b""[..],
            b"GET",
            b"GET /",
            b"GET / HTTP/1.1 extra",
            b"GET metrics HTTP/1.1",
            b"GET / SPDY/3",
            b"\xff / HTTP/1.1",
        ] {
            assert!(matches!(parse(bad), Err(BadHead::Malformed)), "{bad:?}");
        }
    }
}
