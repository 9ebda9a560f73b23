//! Giving back the pages of the agent's own binary that it no longer runs.
//!
//! Every page of code the agent ever ran stays mapped into it: the start (config,
//! TLS handshake, registration, the first sync of every pod), an `apply`, a CSR, a
//! `kubectl logs`. A fault maps 64 KiB around the page touched (fault-around; and the
//! binary's page cache is made of 64-KiB folios, mapped whole, on 6.x kernels), so after
//! a start nearly the whole binary is resident (2.7 of the x86_64 build's 2.9 MB) while
//! the steady state runs a third of it. Mapped executable pages are also
//! the last the kernel reclaims under pressure (they get an extra turn on the active
//! list), so on a 64 MB board those cold pages cost as much as the heap.
//!
//! [`trim`] drops this process's mappings of the binary's pages (`MADV_DONTNEED`): they
//! stay in the page cache (nothing is read again from flash while memory allows), and a
//! page the agent runs again is mapped back by a minor fault. The release builds lay
//! the steady state's functions out together (cross/order/), so what comes back after
//! a trim is a few 64-KiB windows, not the whole binary.
//!
//! Only mappings that cannot hold a page of ours are dropped: this executable's file,
//! private, not writable, and without one anonymous (copied-on-write) page. RELRO, which
//! the static binary's start-up code wrote before making it read-only, has such pages
//! and is never touched; neither is anything writable or any other file.
#![allow(unsafe_code)]

use std::io;
use std::time::Duration;

/// The first trim after the agent starts: the start's pods are usually synced by then
/// (a later one gives back what a slower start ran).
pub const FIRST_TRIM: Duration = Duration::from_secs(30);

/// The trims after it: code run by a rare event (an apply, a `kubectl logs`, a pod's
/// restart) is given back within this long. Each costs ~0.5 ms (a read of
/// `/proc/self/smaps`, the `madvise`) and the steady state's minor faults afterwards:
/// nothing measurable at one a minute.
pub const TRIM_PERIOD: Duration = Duration::from_secs(60);

/// `/proc/self/smaps` is read whole; the agent has a few dozen mappings (~20 KB).
const SMAPS_LIMIT: usize = 1 << 20;

/// One mapping of `/proc/self/smaps` with what decides whether it may be dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Its first address.
    pub start: usize,
    /// One past its last address.
    pub end: usize,
    /// `rwxp` as the kernel writes it.
    pub perms: String,
    /// The mapped file's device (`MAJ:MIN`).
    pub dev: String,
    /// The mapped file's inode; 0 for anonymous memory.
    pub inode: u64,
    /// Its resident pages, KiB.
    pub rss_kib: u64,
    /// Its private copied-on-write (or anonymous) pages, KiB.
    pub anonymous_kib: u64,
}

/// What one [`trim`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Trimmed {
    /// Mappings dropped.
    pub mappings: usize,
    /// Their resident pages before the drop, KiB.
    pub kib: u64,
}

/// Drops this process's mappings of its own binary's read-only pages (see the module
/// docs). Fails only when `/proc/self/smaps` cannot be read or the binary's mapping is
/// not found in it; a refused `madvise` is logged and the other mappings still dropped.
pub fn trim() -> io::Result<Trimmed> {
    let text =
        crate::bounded::read_to_string(std::path::Path::new("/proc/self/smaps"), SMAPS_LIMIT)?;
    let maps = parse_smaps(&text);
    // Our binary is the file mapped where this function's code is.
    let here = trim as fn() -> io::Result<Trimmed> as usize;
    let own = maps
        .iter()
        .find(|m| m.start <= here && here < m.end)
        .filter(|m| m.inode != 0)
        .ok_or_else(|| io::Error::other("the binary's own mapping is not in /proc/self/smaps"))?;
    let mut done = Trimmed::default();
    for m in droppable(&maps, &own.dev, own.inode) {
        // SAFETY: `m` maps this executable's file privately and is not writable, and
        // smaps counted no anonymous page in it: every page in it is the file's, so
        // dropping them loses nothing; the next access maps the same bytes again from
        // the page cache (or the file). The range is whole pages of one mapping, as
        // the kernel listed it a moment ago on this thread; code that runs meanwhile
        // (this function included) just faults its pages back.
        let dropped = unsafe {
            rustix::mm::madvise(
                m.start as *mut std::ffi::c_void,
                m.end - m.start,
                rustix::mm::Advice::LinuxDontNeed,
            )
        };
        match dropped {
            Ok(()) => {
                done.mappings += 1;
                done.kib += m.rss_kib;
            }
            Err(e) => log::warn!("giving back code pages {:#x}-{:#x}: {e}", m.start, m.end),
        }
    }
    Ok(done)
}

/// The mappings of file `dev`/`inode` that hold only the file's own bytes: private,
/// not writable, no anonymous page.
pub fn droppable<'a>(
    maps: &'a [Mapping],
    dev: &'a str,
    inode: u64,
) -> impl Iterator<Item = &'a Mapping> {
    maps.iter().filter(move |m| {
        m.inode == inode
            && m.dev == dev
            && m.perms.len() == 4
            && !m.perms.contains('w')
            && m.perms.ends_with('p')
            && m.anonymous_kib == 0
            && m.rss_kib > 0
    })
}

/// Reads the mappings of a `/proc/PID/smaps` text. A line that is neither a mapping's
/// header nor a `Key: N kB` field is skipped.
pub fn parse_smaps(text: &str) -> Vec<Mapping> {
    let mut maps: Vec<Mapping> = Vec::new();
    for line in text.lines() {
        if let Some(m) = parse_header(line) {
            maps.push(m);
        } else if let (Some(m), Some((key, kib))) = (maps.last_mut(), parse_field(line)) {
            match key {
                "Rss" => m.rss_kib = kib,
                "Anonymous" => m.anonymous_kib = kib,
                _ => {}
            }
        }
    }
    maps
}

