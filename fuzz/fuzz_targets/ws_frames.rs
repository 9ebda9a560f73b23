//! The exec stream's WebSocket decoder (`cri::websocket::Decoder`) on what a broken or
//! hostile streaming server may send, and the channel split and exit status read from
//! its messages (`cri::stream_channels`). Properties: no panic; no message over the
//! limit, no control payload over 125 bytes; once the decoder wants more bytes it holds
//! at most one frame header plus the limit (memory bounded whatever lengths frames
//! claim); reading the bytes in pieces (sizes from the input) gives the messages and
//! the error that reading them whole gives.
#![no_main]

#[path = "common/pieces.rs"]
mod pieces;

use libfuzzer_sys::fuzz_target;
use pieces::{piece_size, split_sizes};
use tinylet::cri::stream_channels::{incoming, outcome, Incoming};
use tinylet::cri::websocket::{Decoder, FrameError, Message};

/// Small, so that lengths over it are cheap to reach.
const MAX: usize = 4096;
/// The longest frame header a server sends (no mask).
const HEADER: usize = 10;

/// Feeds `data` in pieces of `sizes` (cycled; all at once when none) and drains the
/// messages after each piece; stops at the first error, as the client does.
fn decode(data: &[u8], sizes: &[u8]) -> (Vec<Message>, Option<FrameError>) {
    let mut d = Decoder::new(MAX);
    let mut got = Vec::new();
    let mut at = 0;
    let mut n = 0;
    while at < data.len() {
        let size = piece_size(sizes, n, data.len());
        n += 1;
        let end = (at + size).min(data.len());
        d.push(&data[at..end]);
        at = end;
        loop {
            match d.next_message() {
                Ok(Some(m)) => {
                    check(&m);
                    got.push(m);
                }
                Ok(None) => break,
                Err(e) => return (got, Some(e)),
            }
        }
        assert!(d.held() <= HEADER + MAX, "{} bytes held", d.held());
    }
    (got, None)
}

fn check(m: &Message) {
    match m {
        Message::Binary(p) | Message::Text(p) => {
            assert!(p.len() <= MAX, "{} bytes", p.len());
            if let Incoming::Status(s) = incoming(p) {
                let _ = outcome(s);
            }
        }
        Message::Ping(p) => assert!(p.len() <= 125, "ping of {}", p.len()),
        Message::Pong | Message::Close(_) => {}
    }
}

fuzz_target!(|input: &[u8]| {
    let (sizes, data) = split_sizes(input);
    let whole = decode(data, &[]);
    let pieces = decode(data, sizes);
    assert_eq!(whole, pieces);
});
