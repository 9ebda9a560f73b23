//! The HTTP/1.1 request head of the kubelet API (:10250) and the local status endpoint
//! (`http::read_head`, `parse`), read in pieces as a TCP stream delivers them.
//! Properties: no panic; reading in pieces (sizes from the input) gives what reading
//! the whole gives; a head is refused as too large only past the limit; an accepted
//! head has a token method, a path from '/', token header names and values free of
//! control characters (no bare CR, LF or NUL reaches the runtime); what was read past
//! the head is kept as it came.
#![no_main]

#[path = "common/pieces.rs"]
mod pieces;

use libfuzzer_sys::fuzz_target;
use pieces::{split_sizes, Pieces};
use tinylet::http::{parse, read_head, BadHead, Head};

/// Small, so that the limit is reached often.
const MAX: usize = 512;

fn read(data: &[u8], sizes: &[u8]) -> Result<Head, BadHead> {
    let mut pieces = Pieces {
        data,
        sizes,
        default: usize::MAX,
        n: 0,
    };
    smol::block_on(read_head(&mut pieces, MAX))
}

fn token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn check(h: &Head, data: &[u8]) {
    assert!(token(&h.method), "{:?}", h.method);
    assert!(h.path.starts_with('/'), "{:?}", h.path);
    for (name, value) in &h.headers {
        assert!(token(name), "{name:?}");
        assert!(
            !value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f),
            "{value:?}"
        );
    }
    let end = data.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(
        data[end..].starts_with(&h.early),
        "the bytes read past the head"
    );
}

fuzz_target!(|input: &[u8]| {
    let (sizes, data) = split_sizes(input);
    let whole = read(data, &[]);
    let pieces = read(data, sizes);
    match (&whole, &pieces) {
        (Ok(a), Ok(b)) => {
            // The bytes past the head depend on where the pieces fell; the rest not.
            assert_eq!(
                (&a.method, &a.path, &a.query, &a.headers),
                (&b.method, &b.path, &b.query, &b.headers)
            );
            check(a, data);
        }
        // Read whole, a head past the limit can still end within the one read.
        (Err(BadHead::TooLarge), _) | (_, Err(BadHead::TooLarge)) => {}
        (Err(a), Err(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
        _ => panic!("whole {whole:?}, in pieces {pieces:?}"),
    }
    if let Err(BadHead::TooLarge) = pieces {
        let end = data.windows(4).position(|w| w == b"\r\n\r\n");
        assert!(
            end.is_none_or(|e| e + 4 > MAX - 3),
            "refused as too large at {end:?}"
        );
    }
    // The head as parsed directly agrees.
    if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
        if let Ok(h) = parse(&data[..end]) {
            check(
                &Head {
                    early: data[end + 4..].to_vec(),
                    ..h
                },
                data,
            );
        }
    }
});
