//! The image GC pass: observe the runtime, decide with [`super::image_policy`], remove,
//! and keep the last-used records (see [`super::image_records`] for when they are saved).
//!
//! One pass: ListImages, ImageFsInfo (+ statvfs of its mountpoint for the capacity),
//! ListContainers; then, only when over a mark, ImageStatus for desired references that
//! did not match a listed name, and RemoveImage per victim. A failed removal is logged and
//! left for the next pass; it never stops the pass or the agent.
//!
//! Under disk pressure (a `nodefs`/`imagefs` eviction threshold met, see
//! [`crate::node::pressure`]) a pass frees every image that may go, as kubelet's
//! eviction manager reclaims with `DeleteUnusedImages`: in use, desired, pinned, the
//! sandbox image and images younger than `minAge` still stay.

use super::image_policy::{self, Candidate, Trigger, Usage};
use super::image_records::{self, ImageRecords};
use super::image_ref::ImageIndex;
use crate::config::{format_size, Config, ImageGcConfig};
use crate::cri::{CriClient, CriError};
use crate::store::atomic;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// What one pass saw and did.
#[derive(Debug, Default)]
pub struct ImageGcReport {
    /// The image filesystem's usage, when the runtime reports it.
    pub usage: Option<Usage>,
    /// Bytes the policy asked to free, and why (`None`: under both marks).
    pub to_free: Option<(u64, Trigger)>,
    /// Removed images (id, size), in removal order.
    pub removed: Vec<(String, u64)>,
    /// Bytes freed by the images removed.
    pub bytes_freed: u64,
    /// Images whose removal failed (id, reason); retried next pass.
    pub failed: Vec<(String, String)>,
    /// Whether the last-used records were written this pass.
    pub records_written: bool,
}

/// A pass that could not run (the runtime did not answer or the filesystem is unknown).
#[derive(Debug)]
pub struct ImageGcError(pub String);

impl std::fmt::Display for ImageGcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<CriError> for ImageGcError {
    fn from(e: CriError) -> Self {
        ImageGcError(e.to_string())
    }
}

/// The image garbage collector: its policy and its records.
pub struct ImageGc {
    cfg: ImageGcConfig,
    sandbox_image: String,
    state_dir: PathBuf,
    records: ImageRecords,
    disk_pressure: bool,
}

impl ImageGc {
    /// Loads the last-used records from `stateDir/images.json` (missing: none yet).
    pub fn new(cfg: &Config) -> Self {
        let path = cfg.state_dir.join(image_records::FILE_NAME);
        let bytes = match atomic::read_optional(&path) {
            Ok(b) => b,
            Err(e) => {
                log::warn!("{}: {e}; image last-use times start afresh", path.display());
                None
            }
        };
        ImageGc {
            cfg: cfg.image_gc.clone(),
            sandbox_image: cfg.sandbox_image.clone(),
            state_dir: cfg.state_dir.clone(),
            records: ImageRecords::from_file(
                bytes.as_deref(),
                unix_secs(SystemTime::now()),
                &path.display().to_string(),
            ),
            disk_pressure: false,
        }
    }

    /// Whether the next passes run under disk pressure (free all they may).
    pub fn set_disk_pressure(&mut self, on: bool) {
        self.disk_pressure = on;
    }

    /// Writes to the records file so far (for tests and benches).
    pub fn records_writes(&self) -> u64 {
        self.records.writes
    }

    /// The records (for tests).
    pub fn records(&self) -> &ImageRecords {
        &self.records
    }

