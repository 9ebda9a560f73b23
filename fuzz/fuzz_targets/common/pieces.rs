//! Input read in pieces, as a TCP stream or an HTTP/2 body delivers it: the targets that
//! check a reader gives the same whole and piecewise take their piece sizes from the
//! input's first bytes.
#![allow(dead_code)]

use smol::io::AsyncRead;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Splits a target's input: the first byte says how many piece sizes follow (0 to 7),
/// then the sizes, then the data.
pub fn split_sizes(input: &[u8]) -> (&[u8], &[u8]) {
    let (count, rest) = input
        .split_first()
        .map_or((0, input), |(c, r)| (*c as usize % 8, r));
    rest.split_at(count.min(rest.len()))
}

/// The size of piece `n`: `sizes[n]` + 1, cycled; `default` without sizes.
pub fn piece_size(sizes: &[u8], n: usize, default: usize) -> usize {
    sizes
        .get(n % sizes.len().max(1))
        .map_or(default, |s| usize::from(*s) + 1)
}

/// Hands out `data` in pieces of [`piece_size`], then EOF.
pub struct Pieces<'a> {
    pub data: &'a [u8],
    pub sizes: &'a [u8],
    pub default: usize,
    pub n: usize,
}

impl AsyncRead for Pieces<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let size = piece_size(self.sizes, self.n, self.default);
        self.n += 1;
        let take = size.min(buf.len()).min(self.data.len());
        buf[..take].copy_from_slice(&self.data[..take]);
        self.data = &self.data[take..];
        Poll::Ready(Ok(take))
    }
}
