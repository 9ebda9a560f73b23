//! `tinylet get pods -w`: the table, then a row for each pod whose row changed, as
//! kubectl's watch prints them, until the process is stopped or its reader goes away.
//!
//! Changes come from the store's inotify watch (desired pods, the cluster's, the status
//! files the agent writes, firmware directories): between changes the process sleeps
//! in the kernel and costs no CPU. Only where inotify is missing does it look every
//! [`FALLBACK_PERIOD`]. A row counts as changed when it differs as of the watch's start
//! (ages moving on are no change).

use super::table::Table;
use super::CliError;
use crate::store::Store;
use async_io::Async;
use rustix::fd::OwnedFd;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, SystemTime};

/// Without inotify, how often the store is read again.
const FALLBACK_PERIOD: Duration = Duration::from_secs(2);

/// Prints `table(store, now)` and then its changed rows after every change of the store;
/// a row is known by its first `key_cells` cells (NAME, or NAMESPACE and NAME). `empty`
/// is said on stderr when there is nothing to show at first.
pub fn pods(
    store: &mut Store,
    key_cells: usize,
    empty: String,
    table: impl Fn(&mut Store, SystemTime) -> Result<Table, CliError>,
) -> Result<(), CliError> {
    // The watch exists before the first read: no change in between is missed.
    store.changes();
    let watch = registered(store);
    let start = SystemTime::now();
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut first = true;
    loop {
        if !first && !changed(store, watch.as_ref()) {
            continue;
        }
        let shown = table(store, SystemTime::now())?;
        let key = |row: &[String]| row.get(..key_cells).unwrap_or_default().join("/");
        let stable: BTreeMap<String, Vec<String>> = table(store, start)?
            .rows()
            .iter()
            .map(|r| (key(r), r.clone()))
            .collect();
        let rendered = shown.render();
        let mut out = String::new();
        for (row, line) in shown.rows().iter().zip(rendered.lines().skip(1)) {
            let k = key(row);
            let sig = stable.get(&k).unwrap_or(row);
            if seen.get(&k) != Some(sig) {
                seen.insert(k, sig.clone());
                out.push_str(line);
                out.push('\n');
            }
        }
        if first {
            match rendered.lines().next() {
                Some(header) if !out.is_empty() => out.insert_str(0, &format!("{header}\n")),
                _ => eprintln!("{empty}"),
            }
            first = false;
        }
        write(&out)?;
    }
}

/// The store's watch fd, registered with the reactor (a duplicate: the store keeps its
/// own); `None` without inotify.
fn registered(store: &mut Store) -> Option<Async<OwnedFd>> {
    let fd = rustix::io::dup(store.watch_fd()?).ok()?;
    Async::new(fd).ok()
}

/// Waits for the next change of pods or their status (a pause of [`FALLBACK_PERIOD`]
/// without a watch); true when there was one.
fn changed(store: &mut Store, watch: Option<&Async<OwnedFd>>) -> bool {
    match watch {
        Some(fd) => {
            if async_io::block_on(fd.readable()).is_err() {
                std::thread::sleep(FALLBACK_PERIOD);
            }
        }
        None => std::thread::sleep(FALLBACK_PERIOD),
    }
    let c = store.changes();
    c.pods || c.status
}

/// Writes `text` to stdout; an error (the reader went away) ends the watch.
fn write(text: &str) -> Result<(), CliError> {
    if text.is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|_| CliError::said(0))
}