    /// One GC pass. `desired_images` are the image references of every container (init
    /// and app) of every desired pod: those images stay so the pods can restart offline.
    pub async fn pass(
        &mut self,
        cri: &CriClient,
        desired_images: &[&str],
        now: SystemTime,
    ) -> Result<ImageGcReport, ImageGcError> {
        let now_s = unix_secs(now);
        let images = cri.image.list_images().await?;
        let containers = cri.runtime.list_containers(None).await?;
        let ix = ImageIndex::new(&images);
        let in_use = image_policy::in_use_ids(&ix, &containers);
        let present: HashSet<&str> = images.iter().map(|i| i.id.as_str()).collect();
        self.records.observe(&present, &in_use, now_s);
        let mut report = ImageGcReport {
            records_written: self.save_records(),
            ..Default::default()
        };
        let usage = self.usage(cri).await?;
        report.usage = Some(usage);
        report.to_free = if self.disk_pressure {
            Some((u64::MAX, Trigger::DiskPressure))
        } else {
            image_policy::bytes_to_free(&self.cfg, usage)
        };
        let Some((to_free, trigger)) = report.to_free else {
            return Ok(report);
        };
        if trigger == Trigger::DiskPressure {
            log::info!(
                "image filesystem uses {} of {}, node under disk pressure: \
                 freeing every unused image",
                format_size(usage.used),
                format_size(usage.capacity)
            );
        } else {
            log::info!(
                "image filesystem uses {} of {} ({trigger:?}): freeing {}",
                format_size(usage.used),
                format_size(usage.capacity),
                format_size(to_free)
            );
        }
        let refs = desired_images
            .iter()
            .copied()
            .chain([self.sandbox_image.as_str()])
            .chain(self.cfg.pinned_images.iter().map(String::as_str));
        let (mut kept, unresolved) = image_policy::kept_ids(&ix, &images, refs);
        let mut extra = Vec::new();
        for r in unresolved {
            match cri.image.image_status(r).await {
                Ok(Some(img)) => extra.push(img.id),
                Ok(None) => {}
                // Unsure what this reference names: keep everything this pass.
                Err(e) => return Err(ImageGcError(format!("ImageStatus {r}: {e}"))),
            }
        }
        kept.extend(extra.iter().map(String::as_str));
        let candidates: Vec<Candidate<'_>> = images
            .iter()
            .filter(|i| !in_use.contains(i.id.as_str()) && !kept.contains(i.id.as_str()))
            .map(|i| {
                let rec = self.records.get(&i.id);
                Candidate {
                    id: &i.id,
                    size: i.size,
                    first_detected: rec.map_or(now_s, |r| r.first_detected),
                    last_used: rec.map_or(0, |r| r.last_used),
                }
            })
            .collect();
        let order = image_policy::eviction_order(candidates, now_s, self.cfg.min_age.as_secs());
        for c in order {
            if report.bytes_freed >= to_free {
                break;
            }
            match cri.image.remove_image(c.id).await {
                Ok(()) => {
                    log::info!("removed image {} ({})", c.id, format_size(c.size));
                    report.bytes_freed += c.size;
                    report.removed.push((c.id.to_string(), c.size));
                }
                Err(e) => {
                    log::warn!("removing image {}: {e} (retried next pass)", c.id);
                    report.failed.push((c.id.to_string(), e.to_string()));
                }
            }
        }
        for (id, _) in &report.removed {
            self.records.forget(id);
        }
        report.records_written |= self.save_records();
        log_outcome(&report, to_free, trigger);
        Ok(report)
    }

    /// Used bytes from ImageFsInfo, capacity from statvfs of its mountpoint.
    async fn usage(&self, cri: &CriClient) -> Result<Usage, ImageGcError> {
        let info = cri.image.image_fs_info().await?;
        let fs = info
            .image_filesystems
            .first()
            .ok_or_else(|| ImageGcError("ImageFsInfo: no image filesystem reported".into()))?;
        let used = fs.used_bytes.as_ref().map_or(0, |u| u.value);
        let mountpoint = fs
            .fs_id
            .as_ref()
            .map(|f| f.mountpoint.as_str())
            .unwrap_or("");
        if mountpoint.is_empty() {
            return Err(ImageGcError(
                "ImageFsInfo: image filesystem has no mountpoint".into(),
            ));
        }
        let capacity = capacity_of(Path::new(mountpoint))
            .map_err(|e| ImageGcError(format!("statvfs {mountpoint}: {e}")))?;
        Ok(Usage { used, capacity })
    }

    /// Writes the records if they changed meaningfully; returns whether it wrote.
    fn save_records(&mut self) -> bool {
        let Some(bytes) = self.records.pending_write() else {
            return false;
        };
        // The state directory may not exist yet on a first start.
        let written = std::fs::create_dir_all(&self.state_dir).and_then(|()| {
            atomic::write_file(
                &self.state_dir,
                image_records::FILE_NAME,
                &bytes,
                atomic::PLAIN_FILE_MODE,
            )
        });
        match written {
            Ok(_) => {
                self.records.saved();
                true
            }
            Err(e) => {
                log::warn!(
                    "{}: {e}; image last-use times not saved (retried next pass)",
                    self.state_dir.join(image_records::FILE_NAME).display()
                );
                false
            }
        }
    }
}

fn log_outcome(r: &ImageGcReport, to_free: u64, trigger: Trigger) {
    log::info!(
        "image GC: removed {} images, {} freed",
        r.removed.len(),
        format_size(r.bytes_freed)
    );
    if r.bytes_freed < to_free && trigger != Trigger::DiskPressure {
        log::warn!(
            "image GC: wanted to free {} but freed {} ({} removals failed); \
             everything else is in use, needed by a desired pod, pinned or younger than minAge",
            format_size(to_free),
            format_size(r.bytes_freed),
            r.failed.len()
        );
    }
}

/// Total bytes of the filesystem holding `path`.
pub fn capacity_of(path: &Path) -> std::io::Result<u64> {
    let st = rustix::fs::statvfs(path)?;
    Ok(st.f_blocks.saturating_mul(st.f_frsize))
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
