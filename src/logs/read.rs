//! Reading a container's log files as kubectl shows them: logical lines (partials
//! joined), optionally only the last N, optionally with the runtime's timestamps, and
//! optionally following the live file across rotations.
//!
//! This runs in the CLI, not in the agent: plain blocking std I/O and a short sleep
//! between polls are fine here.

use super::join::{Joined, Joiner};
use super::line::parse;
use super::lines::LineReader;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a followed file is checked for new data.
pub const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// What `tinylet logs` reads of a container's log.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Only the last N logical lines (of what exists when reading starts).
    pub tail: Option<usize>,
    /// Prefix each line with the runtime's RFC 3339 timestamp.
    pub timestamps: bool,
}

/// What a read saw besides the lines it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Logical lines written.
    pub lines: u64,
    /// Lines of the files that were not CRI records (skipped).
    pub bad: u64,
    /// Lines cut at `lines::MAX_LINE`.
    pub truncated: u64,
}

/// Formats logical lines into `out`, or into a ring of the last N while tailing.
struct Sink<'w> {
    out: &'w mut dyn Write,
    timestamps: bool,
    tail: Option<(usize, VecDeque<Vec<u8>>)>,
    stats: ReadStats,
}

impl Sink<'_> {
    fn emit(&mut self, j: Joined<'_>) -> io::Result<()> {
        self.stats.lines += 1;
        match &mut self.tail {
            None => write_line(self.out, j, self.timestamps),
            Some((0, _)) => Ok(()),
            Some((n, ring)) => {
                let mut buf = if ring.len() >= *n {
                    ring.pop_front().unwrap_or_default()
                } else {
                    Vec::new()
                };
                buf.clear();
                write_line(&mut buf, j, self.timestamps)?;
                ring.push_back(buf);
                Ok(())
            }
        }
    }

    /// Ends tailing: writes the kept lines; later lines go straight out.
    fn end_tail(&mut self) -> io::Result<()> {
        if let Some((_, ring)) = self.tail.take() {
            for l in ring {
                self.out.write_all(&l)?;
            }
        }
        self.out.flush()
    }
}

fn write_line(out: &mut dyn Write, j: Joined<'_>, timestamps: bool) -> io::Result<()> {
    if timestamps {
        out.write_all(j.time)?;
        out.write_all(b" ")?;
    }
    out.write_all(j.msg)?;
    out.write_all(b"\n")
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

/// Feeds every complete line of `r` through the joiner into the sink.
fn drain(r: &mut LineReader<File>, joiner: &mut Joiner, sink: &mut Sink<'_>) -> io::Result<bool> {
    let mut any = false;
    while let Some(line) = r.next_line()? {
        any = true;
        match parse(line) {
            Some(rec) => {
                if let Some(j) = joiner.push(rec) {
                    sink.emit(j)?;
                }
            }
            None => sink.stats.bad += 1,
        }
    }
    Ok(any)
}

/// Also feeds an unfinished last line (at the end of a read that does not follow).
fn drain_rest(
    r: &mut LineReader<File>,
    joiner: &mut Joiner,
    sink: &mut Sink<'_>,
) -> io::Result<()> {
    if let Some(rec) = r.rest().and_then(parse) {
        if let Some(j) = joiner.push(rec) {
            sink.emit(j)?;
        }
    }
    Ok(())
}

/// Writes the logical lines of `files` (in order) to `out`. Missing files are skipped.
pub fn read_files(
    files: &[PathBuf],
    opts: &ReadOptions,
    out: &mut dyn Write,
) -> io::Result<ReadStats> {
    let mut sink = Sink {
        out,
        timestamps: opts.timestamps,
        tail: opts.tail.map(|n| (n, VecDeque::new())),
        stats: ReadStats::default(),
    };
    let mut joiner = Joiner::default();
    for path in files {
        if let Some(mut f) = open(path)? {
            drain(&mut f.reader, &mut joiner, &mut sink)?;
            drain_rest(&mut f.reader, &mut joiner, &mut sink)?;
            sink.stats.truncated += f.reader.truncated;
        }
    }
    let pending: Vec<(Vec<u8>, _, Vec<u8>)> = joiner
        .finish()
        .map(|j| (j.time.to_vec(), j.stream, j.msg.to_vec()))
        .collect();
    for (time, stream, msg) in &pending {
        sink.emit(Joined {
            time,
            stream: *stream,
            msg,
        })?;
    }
    sink.end_tail()?;
    Ok(sink.stats)
}

/// Like [`read_files`], then keeps reading the last file (the live `N.log`) as it grows,
/// until `stop()` returns true (checked between polls). Survives rotation: when the path
/// names a new file (renamed away and reopened by the runtime), the old one is read to its
/// end and the new one from its start; a file truncated under us is read again from 0.
pub fn follow(
    files: &[PathBuf],
    opts: &ReadOptions,
    out: &mut dyn Write,
    stop: &mut dyn FnMut() -> bool,
) -> io::Result<ReadStats> {
    let Some((live, older)) = files.split_last() else {
        return Ok(ReadStats::default());
    };
    let mut sink = Sink {
        out,
        timestamps: opts.timestamps,
        tail: opts.tail.map(|n| (n, VecDeque::new())),
        stats: ReadStats::default(),
    };
    let mut joiner = Joiner::default();
    for path in older {
        if let Some(mut f) = open(path)? {
            drain(&mut f.reader, &mut joiner, &mut sink)?;
            sink.stats.truncated += f.reader.truncated;
        }
    }
    let mut cur = open(live)?;
    if let Some(f) = &mut cur {
        drain(&mut f.reader, &mut joiner, &mut sink)?;
    }
    sink.end_tail()?;
    loop {
        let got = match &mut cur {
            Some(f) => drain(&mut f.reader, &mut joiner, &mut sink)?,
            None => false,
        };
        if got {
            sink.out.flush()?;
            continue;
        }
        if stop() {
            break;
        }
        std::thread::sleep(FOLLOW_POLL);
        cur = check_replaced(live, cur, &mut joiner, &mut sink)?;
    }
    if let Some(f) = &cur {
        sink.stats.truncated += f.reader.truncated;
    }
    Ok(sink.stats)
}

/// Reopens `path` when it now names another file or was truncated; otherwise keeps `cur`.
fn check_replaced(
    path: &Path,
    cur: Option<Open>,
    joiner: &mut Joiner,
    sink: &mut Sink<'_>,
) -> io::Result<Option<Open>> {
    let now = match std::fs::metadata(path) {
        Ok(m) => m,
        // Renamed away and not reopened yet: keep reading the old file.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(cur),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    };
    let Some(mut f) = cur else {
        return open(path);
    };
    let same = f.id == (now.dev(), now.ino());
    if same && now.len() >= f.reader.consumed {
        return Ok(Some(f));
    }
    if !same {
        // The runtime has reopened: whatever it wrote to the old file is there now.
        drain(&mut f.reader, joiner, sink)?;
    }
    sink.stats.truncated += f.reader.truncated;
    open(path)
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
                timestamps: false,
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