/// `START-END PERMS OFFSET DEV INODE [PATH]`.
fn parse_header(line: &str) -> Option<Mapping> {
    let mut words = line.split_ascii_whitespace();
    let (start, end) = words.next()?.split_once('-')?;
    let perms = words.next()?;
    let _offset = words.next()?;
    let dev = words.next()?;
    let inode = words.next()?.parse().ok()?;
    if !dev.contains(':') || perms.len() != 4 {
        return None;
    }
    Some(Mapping {
        start: usize::from_str_radix(start, 16).ok()?,
        end: usize::from_str_radix(end, 16).ok()?,
        perms: perms.to_string(),
        dev: dev.to_string(),
        inode,
        rss_kib: 0,
        anonymous_kib: 0,
    })
}

/// `Key:   N kB`.
fn parse_field(line: &str) -> Option<(&str, u64)> {
    let (key, rest) = line.split_once(':')?;
    let n = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some((key, n))
}

/// Trims once [`FIRST_TRIM`] after it is started, then every [`TRIM_PERIOD`], for as
/// long as the agent runs (a task on the executor; a timer, no polling).
pub async fn trim_periodically() {
    let mut wait = FIRST_TRIM;
    loop {
        smol::Timer::after(wait).await;
        wait = TRIM_PERIOD;
        let started = std::time::Instant::now();
        match trim() {
            Ok(t) => {
                crate::metrics::code_pages_trimmed(t.kib);
                log::debug!(
                    "gave back {} KiB of code pages ({} mappings) in {:?}",
                    t.kib,
                    t.mappings,
                    started.elapsed()
                )
            }
            Err(e) => log::warn!("giving back code pages: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
00400000-00401000 r--p 00000000 fe:01 1234   /usr/bin/tinylet
Size:                  4 kB
Rss:                   4 kB
Anonymous:             0 kB
00401000-00600000 r-xp 00001000 fe:01 1234   /usr/bin/tinylet
Rss:                1800 kB
Anonymous:             0 kB
00600000-00640000 r--p 00200000 fe:01 1234   /usr/bin/tinylet
Rss:                 256 kB
Anonymous:            12 kB
00640000-00650000 rw-p 00240000 fe:01 1234   /usr/bin/tinylet
Rss:                  64 kB
Anonymous:            64 kB
00650000-00660000 r-xp 00000000 fe:01 999    /lib/other.so
Rss:                  64 kB
Anonymous:             0 kB
7f000000-7f021000 rw-p 00000000 00:00 0      [heap]
Rss:                 132 kB
Anonymous:           132 kB
VmFlags: rd wr mr mw me ac
";

    #[test]
    fn smaps_is_read_mapping_by_mapping() {
        let maps = parse_smaps(SMAPS);
        assert_eq!(maps.len(), 6);
        assert_eq!(maps[1].start, 0x401000);
        assert_eq!(maps[1].end, 0x600000);
        assert_eq!(maps[1].perms, "r-xp");
        assert_eq!((maps[1].dev.as_str(), maps[1].inode), ("fe:01", 1234));
        assert_eq!((maps[1].rss_kib, maps[1].anonymous_kib), (1800, 0));
        assert_eq!(maps[2].anonymous_kib, 12);
        assert_eq!(maps[5].inode, 0);
    }

    #[test]
    fn only_the_binarys_unwritten_read_only_pages_are_dropped() {
        let maps = parse_smaps(SMAPS);
        let starts: Vec<usize> = droppable(&maps, "fe:01", 1234).map(|m| m.start).collect();
        // Not RELRO (written before it became read-only), not the data, not another
        // file, not the heap.
        assert_eq!(starts, vec![0x400000, 0x401000]);
        // Another device with the same inode is another file.
        assert_eq!(droppable(&maps, "fe:02", 1234).count(), 0);
    }

    #[test]
    fn garbage_lines_are_skipped() {
        let maps = parse_smaps("nonsense\nRss: 5 kB\nzz-yy r-xp 0 fe:01 1\nxx r-xp\n");
        assert!(maps.is_empty());
    }

    /// The resident KiB of this test binary's droppable mappings, now.
    fn droppable_kib() -> u64 {
        let text = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let maps = parse_smaps(&text);
        let here = droppable_kib as fn() -> u64 as usize;
        let own = maps
            .iter()
            .find(|m| m.start <= here && here < m.end)
            .unwrap();
        droppable(&maps, &own.dev, own.inode)
            .map(|m| m.rss_kib)
            .sum()
    }

    /// On the real process: a trim drops most of the test binary's resident code, the
    /// code still runs (what runs faults back in), and the data is intact. (Passes under
    /// qemu-user too, the ARM unit tests: qemu renders smaps and passes madvise on.)
    #[test]
    fn a_trim_gives_back_code_and_the_process_runs_on() {
        let data = vec![7u8; 4096];
        let was = droppable_kib();
        let done = trim().expect("trim");
        let now = droppable_kib();
        assert!(done.mappings >= 1, "{done:?}");
        assert!(done.kib > 0, "{done:?}");
        // What the trim and this test ran since is back; not the rest.
        assert!(
            now < was,
            "resident code {was} KiB before the trim, {now} KiB after"
        );
        assert_eq!(data.iter().map(|&b| b as usize).sum::<usize>(), 7 * 4096);
        assert!(trim().expect("second trim").mappings >= 1);
    }
}
