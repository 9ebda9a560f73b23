//! A watch's body as the uplink reads it from the API server (`uplink::watch`): lines
//! framed by `EventLines`, each decoded by `decode_event`. Properties: no panic; what
//! is held stays within the line bound plus one chunk; reading the body in pieces
//! (sizes from the input) gives the lines, events and error that reading it whole
//! gives; every line handed out is within the bound, ends in a newline and is not
//! blank; an event's object comes without `metadata.managedFields`.
#![no_main]

#[path = "common/pieces.rs"]
mod pieces;

use libfuzzer_sys::fuzz_target;
use pieces::{piece_size, split_sizes};
use tinylet::uplink::watch::{decode_event, EventLines};

/// Small, so that the bound is reached often.
const MAX: usize = 256;

/// The lines (and the error that ended them) when `body` comes in pieces of `sizes`
/// (cycled; all at once without sizes).
fn lines(body: &[u8], sizes: &[u8]) -> (Vec<Vec<u8>>, Option<String>) {
    let mut framing = EventLines::new(MAX);
    let mut got = Vec::new();
    let mut at = 0;
    let mut n = 0;
    while at < body.len() {
        let size = piece_size(sizes, n, body.len());
        n += 1;
        let end = (at + size).min(body.len());
        framing.push(&body[at..end]);
        at = end;
        assert!(
            framing.held() <= MAX + size,
            "{} bytes held",
            framing.held()
        );
        loop {
            match framing.next_line() {
                Ok(Some(line)) => {
                    assert!(line.len() <= MAX + 1 && line.ends_with(b"\n"));
                    assert!(!line.iter().all(u8::is_ascii_whitespace));
                    got.push(line.to_vec());
                }
                Ok(None) => break,
                Err(e) => return (got, Some(e.to_string())),
            }
        }
    }
    let end = framing.finish().err().map(|e| e.to_string());
    (got, end)
}

fuzz_target!(|input: &[u8]| {
    let (sizes, body) = split_sizes(input);
    let whole = lines(body, &[]);
    let pieces = lines(body, sizes);
    // A line past the bound may be seen as such before its end arrives: then fewer
    // lines came first, never other ones.
    match (&whole.1, &pieces.1) {
        (Some(w), Some(p)) if w.contains("larger") || p.contains("larger") => {
            let n = whole.0.len().min(pieces.0.len());
            assert_eq!(whole.0[..n], pieces.0[..n]);
        }
        _ => assert_eq!(whole, pieces),
    }
    for line in &whole.0 {
        if let Ok(event) = decode_event(line) {
            // Objects come without their managedFields (never read on the node).
            assert!(event.object.pointer("/metadata/managedFields").is_none());
        }
    }
});
