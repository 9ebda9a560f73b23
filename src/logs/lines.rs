//! Splitting a log file into lines with a bounded buffer.
//!
//! A CRI log line is short (the runtime splits long output into `P` records), but a
//! corrupt or foreign file may hold a gigantic line; reading it whole would exhaust a
//! gateway's memory. Lines longer than [`MAX_LINE`] are cut: the first `MAX_LINE` bytes
//! are returned (the record header is at the front, so it still parses) and the rest of
//! that line is skipped.

use std::io::{self, Read};

/// Longest line returned whole; longer lines are truncated to this length.
pub const MAX_LINE: usize = 1 << 20;

/// Bytes asked of the file per read.
const CHUNK: usize = 64 << 10;

/// Reads `\n`-terminated lines from `R` into a buffer of at most `MAX_LINE + CHUNK`.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Skipping the rest of a line that was cut at `MAX_LINE`.
    discarding: bool,
    /// How many lines were cut.
    pub truncated: u64,
    /// Bytes read from `inner` so far (to notice a file truncated under us).
    pub consumed: u64,
}

impl<R: Read> LineReader<R> {
    /// Reads the lines of `inner`.
    pub fn new(inner: R) -> Self {
        LineReader {
            inner,
            buf: Vec::new(),
            start: 0,
            end: 0,
            discarding: false,
            truncated: 0,
            consumed: 0,
        }
    }

    /// The next complete line including its `\n`, or `None` at end of file. Bytes of an
    /// unfinished last line stay buffered: a later call returns the line once the writer
    /// has finished it (for following a live file), or [`LineReader::rest`] returns them.
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        loop {
            let pending = self.buf.get(self.start..self.end).unwrap_or_default();
            if let Some(pos) = pending.iter().position(|&b| b == b'\n') {
                let (from, to) = (self.start, self.start + pos + 1);
                self.start = to;
                if std::mem::take(&mut self.discarding) {
                    continue;
                }
                return Ok(self.buf.get(from..to));
            }
            if self.discarding {
                (self.start, self.end) = (0, 0);
            } else if pending.len() >= MAX_LINE {
                self.discarding = true;
                self.truncated += 1;
                let from = self.start;
                self.start += MAX_LINE;
                return Ok(self.buf.get(from..from + MAX_LINE));
            }
            if self.fill()? == 0 {
                return Ok(None);
            }
        }
    }

    /// Bytes of an unfinished last line (the file did not end with `\n`).
    pub fn rest(&mut self) -> Option<&[u8]> {
        let rest = self.buf.get(self.start..self.end).filter(|r| !r.is_empty());
        if self.discarding {
            return None;
        }
        rest
    }

    /// Moves pending bytes to the front and reads more; returns the bytes read.
    fn fill(&mut self) -> io::Result<usize> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() < self.end + CHUNK {
            self.buf.resize(self.end + CHUNK, 0);
        }
        let Some(space) = self.buf.get_mut(self.end..) else {
            return Ok(0);
        };
        let n = loop {
            match self.inner.read(space) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        self.end += n;
        self.consumed += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_lines(data: &[u8]) -> (Vec<Vec<u8>>, Option<Vec<u8>>, u64) {
        let mut r = LineReader::new(data);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push(l.to_vec());
        }
        let rest = r.rest().map(<[u8]>::to_vec);
        (out, rest, r.truncated)
    }

    #[test]
    fn splits_lines_and_keeps_unfinished_rest() {
        let (lines, rest, cut) = all_lines(b"a\nbb\n\nccc");
        assert_eq!(lines, [&b"a\n"[..], b"bb\n", b"\n"]);
        assert_eq!(rest.as_deref(), Some(&b"ccc"[..]));
        assert_eq!(cut, 0);
    }

    #[test]
    fn lines_across_many_chunks() {
        let mut data = Vec::new();
        for i in 0..50_000 {
            data.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        let (lines, rest, _) = all_lines(&data);
        assert_eq!(lines.len(), 50_000);
        assert_eq!(lines.last().unwrap(), b"line 49999\n");
        assert!(rest.is_none());
    }

    #[test]
    fn huge_line_is_cut_and_the_next_line_survives() {
        let mut data = vec![b'x'; 3 * MAX_LINE + 17];
        data.extend_from_slice(b"\nnext\n");
        let (lines, rest, cut) = all_lines(&data);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), MAX_LINE);
        assert_eq!(lines[1], b"next\n");
        assert!(rest.is_none());
        assert_eq!(cut, 1);
    }

    #[test]
    fn huge_unterminated_tail_is_not_returned_as_rest() {
        let data = vec![b'y'; 2 * MAX_LINE];
        let (lines, rest, cut) = all_lines(&data);
        assert_eq!(lines.len(), 1);
        assert!(rest.is_none());
        assert_eq!(cut, 1);
    }
}
