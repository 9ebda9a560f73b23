//! One line of a CRI container log file.
//!
//! The CRI log format (written by containerd and CRI-O, read by kubelet) is one record per
//! line: `<RFC3339Nano time> <stdout|stderr> <P|F> <message>\n`. `P` marks a partial
//! record: the runtime split a long line (containerd at 16 KiB) and the message continues
//! in the next record of the same stream; `F` ends a logical line. The message is raw
//! bytes, not necessarily UTF-8, so everything here works on `&[u8]`.

/// Which output of the container a record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// The container's standard output.
    Stdout,
    /// The container's standard error.
    Stderr,
}

impl Stream {
    /// Index for per-stream arrays.
    pub fn index(self) -> usize {
        match self {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
        }
    }
}

/// One parsed record, borrowing from the line it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The runtime's timestamp, as written (RFC 3339 with nanoseconds).
    pub time: &'a [u8],
    /// Which stream.
    pub stream: Stream,
    /// `true` for a `P` record: the message continues in the next record of the stream.
    pub partial: bool,
    /// The message, without the line's terminating `\n` (a `\r` the container wrote is
    /// kept: it is part of the output).
    pub msg: &'a [u8],
}

/// Parses one line (with or without its trailing `\n`). Returns `None` for a line that is
/// not a CRI record; callers skip such lines.
pub fn parse(line: &[u8]) -> Option<Record<'_>> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let (time, rest) = split_field(line)?;
    if !looks_like_time(time) {
        return None;
    }
    let (stream, rest) = split_field(rest)?;
    let stream = match stream {
        b"stdout" => Stream::Stdout,
        b"stderr" => Stream::Stderr,
        _ => return None,
    };
    // The tag may be the last field (empty message), possibly followed by a stray `\r`
    // when the file itself has CRLF line ends.
    let (tag, msg) = match split_field(rest) {
        Some((tag, msg)) => (tag, msg),
        None => (rest.strip_suffix(b"\r").unwrap_or(rest), &b""[..]),
    };
    // Newer runtimes may append `:`-separated tags after P/F; only the first matters.
    let partial = match tag.split(|&b| b == b':').next() {
        Some(b"P") => true,
        Some(b"F") => false,
        _ => return None,
    };
    Some(Record {
        time,
        stream,
        partial,
        msg,
    })
}

/// Splits at the first space: `(before, after)`; `None` when there is no space.
fn split_field(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|&b| b == b' ')?;
    Some((s.get(..i)?, s.get(i + 1..)?))
}

/// A cheap shape check of an RFC 3339 time (`2006-01-02T15:04:05...`): enough to reject
/// lines that are not records without parsing the whole timestamp.
fn looks_like_time(t: &[u8]) -> bool {
    t.len() >= 20
        && t.get(..4).is_some_and(|y| y.iter().all(u8::is_ascii_digit))
        && t.get(4) == Some(&b'-')
        && t.get(10) == Some(&b'T')
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &[u8] = b"2024-05-01T10:00:00.123456789Z";

    #[test]
    fn full_and_partial_records() {
        let r = parse(b"2024-05-01T10:00:00.123456789Z stdout F hello world\n").unwrap();
        assert_eq!(
            r,
            Record {
                time: T,
                stream: Stream::Stdout,
                partial: false,
                msg: b"hello world"
            }
        );
        let r = parse(b"2024-05-01T10:00:00.123456789Z stderr P part").unwrap();
        assert_eq!(
            (r.stream, r.partial, r.msg),
            (Stream::Stderr, true, &b"part"[..])
        );
    }

    #[test]
    fn empty_message_with_or_without_space() {
        for line in [
            &b"2024-05-01T10:00:00Z000000 stdout F \n"[..],
            b"2024-05-01T10:00:00Z000000 stdout F\n",
            b"2024-05-01T10:00:00Z000000 stdout F\r\n",
        ] {
            let r = parse(line).unwrap();
            assert_eq!(r.msg, b"", "{:?}", String::from_utf8_lossy(line));
            assert!(!r.partial);
        }
    }

    #[test]
    fn carriage_return_written_by_the_container_is_kept() {
        let r = parse(b"2024-05-01T10:00:00.1+02:00 stdout F dos line\r\n").unwrap();
        assert_eq!(r.msg, b"dos line\r");
    }

    #[test]
    fn extra_tags_after_p_or_f_are_accepted() {
        let r = parse(b"2024-05-01T10:00:00.123456789Z stdout P:x y").unwrap();
        assert!(r.partial);
        assert_eq!(r.msg, b"y");
    }

    #[test]
    fn bad_lines_are_refused_without_panic() {
        for line in [
            &b""[..],
            b"\n",
            b"garbage",
            b"2024-05-01T10:00:00.123456789Z",
            b"2024-05-01T10:00:00.123456789Z stdout",
            b"2024-05-01T10:00:00.123456789Z stdin F x",
            b"2024-05-01T10:00:00.123456789Z stdout X x",
            b"not-a-time-at-all-xx stdout F x",
            b"\xff\xfe\x00 stdout F x",
            b" stdout F x",
        ] {
            assert!(parse(line).is_none(), "{:?}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn non_utf8_message_is_kept_as_bytes() {
        let r = parse(b"2024-05-01T10:00:00.123456789Z stdout F \xff\xfe").unwrap();
        assert_eq!(r.msg, b"\xff\xfe");
    }
}
