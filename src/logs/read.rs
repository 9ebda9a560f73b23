//! Reading a container's log files as kubectl shows them: logical lines (partials
//! joined), optionally only the last N, optionally with the runtime's timestamps, only
//! those since a time, and optionally following the live file across rotations.
//!
//! [`LogStream`] does the reading step by step (a bounded piece of output per call, no
//! I/O of its own but the files), so both the CLI (blocking writes, a short sleep
//! between polls) and the agent's kubelet API (async socket writes, a timer) drive it.
//! [`read_files`] and [`follow`] are the CLI's loops around it.

use super::join::{Joined, Joiner};
use super::line::parse;
use super::lines::LineReader;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How often a followed file is checked for new data.
pub const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Output gathered per step before it is written out.
const PIECE: usize = 32 << 10;

/// What is read of a container's log.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Only the last N logical lines (of what exists when reading starts).
    pub tail: Option<usize>,
    /// Prefix each line with the runtime's RFC 3339 timestamp.
    pub timestamps: bool,
    /// Only lines stamped at or after this time (kubelet's `sinceSeconds`/`sinceTime`).
    pub since: Option<SystemTime>,
}

/// What a read saw besides the lines it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Logical lines read (written unless a tail's start or `since` dropped them).
    pub lines: u64,
    /// Lines of the files that were not CRI records (skipped).
    pub bad: u64,
    /// Lines cut at `lines::MAX_LINE`.
    pub truncated: u64,
}

/// What [`LogStream::fill`] left the stream at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The piece is full: call again.
    More,
    /// Following and caught up with the live file: wait, then call again.
    Idle,
    /// Everything is read (not following).
    End,
}

/// A log file being read: its reader plus the identity of the file it opened.
struct Open {
    reader: LineReader<File>,
    id: (u64, u64),
}

