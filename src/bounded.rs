//! Reading a file whose content someone else controls (a user, a pod, the firmware) with
//! a limit on its size: at most `limit + 1` bytes are ever read, so a 300 MB file costs
//! the agent no more memory than one at the limit, and a file over the limit is refused
//! without reading the rest.
//!
//! `std::fs::read` reads to the end and sizes its buffer from the file's length first:
//! on a 128 MB board one oversized manifest is an OOM kill, and the same again after
//! every restart. Here the buffer grows only with bytes actually read.
//!
//! A file whose size is over the limit is refused before any read; the size is never
//! used to size a buffer (procfs files say 0, a file may grow meanwhile).
//!
//! Only regular files are read. A FIFO or a device is refused without blocking (the
//! file is opened non-blocking and checked before any read): a FIFO dropped where a
//! manifest belongs would otherwise stall the agent's only thread in `read`.
//!
//! Errors say what is wrong but not which file: callers name it, as they do for every
//! other I/O error. [`is_refused`] tells a refusal (too large, not a regular file) from
//! an I/O failure, so a reader can treat the file as bad input rather than retry.

use rustix::fs::OFlags;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Reads all of `path` if it holds at most `limit` bytes. Larger files fail with
/// `ErrorKind::FileTooLarge`, non-regular files with `ErrorKind::InvalidInput`.
pub fn read(path: &Path, limit: usize) -> io::Result<Vec<u8>> {
    let (f, meta) = open_regular(path)?;
    // The size only decides a refusal, never an allocation: it may be wrong (procfs
    // says 0) or change while we read, so the read itself is bounded too.
    if meta.len() > limit as u64 {
        return Err(too_large(limit));
    }
    read_open(f, limit)
}

/// Opens `path` for reading without blocking, if it is a regular file (else
/// `ErrorKind::InvalidInput`, naming what it is); its metadata is the opened file's, so
/// a caller checking it (e.g. its mode) checks the file it will read.
pub fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file (a {})", kind_name(meta.file_type())),
        ));
    }
    Ok((f, meta))
}

/// Reads an opened file to its end, at most `limit` bytes; more fails with
/// `ErrorKind::FileTooLarge` once `limit + 1` bytes were read.
pub fn read_open(f: File, limit: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    f.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

fn too_large(limit: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("larger than the limit of {limit} bytes; not read"),
    )
}

/// [`read`], with `Ok(None)` when `path` does not exist.
pub fn read_optional(path: &Path, limit: usize) -> io::Result<Option<Vec<u8>>> {
    match read(path, limit) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`read`] of a UTF-8 text file.
pub fn read_to_string(path: &Path, limit: usize) -> io::Result<String> {
    String::from_utf8(read(path, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Whether `e` is [`read`] refusing the file (too large, not a regular file) rather
/// than an I/O failure: the file is bad input, and reading it again will not help.
pub fn is_refused(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::FileTooLarge | io::ErrorKind::InvalidInput
    )
}

fn kind_name(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "device"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tinylet-bounded-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn reads_up_to_the_limit_and_refuses_more() {
        let d = scratch("limit");
        let f = d.join("f");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read(&f, 5).unwrap(), b"12345");
        assert_eq!(read(&f, 100).unwrap(), b"12345");
        let e = read(&f, 4).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(is_refused(&e));
        assert_eq!(e.to_string(), "larger than the limit of 4 bytes; not read");
        assert_eq!(read_optional(&d.join("none"), 4).unwrap(), None);
        assert!(!is_refused(&read(&d.join("none"), 4).unwrap_err()));
        assert_eq!(read_to_string(&f, 5).unwrap(), "12345");
        std::fs::write(&f, b"\xff").unwrap();
        assert!(read_to_string(&f, 5).is_err());
        // A file whose size says 0 (procfs) is still read no further than the limit.
        let maps = Path::new("/proc/self/maps");
        assert_eq!(std::fs::metadata(maps).unwrap().len(), 0);
        assert_eq!(
            read(maps, 16).unwrap_err().kind(),
            io::ErrorKind::FileTooLarge
        );
        assert!(!read(maps, 1 << 20).unwrap().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_huge_sparse_file_costs_only_the_limit() {
        let d = scratch("huge");
        let f = d.join("huge");
        // 1 TiB of holes: reading it whole would never end; here it is 1 KiB and a byte.
        std::fs::File::create(&f).unwrap().set_len(1 << 40).unwrap();
        let start = std::time::Instant::now();
        let e = read(&f, 1024).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(start.elapsed() < crate::test_time_limit(std::time::Duration::from_secs(1)));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn fifos_and_directories_are_refused_without_blocking() {
        let d = scratch("special");
        let fifo = d.join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from(0o600)).unwrap();
        let e = read(&fifo, 10).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file (a FIFO)");
        assert!(is_refused(&e));
        let e = read(&d, 10).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file (a directory)");
        assert!(is_refused(&e));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
