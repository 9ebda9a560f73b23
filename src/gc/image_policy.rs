//! The image GC policy as pure functions: how many bytes to free, which images are
//! protected, and in which order the rest may go.
//!
//! kubelet's rule, with an absolute budget added for flash-sized devices:
//! - Usage at or above the high mark (percent of the image filesystem's capacity) frees
//!   down to the low mark. A high mark of 100 disables the percentage rule.
//! - Usage above `maxBytes` (when set) frees down to the same fraction of the budget as
//!   low/high (85/80 and a 200 MB budget: down to 188 MB), so one pull does not trigger
//!   a pass every time. Both rules may apply; the larger amount wins.
//! - Candidates are the images no container uses and nothing protects, least recently
//!   used first (ties: first seen earlier first); an image first seen less than `minAge`
//!   ago stays (it may have just been pulled for a container about to start).
//! - Bytes freed are estimated with the runtime's image sizes, which count layers shared
//!   with other images; a pass may free less than it counted, and the next pass (with a
//!   fresh ImageFsInfo) frees the rest.

use super::image_ref::ImageIndex;
use crate::config::ImageGcConfig;
use crate::cri::pb;
use std::collections::HashSet;

/// The image filesystem: bytes used by images (ImageFsInfo) and its capacity (statvfs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Bytes used.
    pub used: u64,
    /// Bytes the filesystem holds.
    pub capacity: u64,
}

/// Why a pass frees bytes, for the log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Usage reached the high percentage.
    HighMark,
    /// Usage is above `maxBytes`.
    Budget,
    /// The node is under disk pressure: every image that may go goes (kubelet's
    /// `DeleteUnusedImages`), whatever the marks say.
    DiskPressure,
}

/// Bytes to free this pass and why; `None` when usage is under both marks.
pub fn bytes_to_free(cfg: &ImageGcConfig, u: Usage) -> Option<(u64, Trigger)> {
    let high = u64::from(cfg.high_threshold_percent.min(100));
    let low = u64::from(cfg.low_threshold_percent.min(cfg.high_threshold_percent));
    let mut need = None;
    if high < 100
        && u.capacity > 0
        && u128::from(u.used) * 100 >= u128::from(u.capacity) * u128::from(high)
    {
        let low_mark = mul_div(u.capacity, low, 100);
        need = Some((u.used.saturating_sub(low_mark), Trigger::HighMark));
    }
    if cfg.max_bytes > 0 && u.used > cfg.max_bytes {
        let target = if high == 0 {
            0
        } else {
            mul_div(cfg.max_bytes, low, high)
        };
        let amount = u.used.saturating_sub(target);
        if need.is_none_or(|(n, _)| amount > n) {
            need = Some((amount, Trigger::Budget));
        }
    }
    need.filter(|(n, _)| *n > 0)
}

/// `a * b / c` without overflow (`c > 0`).
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    (u128::from(a) * u128::from(b) / u128::from(c.max(1))) as u64
}

/// An unprotected image with what the policy orders it by. Times are Unix seconds;
/// `last_used` 0 means never seen in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// The image's id.
    pub id: &'a str,
    /// Its size in bytes.
    pub size: u64,
    /// When it was first seen (seconds since the epoch).
    pub first_detected: u64,
    /// When a container last used it (seconds since the epoch).
    pub last_used: u64,
}

/// Orders candidates for removal: drops those first seen less than `min_age_secs` before
/// `now`, sorts the rest least recently used first.
pub fn eviction_order(
    mut c: Vec<Candidate<'_>>,
    now: u64,
    min_age_secs: u64,
) -> Vec<Candidate<'_>> {
    c.retain(|x| now.saturating_sub(x.first_detected) >= min_age_secs);
    c.sort_unstable_by(|a, b| {
        (a.last_used, a.first_detected, a.id).cmp(&(b.last_used, b.first_detected, b.id))
    });
    c
}

/// The prefix of `order` whose sizes add up to at least `to_free` (all of it if they
/// never do): what a pass removes when every removal succeeds.
pub fn plan<'o, 'a>(order: &'o [Candidate<'a>], to_free: u64) -> &'o [Candidate<'a>] {
    let mut sum = 0u64;
    for (i, c) in order.iter().enumerate() {
        if sum >= to_free {
            return order.get(..i).unwrap_or(order);
        }
        sum = sum.saturating_add(c.size);
    }
    order
}

/// Ids of the images some container (running or dead) was created from. containerd
/// reports a container's `image_ref` as the image id or a digest reference; the
/// container's image spec is tried when `image_ref` does not resolve.
pub fn in_use_ids<'a>(ix: &ImageIndex<'a>, containers: &[pb::Container]) -> HashSet<&'a str> {
    containers
        .iter()
        .filter_map(|c| {
            ix.resolve(&c.image_ref)
                .or_else(|| c.image.as_ref().and_then(|s| ix.resolve(&s.image)))
        })
        .collect()
}

