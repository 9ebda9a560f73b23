//! A minimal HTTP/1.1 GET client for httpGet probes and hooks, on async-io TCP (no
//! HTTP crate, no thread): one request per connection (`Connection: close`); a probe
//! reads the response's status line only, a hook the answer to its end. Everything the
//! peer sends is hostile input: parsing never panics, bounds what it buffers and stops
//! at the first malformed byte.
//!
//! Kubelet's rules kept: `User-Agent: kube-probe/1.x` and `Accept: */*` unless the
//! manifest sets them, `Host: host:port` unless it sets Host, interim 1xx responses are
//! skipped, 200-399 is success. Redirects are not followed (a 3xx is already success;
//! a probe records it as a warning, see `handler::http_probe`).

use async_io::{Async, Timer};
use smol::future;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

mod error;
pub use error::{BadResponse, HttpError, ReadError};

/// The most of a response kept while looking for the final status line.
const MAX_HEAD: usize = 4096;
/// The most of an answer read (and dropped) to its end: a hook's handler has finished
/// by then or streams without end.
const MAX_DRAINED: usize = 1 << 20;

/// How much of the answer is waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// The status line: a probe's verdict.
    Status,
    /// The end of the answer (the server closes: `Connection: close`), at most
    /// [`MAX_DRAINED`] bytes: a hook's handler runs until it has answered in full, as
    /// kubelet reads a hook's whole body, so a container is not stopped while its
    /// preStop handler still works (a CGI that writes its answer first, then acts).
    End,
}

/// One request: where it goes and what it says.
#[derive(Debug, Clone)]
pub struct Get<'a> {
    /// Where the request goes.
    pub addr: SocketAddr,
    /// The request path.
    pub path: &'a str,
    /// Extra headers (name, value) from the manifest.
    pub headers: &'a [(String, String)],
}

/// The request bytes, or why they cannot be sent (a path or header that would break
/// the request line: spaces, control characters).
pub fn request(get: &Get) -> Result<Vec<u8>, HttpError> {
    let path = if get.path.is_empty() { "/" } else { get.path };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(HttpError::BadPath(path.to_string()));
    }
    let slash = if path.starts_with('/') { "" } else { "/" };
    let mut out = format!("GET {slash}{path} HTTP/1.1\r\n");
    let has = |name: &str| {
        get.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !has("host") {
        out.push_str(&format!("Host: {}\r\n", get.addr));
    }
    if !has("user-agent") {
        out.push_str("User-Agent: kube-probe/1.31\r\n");
    }
    if !has("accept") {
        out.push_str("Accept: */*\r\n");
    }
    for (name, value) in get.headers {
        let bad_name = name.is_empty() || name.bytes().any(|b| !b.is_ascii_graphic() || b == b':');
        if bad_name || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(HttpError::BadHeader(name.clone()));
        }
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(out.into_bytes())
}

/// Parses the start of a response: `Ok(None)` while more bytes are needed, the final
/// status code once its status line is complete, or why the bytes are not HTTP.
pub fn parse_status(buf: &[u8]) -> Result<Option<u16>, BadResponse> {
    let mut rest = buf;
    loop {
        let Some(eol) = rest.iter().position(|&b| b == b'\n') else {
            return if rest.len() > 1024 {
                Err(BadResponse::StatusLineTooLong)
            } else if !rest.is_empty() && !b"HTTP/1.".starts_with(&rest[..rest.len().min(7)]) {
                Err(BadResponse::NotHttp1(show(rest)))
            } else {
                Ok(None)
            };
        };
        let code = status_line(&rest[..eol])?;
        // Interim responses (100 Continue, 103 Early Hints): the real one follows after
        // their header block. 101 is final (and a failure).
        if !(100..200).contains(&code) || code == 101 {
            return Ok(Some(code));
        }
        let Some(end) = header_end(rest) else {
            return Ok(None);
        };
        rest = &rest[end..];
    }
}

