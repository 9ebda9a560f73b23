//! The httpGet probe client's response parser (`agent::http_get`). Properties: no
//! panic; a code is three digits; once a prefix of the response yields a code, the
//! whole response yields the same one; reading the response in pieces (sizes from the
//! input) gives what parsing it whole gives, within the client's size bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smol::io::AsyncRead;
use std::pin::Pin;
use std::task::{Context, Poll};
use tinylet::agent::http_get::{parse_status, read_status};

/// Hands out `data` in pieces of the given sizes (cycled), as a TCP stream might.
struct Pieces<'a> {
    data: &'a [u8],
    sizes: &'a [u8],
    n: usize,
}

impl AsyncRead for Pieces<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let size = self
            .sizes
            .get(self.n % self.sizes.len().max(1))
            .copied()
            .unwrap_or(64);
        self.n += 1;
        let take = (usize::from(size) + 1).min(buf.len()).min(self.data.len());
        buf[..take].copy_from_slice(&self.data[..take]);
        self.data = &self.data[take..];
        Poll::Ready(Ok(take))
    }
}

fuzz_target!(|input: &[u8]| {
    // First byte: how many piece sizes follow; then the sizes; then the response.
    let (count, rest) = input
        .split_first()
        .map_or((0, input), |(c, r)| (*c as usize % 8, r));
    let (sizes, data) = rest.split_at(count.min(rest.len()));
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
    let mut r = Pieces { data, sizes, n: 0 };
    if let Ok(code) = smol::block_on(read_status(&mut r)) {
        assert_eq!(whole, Ok(Some(code)));
    }
});
