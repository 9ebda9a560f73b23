//! What the image GC remembers about each image: when it was first seen and when it was
//! last seen in use, kept across agent restarts in `STATE_DIR/images.json`.
//!
//! Flash wear: the file is written only when what it says would change meaningfully:
//! an image appears or disappears, or an image starts or stops being used. While the same
//! containers keep running, no pass writes anything (zero writes at steady state).
//! An image in use at write time is saved with `inUse: true`; after a restart such images
//! count as used at load time, so the downtime never makes them look older than they are.
//! The last-used time of an unused image is frozen when it stops being used, which is
//! exactly when the file is written, so the saved value is exact to one GC period.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// The file name under the state directory.
pub const FILE_NAME: &str = "images.json";

/// One image's times (Unix seconds; 0 = unknown / never).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// When it was first seen (seconds since the epoch).
    pub first_detected: u64,
    /// When a container last used it (seconds since the epoch).
    pub last_used: u64,
    /// A container uses it now.
    #[serde(default)]
    pub in_use: bool,
}

#[derive(Deserialize)]
struct FileFormat {
    version: u32,
    images: BTreeMap<String, Record>,
}

#[derive(Serialize)]
struct FileRef<'a> {
    version: u32,
    images: &'a BTreeMap<String, Record>,
}

/// The records plus what is needed to decide when to save them.
#[derive(Debug, Default)]
pub struct ImageRecords {
    records: BTreeMap<String, Record>,
    /// Records differ from the file in a way worth a write.
    dirty: bool,
    /// Writes done by this process (reported by the bench and tests).
    pub writes: u64,
}

impl ImageRecords {
    /// Records read from the file's bytes (`None`: no file). A file that does not parse
    /// is logged and treated as absent: losing last-used times only makes GC order
    /// less exact, never unsafe (protected images are computed afresh each pass).
    pub fn from_file(bytes: Option<&[u8]>, now: u64, what: &str) -> Self {
        let mut r = ImageRecords::default();
        let Some(bytes) = bytes else { return r };
        match serde_json::from_slice::<FileFormat>(bytes) {
            Ok(f) if f.version == 1 => {
                r.records = f.images;
                for rec in r.records.values_mut() {
                    if rec.in_use {
                        rec.last_used = rec.last_used.max(now);
                    }
                    // Written by an older agent that recorded images present at its
                    // first start as seen at time 0: their age is unknown, count it
                    // from now so minAge protects them.
                    if rec.first_detected == 0 {
                        rec.first_detected = now;
                    }
                }
            }
            Ok(f) => log::warn!("{what}: unknown version {}, starting afresh", f.version),
            Err(e) => log::warn!("{what}: not valid image records ({e}), starting afresh"),
        }
        r
    }

    /// Updates the records from one listing: the `present` image ids and those `in_use`.
    /// An image without a record is first seen `now`, also on the first pass of an agent
    /// that has no records file yet: kubelet records such images as seen at an unknown
    /// time in the past, which lets GC remove an image that was pulled a moment before the
    /// agent first started (a fresh device, a wiped state directory) before minAge has
    /// passed. Images no longer present are forgotten.
    pub fn observe(&mut self, present: &HashSet<&str>, in_use: &HashSet<&str>, now: u64) {
        self.retain_present(present);
        for &id in present {
            let used = in_use.contains(id);
            let rec = match self.records.get_mut(id) {
                Some(r) => r,
                None => {
                    self.dirty = true;
                    self.records.entry(id.to_string()).or_insert(Record {
                        first_detected: now,
                        last_used: 0,
                        in_use: false,
                    })
                }
            };
            if used {
                rec.last_used = now;
            }
            if rec.in_use != used {
                rec.in_use = used;
                self.dirty = true;
            }
        }
    }

    /// Forgets every image not in `present`.
    pub fn retain_present(&mut self, present: &HashSet<&str>) {
        let before = self.records.len();
        self.records.retain(|id, _| present.contains(id.as_str()));
        if self.records.len() != before {
            self.dirty = true;
        }
    }

    /// Forgets one image (after a successful removal).
    pub fn forget(&mut self, id: &str) {
        if self.records.remove(id).is_some() {
            self.dirty = true;
        }
    }

    /// The record of image `id`.
    pub fn get(&self, id: &str) -> Option<&Record> {
        self.records.get(id)
    }

    /// How many images have a record.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no image has a record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The file's new contents if a write is due; call [`ImageRecords::saved`] once
    /// written.
    pub fn pending_write(&self) -> Option<Vec<u8>> {
        if !self.dirty {
            return None;
        }
        let f = FileRef {
            version: 1,
            images: &self.records,
        };
        serde_json::to_vec(&f).ok()
    }