/// The code of `HTTP/1.x DDD[ reason]` (an optional trailing `\r`).
fn status_line(line: &[u8]) -> Result<u16, BadResponse> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let bad = || BadResponse::MalformedStatusLine(show(line));
    let rest = line.strip_prefix(b"HTTP/1.").ok_or_else(bad)?;
    let (minor, rest) = rest.split_first().ok_or_else(bad)?;
    if !minor.is_ascii_digit() {
        return Err(bad());
    }
    let rest = rest.strip_prefix(b" ").ok_or_else(bad)?;
    let (digits, reason) = rest.split_at(rest.len().min(3));
    if digits.len() != 3 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    if !reason.is_empty() && reason.first() != Some(&b' ') {
        return Err(bad());
    }
    digits
        .iter()
        .try_fold(0u16, |n, d| {
            n.checked_mul(10)?.checked_add(u16::from(d - b'0'))
        })
        .ok_or_else(bad)
}

/// The offset just past the blank line ending a header block, if it has arrived.
fn header_end(buf: &[u8]) -> Option<usize> {
    let mut prev_newline = false;
    let mut i = 0;
    while let Some(&b) = buf.get(i) {
        i += 1;
        match b {
            b'\n' if prev_newline => return Some(i),
            b'\n' => prev_newline = true,
            b'\r' => {}
            _ => prev_newline = false,
        }
    }
    None
}

/// At most 60 bytes of `b` as text, for error messages.
fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b.get(..60).unwrap_or(b)).into_owned()
}

/// Sends the GET and returns the final status code; connect, send and read together
/// take at most `timeout`.
pub async fn get(req: &Get<'_>, timeout: Duration, until: Until) -> Result<u16, HttpError> {
    let bytes = request(req)?;
    let addr = req.addr;
    future::or(exchange(addr, &bytes, until), async {
        Timer::after(timeout).await;
        Err(HttpError::Timeout { addr, timeout })
    })
    .await
}

async fn exchange(addr: SocketAddr, bytes: &[u8], until: Until) -> Result<u16, HttpError> {
    let mut s = Async::<TcpStream>::connect(addr)
        .await
        .map_err(|source| HttpError::Connect { addr, source })?;
    s.write_all(bytes)
        .await
        .map_err(|source| HttpError::Send { addr, source })?;
    let code = read_status(&mut s)
        .await
        .map_err(|source| HttpError::Answer { addr, source })?;
    if until == Until::End {
        drain(&mut s).await;
    }
    Ok(code)
}

/// Reads and drops what follows until the peer closes (or resets: the status is
/// already had), at most [`MAX_DRAINED`] bytes.
async fn drain(r: &mut (impl AsyncReadExt + Unpin)) {
    let mut chunk = [0u8; 512];
    let mut total = 0;
    while total < MAX_DRAINED {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => total += n,
        }
    }
}

/// Reads until the final status line is complete (at most [`MAX_HEAD`] bytes).
pub async fn read_status(r: &mut (impl AsyncReadExt + Unpin)) -> Result<u16, ReadError> {
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 512];
    loop {
        let n = r.read(&mut chunk).await.map_err(ReadError::Io)?;
        if n == 0 {
            return Err(BadResponse::ClosedEarly.into());
        }
        buf.extend_from_slice(chunk.get(..n).unwrap_or(&chunk));
        if let Some(code) = parse_status(&buf)? {
            return Ok(code);
        }
        if buf.len() > MAX_HEAD {
            return Err(BadResponse::NoFinalStatus.into());
        }
    }
}