fn open(path: &Path) -> io::Result<Option<Open>> {
    match File::open(path) {
        Ok(f) => {
            let m = f.metadata()?;
            Ok(Some(Open {
                reader: LineReader::new(f),
                id: (m.dev(), m.ino()),
            }))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
}

/// Reads the logical lines of a container instance's files (oldest first, the live file
/// last), a piece at a time. With `follow`, the live file is read as it grows and across
/// rotations: when its path names a new file (renamed away and reopened by the runtime),
/// the old one is read to its end and the new one from its start; a file truncated under
/// us is read again from 0.
pub struct LogStream {
    files: Vec<PathBuf>,
    /// Index in `files` of the file in `cur`.
    at: usize,
    cur: Option<Open>,
    joiner: Joiner,
    follow: bool,
    /// Where completed lines go.
    sink: Sink,
}

/// What becomes of a completed logical line: skipped (a tail's start, before `since`),
/// written with or without its time; counted. A field of its own so that a line
/// borrowed from the reader or the joiner can be written while they are borrowed.
struct Sink {
    timestamps: bool,
    since: Option<SystemTime>,
    /// Logical lines still to drop before writing (a tail's start).
    skip: u64,
    /// What was read so far.
    stats: ReadStats,
}

impl LogStream {
    /// A stream over `files` (the last one the live file) with `opts`. A tail is found by
    /// counting the lines first (a pass over the files that keeps nothing).
    pub fn new(files: Vec<PathBuf>, opts: &ReadOptions, follow: bool) -> io::Result<LogStream> {
        let mut skip = 0;
        if let Some(n) = opts.tail {
            let mut counter = LogStream::start(files.clone(), follow)?;
            let mut scratch = Vec::new();
            while counter.fill(&mut scratch, PIECE)? == Step::More {
                scratch.clear();
            }
            skip = counter.sink.stats.lines.saturating_sub(n as u64);
        }
        let mut s = LogStream::start(files, follow)?;
        s.sink.timestamps = opts.timestamps;
        s.sink.since = opts.since;
        s.sink.skip = skip;
        Ok(s)
    }

    /// A stream over every line of `files`, the first one opened.
    fn start(files: Vec<PathBuf>, follow: bool) -> io::Result<LogStream> {
        let cur = match files.first() {
            Some(p) => open(p)?,
            None => None,
        };
        Ok(LogStream {
            files,
            at: 0,
            cur,
            joiner: Joiner::default(),
            follow,
            sink: Sink {
                timestamps: false,
                since: None,
                skip: 0,
                stats: ReadStats::default(),
            },
        })
    }

    /// Appends logical lines to `out` until it holds `want` bytes or the files have
    /// nothing more for now.
    pub fn fill(&mut self, out: &mut Vec<u8>, want: usize) -> io::Result<Step> {
        loop {
            if out.len() >= want {
                return Ok(Step::More);
            }
            if self.read_line(out)? {
                continue;
            }
            let live = self.at + 1 >= self.files.len();
            if live && self.follow {
                if self.check_replaced(out)? {
                    continue; // the new file may have lines already
                }
                return Ok(if out.is_empty() {
                    Step::Idle
                } else {
                    Step::More
                });
            }
            if let Some(mut f) = self.cur.take() {
                if !self.follow {
                    if let Some(rec) = f.reader.rest().and_then(parse) {
                        if let Some(j) = self.joiner.push(rec) {
                            self.sink.emit(j, out);
                        }
                    }
                }
                self.sink.stats.truncated += f.reader.truncated;
            }
            if live {
                return self.finish(out);
            }
            self.at += 1;
            self.cur = open(&self.files[self.at])?;
        }
    }

    /// Reads one line of the current file into `out`; false at its end.
    fn read_line(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        let Some(f) = &mut self.cur else {
            return Ok(false);
        };
        let Some(line) = f.reader.next_line()? else {
            return Ok(false);
        };
        match parse(line) {
            Some(rec) => {
                if let Some(j) = self.joiner.push(rec) {
                    self.sink.emit(j, out);
                }
            }
            None => self.sink.stats.bad += 1,
        }
        Ok(true)
    }

    /// The end of a read that does not follow: lines left unfinished go out too.
    fn finish(&mut self, out: &mut Vec<u8>) -> io::Result<Step> {
        for j in self.joiner.finish() {
            self.sink.emit(j, out);
        }
        Ok(Step::End)
    }

    /// Reopens the live file when its path now names another file or it was truncated;
    /// true when it did.
    fn check_replaced(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        let Some(path) = self.files.get(self.at).cloned() else {
            return Ok(false);
        };
        let now = match std::fs::metadata(&path) {
            Ok(m) => m,
            // Renamed away and not reopened yet: keep reading the old file.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        };
        if let Some(f) = &self.cur {
            if f.id == (now.dev(), now.ino()) && now.len() >= f.reader.consumed {
                return Ok(false);
            }
            if f.id != (now.dev(), now.ino()) {
                // The runtime has reopened: whatever it wrote to the old file is there now.
                while self.read_line(out)? {}
            }
        }
        if let Some(f) = self.cur.take() {
            self.sink.stats.truncated += f.reader.truncated;
        }
        self.cur = open(&path)?;
        Ok(self.cur.is_some())
    }
}

/// Writes one logical line unless it is skipped (before a tail's start, or older than
/// `since`).
impl Sink {
    fn emit(&mut self, j: Joined<'_>, out: &mut Vec<u8>) {
        self.stats.lines += 1;
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        if let Some(since) = self.since {
            let time = std::str::from_utf8(j.time)
                .ok()
                .and_then(|t| crate::model::time::parse_rfc3339(t).ok());
            if time.is_some_and(|t| t < since) {
                return;
            }
        }
        if self.timestamps {
            out.extend_from_slice(j.time);
            out.push(b' ');
        }
        out.extend_from_slice(j.msg);
        out.push(b'\n');
    }
}

/// Writes the logical lines of `files` (in order) to `out`. Missing files are skipped.
pub fn read_files(
    files: &[PathBuf],
    opts: &ReadOptions,
    out: &mut dyn Write,
) -> io::Result<ReadStats> {
    let mut s = LogStream::new(files.to_vec(), opts, false)?;
    let mut piece = Vec::with_capacity(PIECE);
    loop {
        let step = s.fill(&mut piece, PIECE)?;
        out.write_all(&piece)?;
        piece.clear();
        if step == Step::End {
            break;
        }
    }
    out.flush()?;
    Ok(s.sink.stats)
}

/// Like [`read_files`], then keeps reading the last file (the live `N.log`) as it grows,
/// until `stop()` returns true (checked between polls).
pub fn follow(
    files: &[PathBuf],
    opts: &ReadOptions,
    out: &mut dyn Write,
    stop: &mut dyn FnMut() -> bool,
) -> io::Result<ReadStats> {
    if files.is_empty() {
        return Ok(ReadStats::default());
    }
    let mut s = LogStream::new(files.to_vec(), opts, true)?;
    let mut piece = Vec::with_capacity(PIECE);
    loop {
        let step = s.fill(&mut piece, PIECE)?;
        out.write_all(&piece)?;
        piece.clear();
        if step == Step::Idle {
            out.flush()?;
            if stop() {
                break;
            }
            std::thread::sleep(FOLLOW_POLL);
        }
    }
    Ok(s.sink.stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tinylet-read-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn rec(i: usize) -> String {
        format!("2024-05-01T10:00:00.{i:09}Z stdout F line {i}\n")
    }

    fn read(files: &[PathBuf], opts: &ReadOptions) -> (String, ReadStats) {
        let mut out = Vec::new();
        let st = read_files(files, opts, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), st)
    }

    #[test]
    fn reads_rotated_then_live_with_tail_and_timestamps() {
        let d = tmpdir("tail");
        let a = d.join("0.log.20240501-100000");
        let b = d.join("0.log");
        std::fs::write(&a, format!("{}{}garbage line\n", rec(0), rec(1))).unwrap();
        std::fs::write(
            &b,
            format!("{}2024-05-01T10:00:00.000000003Z stderr P par\n2024-05-01T10:00:00.000000004Z stderr F tial\n", rec(2)),
        )
        .unwrap();
        let files = vec![a, d.join("missing"), b];
        let (all, st) = read(&files, &ReadOptions::default());
        assert_eq!(all, "line 0\nline 1\nline 2\npartial\n");
        assert_eq!((st.lines, st.bad), (4, 1));
        let (tail, _) = read(
            &files,
            &ReadOptions {
                tail: Some(2),
                timestamps: true,
                since: None,
            },
        );
        assert_eq!(
            tail,
            "2024-05-01T10:00:00.000000002Z line 2\n2024-05-01T10:00:00.000000003Z partial\n"
        );
        let (none, _) = read(
            &files,
            &ReadOptions {
                tail: Some(0),
                ..ReadOptions::default()
            },
        );
        assert_eq!(none, "");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn follow_survives_rename_and_reopen() {
        let d = tmpdir("follow");
        let live = d.join("0.log");
        std::fs::write(&live, rec(0)).unwrap();
        let mut out = Vec::new();
        let mut step = 0;
        let live2 = live.clone();
        let mut stop = move || {
            step += 1;
            let append = |p: &Path, s: String| {
                let mut f = OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(p)
                    .unwrap();
                f.write_all(s.as_bytes()).unwrap();
            };
            match step {
                1 => append(&live2, rec(1)),
                2 => {
                    // A rotation: rename, the old file still gets a line, then a new file.
                    let rotated = live2.with_file_name("0.log.20240501-100000");
                    std::fs::rename(&live2, &rotated).unwrap();
                    append(&rotated, rec(2));
                }
                3 => append(&live2, rec(3)),
                // Truncated in place (copytruncate style), then written again.
                4 => std::fs::write(&live2, "").unwrap(),
                5 => append(&live2, rec(4)),
                _ => return true,
            }
            false
        };
        let st = follow(
            std::slice::from_ref(&live),
            &ReadOptions::default(),
            &mut out,
            &mut stop,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "line 0\nline 1\nline 2\nline 3\nline 4\n");
        assert_eq!(st.lines, 5);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