    /// Marks the records as saved.
    pub fn saved(&mut self) {
        self.dirty = false;
        self.writes += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set<'a>(ids: &[&'a str]) -> HashSet<&'a str> {
        ids.iter().copied().collect()
    }

    /// Saves if due, returning whether a write happened; the bytes go to `file`.
    fn save(r: &mut ImageRecords, file: &mut Option<Vec<u8>>) -> bool {
        match r.pending_write() {
            Some(b) => {
                *file = Some(b);
                r.saved();
                true
            }
            None => false,
        }
    }

    #[test]
    fn writes_only_when_the_set_or_use_changes() {
        let mut file = None;
        let mut r = ImageRecords::from_file(None, 1000, "t");
        r.observe(&set(&["a", "b"]), &set(&["a"]), 1000);
        assert!(save(&mut r, &mut file), "first listing is written");
        // Same images, same use: many passes, no write, but a's last use advances.
        for t in 1..100 {
            r.observe(&set(&["a", "b"]), &set(&["a"]), 1000 + t * 300);
            assert!(!save(&mut r, &mut file));
        }
        assert_eq!(r.get("a").unwrap().last_used, 1000 + 99 * 300);
        // a stops being used: write (its last use is now frozen).
        r.observe(&set(&["a", "b"]), &set(&[]), 40_000);
        assert!(save(&mut r, &mut file));
        assert_eq!(r.get("a").unwrap().last_used, 1000 + 99 * 300);
        // A new image appears: write; it is first seen now.
        r.observe(&set(&["a", "b", "c"]), &set(&[]), 41_000);
        assert!(save(&mut r, &mut file));
        assert_eq!(r.get("c").unwrap().first_detected, 41_000);
        // An image disappears: write.
        r.observe(&set(&["a", "c"]), &set(&[]), 42_000);
        assert!(save(&mut r, &mut file));
        assert!(r.get("b").is_none());
        assert_eq!(r.writes, 4);
    }

    #[test]
    fn images_present_at_the_first_start_are_first_seen_then() {
        // No records file (first start, or a wiped state directory): the images already
        // there are first seen at this pass, not at time 0, so minAge protects them.
        let mut file = None;
        let mut r = ImageRecords::from_file(None, 500, "t");
        r.observe(&set(&["old"]), &set(&[]), 500);
        assert_eq!(r.get("old").unwrap().first_detected, 500);
        r.observe(&set(&["old", "new"]), &set(&[]), 800);
        assert_eq!(r.get("old").unwrap().first_detected, 500);
        assert_eq!(r.get("new").unwrap().first_detected, 800);
        assert!(save(&mut r, &mut file));
        // A corrupt file counts as none: the same rule.
        let mut r = ImageRecords::from_file(Some(b"{"), 900, "t");
        r.observe(&set(&["old"]), &set(&[]), 900);
        assert_eq!(r.get("old").unwrap().first_detected, 900);
        // After a restart the saved first-seen time is kept.
        let mut r = ImageRecords::from_file(file.as_deref(), 2000, "t");
        r.observe(&set(&["old", "new"]), &set(&[]), 2000);
        assert_eq!(r.get("old").unwrap().first_detected, 500);
        // A file from an agent that still wrote 0 for them: counted from the load.
        let old = br#"{"version":1,"images":{"x":{"firstDetected":0,"lastUsed":0}}}"#;
        let r = ImageRecords::from_file(Some(old), 3000, "t");
        assert_eq!(r.get("x").unwrap().first_detected, 3000);
    }

    #[test]
    fn survives_a_restart() {
        let mut file = None;
        let mut r = ImageRecords::from_file(None, 100, "t");
        r.observe(&set(&["used", "idle"]), &set(&["used", "idle"]), 100);
        r.observe(&set(&["used", "idle"]), &set(&["used"]), 200);
        assert!(save(&mut r, &mut file));
        // Restart much later: the in-use image counts as used at load time, the idle one
        // keeps its exact last use; a new image is first seen now (a file existed).
        let mut r2 = ImageRecords::from_file(file.as_deref(), 10_000, "t");
        assert_eq!(r2.get("used").unwrap().last_used, 10_000);
        assert_eq!(r2.get("idle").unwrap().last_used, 100);
        r2.observe(&set(&["used", "idle", "new"]), &set(&["used"]), 10_000);
        assert_eq!(r2.get("new").unwrap().first_detected, 10_000);
    }

    #[test]
    fn corrupt_file_starts_afresh() {
        for bad in [&b"{"[..], b"[]", br#"{"version":7,"images":{}}"#] {
            let r = ImageRecords::from_file(Some(bad), 1, "images.json");
            assert!(r.is_empty());
        }
    }
}