/// kubelet's verdict on a status code.
pub fn is_success(code: u16) -> bool {
    (200..400).contains(&code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn req(path: &str, headers: &[(String, String)]) -> Result<String, String> {
        let get = Get {
            addr: SocketAddr::from((Ipv4Addr::new(10, 1, 0, 7), 8080)),
            path,
            headers,
        };
        request(&get)
            .map(|b| String::from_utf8(b).unwrap())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn request_has_kubelets_default_headers() {
        assert_eq!(
            req("/healthz", &[]).unwrap(),
            "GET /healthz HTTP/1.1\r\nHost: 10.1.0.7:8080\r\nUser-Agent: kube-probe/1.31\r\n\
             Accept: */*\r\nConnection: close\r\n\r\n"
        );
        assert!(req("", &[]).unwrap().starts_with("GET / HTTP/1.1\r\n"));
        assert!(req("x?a=b", &[])
            .unwrap()
            .starts_with("GET /x?a=b HTTP/1.1\r\n"));
        let h = [
            ("Host".to_string(), "svc".to_string()),
            ("X-A".into(), "1".into()),
        ];
        let r = req("/", &h).unwrap();
        assert!(
            r.contains("\r\nHost: svc\r\n") && !r.contains("10.1.0.7"),
            "{r}"
        );
        assert!(r.contains("\r\nX-A: 1\r\n"), "{r}");
        let v6 = Get {
            addr: SocketAddr::from((Ipv6Addr::LOCALHOST, 80)),
            path: "/",
            headers: &[],
        };
        let r = String::from_utf8(request(&v6).unwrap()).unwrap();
        assert!(r.contains("Host: [::1]:80\r\n"), "{r}");
    }

    #[test]
    fn request_refuses_injection() {
        assert!(req("/a b", &[]).is_err());
        assert!(req("/a\r\nX: y", &[]).is_err());
        for (n, v) in [("X\r\nY", "1"), ("", "1"), ("A:B", "1"), ("A", "1\r\nB: 2")] {
            assert!(req("/", &[(n.into(), v.into())]).is_err(), "{n:?} {v:?}");
        }
    }

    #[test]
    fn status_lines() {
        let ok = |s: &str| parse_status(s.as_bytes());
        assert_eq!(ok("HTTP/1.1 200 OK\r\n"), Ok(Some(200)));
        assert_eq!(ok("HTTP/1.0 404 Not Found\r\nServer: x\r\n"), Ok(Some(404)));
        assert_eq!(ok("HTTP/1.1 302\r\n"), Ok(Some(302)));
        assert_eq!(ok("HTTP/1.1 204 \n"), Ok(Some(204)));
        assert_eq!(ok("HTTP/1.1 101 Switching\r\n\r\n"), Ok(Some(101)));
        // Interim responses are skipped once their header block ends.
        assert_eq!(ok("HTTP/1.1 100 Continue\r\n"), Ok(None));
        assert_eq!(ok("HTTP/1.1 100 Continue\r\n\r\n"), Ok(None));
        assert_eq!(
            ok("HTTP/1.1 103 Early\r\nLink: x\r\n\r\nHTTP/1.1 500 Oops\r\n"),
            Ok(Some(500))
        );
        for partial in ["", "H", "HTTP/1.", "HTTP/1.1 2", "HTTP/1.1 200 OK\r"] {
            assert_eq!(ok(partial), Ok(None), "{partial:?}");
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in [
            "SSH-2.0-OpenSSH\r\n",
            "HTTP/2 200\r\n",
            "HTTP/1.1 20\r\n",
            "HTTP/1.1 2000\r\n",
            "HTTP/1.1 abc OK\r\n",
            "HTTP/1.x 200 OK\r\n",
            "HTTP/1.1200 OK\r\n",
            "\r\n",
            "<html>",
        ] {
            assert!(parse_status(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert!(parse_status(&[b'H'; 2000]).is_err());
        assert!(parse_status(&[0xff, 0xfe, b'\n']).is_err());
        // Every prefix of every byte pattern: no panic.
        let samples: [&[u8]; 3] = [
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n",
            b"HTTP/1.1 \xff\xff\xff\r\n",
            b"\n\n\n\r\r\r",
        ];
        for s in samples {
            for i in 0..=s.len() {
                let _ = parse_status(&s[..i]);
            }
        }
    }

    /// Feeds a response in pieces, as a slow or split TCP stream would.
    struct Pieces(Vec<Vec<u8>>);

    impl smol::io::AsyncRead for Pieces {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut [u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            if self.0.is_empty() {
                return std::task::Poll::Ready(Ok(0));
            }
            let piece = self.0.remove(0);
            let n = piece.len().min(buf.len());
            buf[..n].copy_from_slice(&piece[..n]);
            if n < piece.len() {
                self.0.insert(0, piece[n..].to_vec());
            }
            std::task::Poll::Ready(Ok(n))
        }
    }

    fn read(pieces: &[&[u8]]) -> Result<u16, String> {
        let mut r = Pieces(pieces.iter().map(|p| p.to_vec()).collect());
        future::block_on(read_status(&mut r)).map_err(|e| e.to_string())
    }

    #[test]
    fn partial_reads() {
        let bytes: Vec<&[u8]> = b"HTTP/1.1 503 Busy\r\nA: b\r\n\r\n"
            .iter()
            .map(std::slice::from_ref)
            .collect();
        assert_eq!(read(&bytes), Ok(503));
        assert_eq!(
            read(&[
                b"HTTP/1.1 10",
                b"0 Continue\r\n\r",
                b"\nHTTP/1.0 2",
                b"00 OK\n"
            ]),
            Ok(200)
        );
        assert!(read(&[b"HTTP/1.1 200"]).is_err(), "closed mid-line");
        assert!(read(&[]).is_err(), "closed at once");
        // Endless interim responses are cut off at the size bound.
        let flood = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(400);
        assert!(read(&[&flood]).is_err());
    }

    #[test]
    fn success_range() {
        assert!(!is_success(199) && is_success(200) && is_success(399) && !is_success(400));
    }

    /// [`super::get`], its error as the logs show it.
    async fn get(g: &Get<'_>, timeout: Duration) -> Result<u16, String> {
        super::get(g, timeout, Until::Status)
            .await
            .map_err(|e| e.to_string())
    }

    #[test]
    fn until_the_end_waits_for_the_handler_to_finish_its_answer() {
        use std::io::{Read, Write};
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let acted = Arc::new(AtomicBool::new(false));
        let flag = acted.clone();
        // A CGI-like handler: the status first, then its work, then the end.
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\n\r\nbye\n").unwrap();
            s.flush().unwrap();
            std::thread::sleep(Duration::from_millis(200));
            flag.store(true, Ordering::SeqCst);
            s.write_all(&[b'x'; 5000]).unwrap();
        });
        let g = Get {
            addr,
            path: "/stop",
            headers: &[],
        };
        let got = crate::rt::block_on(super::get(&g, Duration::from_secs(10), Until::End));
        assert_eq!(got.map_err(|e| e.to_string()), Ok(200));
        assert!(
            acted.load(Ordering::SeqCst),
            "returned before the answer ended"
        );
        server.join().unwrap();
    }

    #[test]
    fn draining_stops_at_its_bound() {
        // An answer without end: read to the bound, not forever.
        let mut endless = smol::io::repeat(b'x');
        crate::rt::block_on(drain(&mut endless));
    }

    #[test]
    fn against_a_real_socket_with_timeouts() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            // 1: answers 200 in two writes; 2: accepts and stays silent.
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).unwrap();
            assert!(buf[..n].starts_with(b"GET /h HTTP/1.1\r\n"));
            s.write_all(b"HTTP/1.1 2").unwrap();
            s.flush().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            s.write_all(b"04 No Content\r\n\r\n").unwrap();
            let (silent, _) = l.accept().unwrap();
            std::thread::sleep(Duration::from_millis(1500));
            drop(silent);
        });
        let g = Get {
            addr,
            path: "/h",
            headers: &[],
        };
        let t = Duration::from_secs(5);
        assert_eq!(crate::rt::block_on(get(&g, t)), Ok(204));
        let e = crate::rt::block_on(get(&g, Duration::from_millis(200))).unwrap_err();
        assert!(e.contains("within"), "{e}");
        server.join().unwrap();
        // Nothing listens any more: refused, not hung.
        assert!(crate::rt::block_on(get(&g, t)).is_err());
    }
}
