//! CRI container log files as `tinylet logs` reads them: lines (`logs::lines`, bounded),
//! records (`logs::line::parse`), partial records joined (`logs::join`). Properties: no
//! panic; a parsed record is made of pieces of its line and prints back to the same
//! record; joining keeps every message byte of each stream and bounds each line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tinylet::logs::join::{Joiner, MAX_JOINED};
use tinylet::logs::line::{parse, Record, Stream};
use tinylet::logs::lines::{LineReader, MAX_LINE};

/// The record as a runtime would write it (one `\n` more: a message may end in `\n`
/// only because the line's own terminator was stripped).
fn print(r: &Record) -> Vec<u8> {
    let stream: &[u8] = match r.stream {
        Stream::Stdout => b"stdout",
        Stream::Stderr => b"stderr",
    };
    let tag: &[u8] = if r.partial { b"P" } else { b"F" };
    [r.time, b" ", stream, b" ", tag, b" ", r.msg, b"\n"].concat()
}

fn within(part: &[u8], whole: &[u8]) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    part.is_empty() || (p >= w && p + part.len() <= w + whole.len())
}

fuzz_target!(|data: &[u8]| {
    let mut reader = LineReader::new(data);
    let mut joiner = Joiner::default();
    let (mut logged, mut joined) = ([0usize; 2], [0usize; 2]);
    let mut lines = Vec::new();
    while let Ok(Some(line)) = reader.next_line() {
        assert!(line.len() <= MAX_LINE);
        lines.push(line.to_vec());
    }
    if let Some(rest) = reader.rest() {
        lines.push(rest.to_vec());
    }
    for line in &lines {
        let Some(rec) = parse(line) else {
            continue;
        };
        assert!(within(rec.time, line) && within(rec.msg, line));
        let printed = print(&rec);
        assert_eq!(parse(&printed), Some(rec), "{line:?}");
        logged[rec.stream.index()] += rec.msg.len();
        if let Some(j) = joiner.push(rec) {
            assert!(j.msg.len() <= MAX_JOINED + MAX_LINE);
            joined[j.stream.index()] += j.msg.len();
        }
    }
    for j in joiner.finish() {
        joined[j.stream.index()] += j.msg.len();
    }
    assert_eq!(logged, joined);
});
