//! The kubelet API's request paths and queries: `LogRequest::parse` (containerLogs) and
//! `StreamRequest::parse` (exec, attach, portForward), as the API server or a client
//! with a certificate may send them. Properties: no panic; a refusal is a 400 or 404
//! whose message is one line of bounded length; an accepted request names a namespace,
//! pod and (but for a port-forward) container; a stream has kubelet's invariants (some
//! stdio for exec and attach, a command for exec, no separate stderr with a TTY, ports
//! 1 to 65535); in what is decoded (path segments, query values) a '%' must start two
//! hex digits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tinylet::http::query::Refused;
use tinylet::kubelet_api::{LogRequest, StreamKind, StreamRequest};

fn refusal(r: &Refused, input: usize) {
    assert!(r.0 == 400 || r.0 == 404, "{r:?}");
    assert!(!r.1.contains('\n'), "{r:?}");
    // The input is quoted with Rust's escapes: a control byte takes 6 ("\u{16}").
    assert!(r.1.len() <= 6 * input + 200, "{} bytes", r.1.len());
}

fn named(parts: &[&str]) {
    assert!(parts.iter().all(|p| !p.is_empty()), "{parts:?}");
}

/// The values of a query (its keys are never decoded).
fn values(query: &str) -> impl Iterator<Item = &str> {
    query
        .split('&')
        .map(|pair| pair.split_once('=').map_or("", |(_, v)| v))
}

/// Whether `s` holds a '%' not followed by two hex digits.
fn bad_escape(s: &str) -> bool {
    let b = s.as_bytes();
    (0..b.len()).any(|i| {
        b[i] == b'%'
            && !b
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    })
}

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    // PATH?QUERY, as the request line carries them.
    let (path, query) = text.split_once('?').unwrap_or((text, ""));
    let n = input.len();
    if let Some(rest) = path.strip_prefix("/containerLogs/") {
        match LogRequest::parse(rest, query) {
            Ok(r) => {
                named(&[&r.ns, &r.pod, &r.container]);
                assert!(!bad_escape(rest) && !values(query).any(bad_escape));
                assert!(r.limit_bytes != Some(0));
            }
            Err(e) => refusal(&e, n),
        }
    }
    match StreamRequest::parse(path, query) {
        None => assert!(
            !["/exec/", "/attach/", "/portForward/"]
                .iter()
                .any(|p| path.starts_with(p)),
            "{path}"
        ),
        Some(Err(e)) => refusal(&e, n),
        Some(Ok(r)) => {
            assert!(!bad_escape(path) && !values(query).any(bad_escape));
            named(&[&r.ns, &r.pod]);
            if let Some(uid) = &r.uid {
                named(&[uid]);
            }
            match r.kind {
                StreamKind::PortForward => {
                    assert!(r.container.is_empty());
                    assert!(r.ports.iter().all(|p| (1..=65535).contains(p)));
                }
                kind => {
                    named(&[&r.container]);
                    assert!(r.stdin || r.stdout || r.stderr);
                    assert!(!(r.tty && r.stderr));
                    assert!(kind != StreamKind::Exec || !r.cmd.is_empty());
                }
            }
        }
    }
});
