//! The httpGet probe client's response parser (`agent::http_get`). Properties: no
//! panic; a code is three digits; once a prefix of the response yields a code, the
//! whole response yields the same one; reading the response in pieces (sizes from the
//! input) gives what parsing it whole gives, within the client's size bound.
#![no_main]

#[path = "common/pieces.rs"]
mod pieces;

use libfuzzer_sys::fuzz_target;
use pieces::{split_sizes, Pieces};
use tinylet::agent::http_get::{parse_status, read_status};

fuzz_target!(|input: &[u8]| {
    let (sizes, data) = split_sizes(input);
    let whole = parse_status(data);
    if let Ok(Some(code)) = whole {
        // Three digits; 0xx is read as kubelet's Go client reads it (a failure).
        assert!(code <= 999, "{code}");
    }
    // A code is only ever complete at the end of a line.
    let line_ends = data.iter().enumerate().filter(|(_, &b)| b == b'\n');
    for cut in line_ends.map(|(i, _)| i + 1) {
        if let Ok(Some(code)) = parse_status(&data[..cut]) {
            assert_eq!(whole, Ok(Some(code)), "prefix of {cut} bytes");
            break;
        }
    }
    let mut r = Pieces {
        data,
        sizes,
        default: 65,
        n: 0,
    };
    if let Ok(code) = smol::block_on(read_status(&mut r)) {
        assert_eq!(whole, Ok(Some(code)));
    }
});