/// Ids of images that must stay whatever their age: those `refs` name (images desired
/// pods need, the sandbox image, pinned images from the config) and those the runtime
/// flags as pinned. Also returns the references that named no listed image (the pass
/// asks the runtime about those with ImageStatus).
pub fn kept_ids<'a, 'r>(
    ix: &ImageIndex<'a>,
    images: &'a [pb::Image],
    refs: impl IntoIterator<Item = &'r str>,
) -> (HashSet<&'a str>, Vec<&'r str>) {
    let mut kept: HashSet<&'a str> = images
        .iter()
        .filter(|i| i.pinned)
        .map(|i| i.id.as_str())
        .collect();
    let mut unresolved = Vec::new();
    for r in refs {
        match ix.resolve(r) {
            Some(id) => {
                kept.insert(id);
            }
            None if !r.is_empty() => unresolved.push(r),
            None => {}
        }
    }
    (kept, unresolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cfg(high: u8, low: u8, max_bytes: u64) -> ImageGcConfig {
        ImageGcConfig {
            high_threshold_percent: high,
            low_threshold_percent: low,
            max_bytes,
            min_age: Duration::from_secs(120),
            ..Default::default()
        }
    }

    fn u(used: u64, capacity: u64) -> Usage {
        Usage { used, capacity }
    }

    #[test]
    fn percentages_trigger_at_high_and_free_to_low() {
        let c = cfg(85, 80, 0);
        assert_eq!(bytes_to_free(&c, u(84, 100)), None);
        assert_eq!(bytes_to_free(&c, u(85, 100)), Some((5, Trigger::HighMark)));
        assert_eq!(
            bytes_to_free(&c, u(950, 1000)),
            Some((150, Trigger::HighMark))
        );
        assert_eq!(
            bytes_to_free(&c, u(10, 0)),
            None,
            "no capacity: no percent rule"
        );
        // 100 disables the percentage rule, even on a full disk.
        assert_eq!(bytes_to_free(&cfg(100, 80, 0), u(100, 100)), None);
        // Huge values do not overflow.
        let big = u64::MAX / 2;
        assert!(bytes_to_free(&c, u(big, big)).is_some());
    }

    #[test]
    fn budget_frees_to_the_scaled_low_mark() {
        let c = cfg(85, 80, 200_000_000);
        assert_eq!(bytes_to_free(&c, u(200_000_000, 10_000_000_000)), None);
        let (n, t) = bytes_to_free(&c, u(200_000_001, 10_000_000_000)).unwrap();
        assert_eq!(t, Trigger::Budget);
        assert_eq!(n, 200_000_001 - 188_235_294);
        // Both apply: the larger amount wins.
        let (n, t) = bytes_to_free(&cfg(50, 40, 850), u(900, 1000)).unwrap();
        assert_eq!((n, t), (500, Trigger::HighMark));
        let (n, t) = bytes_to_free(&cfg(85, 80, 100), u(300, 1000)).unwrap();
        assert_eq!((n, t), (300 - 94, Trigger::Budget));
    }

    fn cand(id: &str, size: u64, first: u64, last: u64) -> Candidate<'_> {
        Candidate {
            id,
            size,
            first_detected: first,
            last_used: last,
        }
    }

    #[test]
    fn lru_first_young_images_stay() {
        let order = eviction_order(
            vec![
                cand("recent", 10, 100, 900),
                cand("never-used-old", 10, 50, 0),
                cand("young", 10, 950, 0),
                cand("old-use", 10, 10, 500),
                cand("never-used-older", 10, 20, 0),
            ],
            1000,
            120,
        );
        let ids: Vec<_> = order.iter().map(|c| c.id).collect();
        assert_eq!(
            ids,
            ["never-used-older", "never-used-old", "old-use", "recent"]
        );
        assert_eq!(plan(&order, 0).len(), 0);
        assert_eq!(plan(&order, 15).len(), 2);
        assert_eq!(plan(&order, 20).len(), 2);
        assert_eq!(plan(&order, 21).len(), 3);
        assert_eq!(plan(&order, 1000).len(), 4);
    }

    fn img(id: &str, tag: &str, pinned: bool) -> pb::Image {
        pb::Image {
            id: id.into(),
            repo_tags: vec![tag.into()],
            repo_digests: vec![format!("{}@sha256:{id}", tag.split(':').next().unwrap())],
            pinned,
            ..Default::default()
        }
    }

    fn ctr(image_ref: &str, spec: &str) -> pb::Container {
        pb::Container {
            image_ref: image_ref.into(),
            image: Some(pb::ImageSpec {
                image: spec.into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn in_use_by_id_digest_or_spec() {
        let images = [
            img("sha256:a", "docker.io/library/a:1", false),
            img("sha256:b", "docker.io/library/b:1", false),
            img("sha256:c", "docker.io/library/c:1", false),
            img("sha256:d", "docker.io/library/d:1", false),
        ];
        let ix = ImageIndex::new(&images);
        let containers = [
            ctr("sha256:a", ""),
            ctr("docker.io/library/b@sha256:sha256:b", ""),
            ctr("", "c:1"),
            ctr("sha256:gone", "nothing:here"),
        ];
        let mut ids: Vec<_> = in_use_ids(&ix, &containers).into_iter().collect();
        ids.sort();
        assert_eq!(ids, ["sha256:a", "sha256:b", "sha256:c"]);
    }

    #[test]
    fn kept_by_reference_and_runtime_pin() {
        let images = [
            img("sha256:pause", "registry.k8s.io/pause:3.9", true),
            img("sha256:app", "docker.io/library/app:1", false),
            img("sha256:other", "docker.io/library/other:1", false),
        ];
        let ix = ImageIndex::new(&images);
        let (kept, unresolved) = kept_ids(&ix, &images, ["app:1", "missing:2", ""]);
        let mut kept: Vec<_> = kept.into_iter().collect();
        kept.sort();
        assert_eq!(kept, ["sha256:app", "sha256:pause"]);
        assert_eq!(unresolved, ["missing:2"]);
    }
}
