//! Joining partial (`P`) records into logical lines, per stream.
//!
//! The runtime splits a long line into `P` records followed by one `F` record. Records of
//! stdout and stderr may interleave, so each stream has its own pending buffer. A logical
//! line carries the time of its first record, as kubectl shows it. The pending buffer is
//! bounded: past [`MAX_JOINED`] bytes the pending part is emitted as a line of its own.

use super::line::{Record, Stream};

/// Longest logical line assembled from partial records.
pub const MAX_JOINED: usize = 1 << 20;

/// A logical line: borrowed from the record or from the joiner's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Joined<'a> {
    /// The line's timestamp.
    pub time: &'a [u8],
    /// Its stream.
    pub stream: Stream,
    /// Its message, without the newline.
    pub msg: &'a [u8],
}

#[derive(Default)]
struct Pending {
    time: Vec<u8>,
    msg: Vec<u8>,
    /// The buffer was handed out by the last `push`; clear it before reuse.
    emitted: bool,
}

/// Joins records into logical lines.
#[derive(Default)]
pub struct Joiner {
    pending: [Pending; 2],
}

impl Joiner {
    /// Adds a record; returns the logical line it completes, if any.
    pub fn push<'a>(&'a mut self, rec: Record<'a>) -> Option<Joined<'a>> {
        let p = self.pending.get_mut(rec.stream.index())?;
        if std::mem::take(&mut p.emitted) {
            p.time.clear();
            p.msg.clear();
        }
        if !rec.partial && p.msg.is_empty() && p.time.is_empty() {
            return Some(Joined {
                time: rec.time,
                stream: rec.stream,
                msg: rec.msg,
            });
        }
        if p.time.is_empty() {
            p.time.extend_from_slice(rec.time);
        }
        p.msg.extend_from_slice(rec.msg);
        if rec.partial && p.msg.len() < MAX_JOINED {
            return None;
        }
        p.emitted = true;
        Some(Joined {
            time: &p.time,
            stream: rec.stream,
            msg: &p.msg,
        })
    }

    /// Logical lines left unfinished (the container's last output had no newline),
    /// oldest stream first; emitted at the end of a non-follow read.
    pub fn finish(&mut self) -> impl Iterator<Item = Joined<'_>> {
        [Stream::Stdout, Stream::Stderr]
            .into_iter()
            .zip(self.pending.iter_mut())
            .filter_map(|(stream, p)| {
                let keep = !std::mem::take(&mut p.emitted) && !p.time.is_empty();
                if !keep {
                    p.time.clear();
                    p.msg.clear();
                    return None;
                }
                p.emitted = true;
                Some(Joined {
                    time: &p.time,
                    stream,
                    msg: &p.msg,
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::line::parse;

    fn feed(j: &mut Joiner, lines: &[&[u8]]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for l in lines {
            if let Some(x) = parse(l).and_then(|r| j.push(r)) {
                out.push((
                    String::from_utf8_lossy(x.time).into_owned(),
                    String::from_utf8_lossy(x.msg).into_owned(),
                ));
            }
        }
        out
    }

    #[test]
    fn partials_join_until_full_with_first_time() {
        let mut j = Joiner::default();
        let out = feed(
            &mut j,
            &[
                b"2024-05-01T10:00:01.000000000Z stdout P abc",
                b"2024-05-01T10:00:02.000000000Z stdout P def",
                b"2024-05-01T10:00:03.000000000Z stdout F ghi",
                b"2024-05-01T10:00:04.000000000Z stdout F next",
            ],
        );
        assert_eq!(
            out,
            [
                ("2024-05-01T10:00:01.000000000Z".into(), "abcdefghi".into()),
                ("2024-05-01T10:00:04.000000000Z".into(), "next".into())
            ]
        );
    }

    #[test]
    fn streams_join_separately() {
        let mut j = Joiner::default();
        let out = feed(
            &mut j,
            &[
                b"2024-05-01T10:00:01.000000000Z stdout P out-",
                b"2024-05-01T10:00:02.000000000Z stderr F err",
                b"2024-05-01T10:00:03.000000000Z stdout F end",
            ],
        );
        let msgs: Vec<_> = out.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(msgs, ["err", "out-end"]);
    }

    #[test]
    fn unfinished_partial_is_flushed_at_the_end() {
        let mut j = Joiner::default();
        let out = feed(&mut j, &[b"2024-05-01T10:00:01.000000000Z stderr P tail"]);
        assert!(out.is_empty());
        let rest: Vec<_> = j.finish().map(|x| x.msg.to_vec()).collect();
        assert_eq!(rest, [b"tail".to_vec()]);
        assert_eq!(j.finish().count(), 0);
    }

    #[test]
    fn endless_partials_are_bounded() {
        let mut j = Joiner::default();
        let chunk = vec![b'z'; 16 << 10];
        let mut line = b"2024-05-01T10:00:01.000000000Z stdout P ".to_vec();
        line.extend_from_slice(&chunk);
        let mut emitted = 0;
        for _ in 0..200 {
            if let Some(x) = j.push(parse(&line).unwrap()) {
                assert!(x.msg.len() >= MAX_JOINED && x.msg.len() < MAX_JOINED + chunk.len());
                emitted += 1;
            }
        }
        assert_eq!(emitted, 200 * chunk.len() / MAX_JOINED);
    }
}
