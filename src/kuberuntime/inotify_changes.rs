//! Test-only: what inotify saw change in some directories while a closure ran, so
//! tests can count rewrites that content and coarse timestamps would hide (the volume
//! writers' "rewritten on change only").

use std::path::PathBuf;

/// Every change inotify reports in `dirs` while `f` runs (created, written, attributes,
/// moved, deleted): counts rewrites even when content and timestamps would not show them.
pub fn during(dirs: &[PathBuf], f: impl FnOnce()) -> Vec<String> {
    use rustix::fs::inotify::{self, CreateFlags, Reader, WatchFlags};
    use std::mem::MaybeUninit;
    let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).unwrap();
    let mask = WatchFlags::CREATE
        | WatchFlags::MODIFY
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::ATTRIB
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE;
    for d in dirs {
        inotify::add_watch(&fd, d.as_path(), mask).unwrap();
    }
    f();
    let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
    let mut reader = Reader::new(&fd, &mut buf);
    let mut seen = Vec::new();
    loop {
        match reader.next() {
            Ok(ev) => seen.push(format!("{:?} {:?}", ev.events(), ev.file_name())),
            Err(rustix::io::Errno::AGAIN) => return seen,
            Err(e) => panic!("reading inotify events: {e}"),
        }
    }
}
