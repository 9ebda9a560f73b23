//! The housekeeping's pressure check (every 10 s, kubelet's eviction interval): reads
//! the signals, decides the thresholds met and the conditions ([`crate::node::pressure`]),
//! keeps them in the context for the node status and in `node-pressure.json` for
//! `get node`, asks for image GC at once when the disk runs short, and chooses the pod
//! to evict when memory does.

use super::context::Context;
use super::image_fs::ImageFs;
use crate::config::Config;
use crate::model::Pod;
use crate::node::eviction::{self, Candidate};
use crate::node::pressure::Tracker;
use crate::node::pressure_file::{self, Recorded};
use crate::node::signals::{self, Readings, Resource, Signal};
use crate::node::{PodCgroups, Pressure};
use std::collections::HashSet;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

/// A pod the node evicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    /// The pod's UID.
    pub uid: String,
    /// kubelet's eviction message.
    pub message: String,
    /// How long it is given to stop.
    pub grace: Duration,
}

/// What one check decided.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The pressure now.
    pub pressure: Pressure,
    /// A disk threshold is met and was not at the last check: image GC now.
    pub reclaim_images: bool,
    /// The pod to evict, when memory is short and one may go.
    pub evict: Option<Eviction>,
}

/// The check's memory between ticks.
pub struct PressureCheck {
    tracker: Tracker,
    image_fs: ImageFs,
    /// Pods already told to go (each is evicted once).
    evicted: HashSet<String>,
    /// What `node-pressure.json` holds.
    recorded: Recorded,
    disk_met: bool,
}

impl PressureCheck {
    /// A check that starts from what `node-pressure.json` holds (its transition times
    /// carry over a restart; nothing is written while nothing changes).
    pub fn new(cfg: &Config) -> PressureCheck {
        PressureCheck {
            tracker: Tracker::default(),
            image_fs: ImageFs::default(),
            evicted: HashSet::new(),
            recorded: pressure_file::read(&cfg.state_dir).unwrap_or_default(),
            disk_met: false,
        }
    }

    /// One check at `now`; `desired` is the complete desired set.
    pub async fn tick(&mut self, ctx: &Rc<Context>, desired: &[&Pod], now: Instant) -> Outcome {
        let image_fs = self.image_fs.dir(ctx).await;
        let readings = signals::read(&ctx.cfg, &ctx.host.capacity, &image_fs);
        let out = self.decide(&ctx.cfg, &readings, ctx.cgroups.as_ref(), desired, now);
        ctx.pressure.set(out.pressure);
        self.record(&ctx.cfg, &out.pressure);
        out
    }

    /// The decisions from `readings` (reads the pods' cgroups only under memory
    /// pressure, to rank them).
    pub fn decide(
        &mut self,
        cfg: &Config,
        readings: &Readings,
        cgroups: Option<&PodCgroups>,
        desired: &[&Pod],
        now: Instant,
    ) -> Outcome {
        let pressure = self.tracker.update(cfg, readings, now);
        let disk_met = pressure.met(Resource::Disk);
        let reclaim_images = disk_met && !self.disk_met;
        self.disk_met = disk_met;
        self.evicted
            .retain(|uid| desired.iter().any(|d| d.metadata.uid == *uid));
        let evict = pressure
            .hit(Signal::MemoryAvailable)
            .and_then(|hit| self.choose(cfg, cgroups?, desired, hit));
        Outcome {
            pressure,
            reclaim_images,
            evict,
        }
    }

    /// The pod to evict for memory, kubelet's ranking over the pods' working sets.
    fn choose(
        &mut self,
        cfg: &Config,
        cgroups: &PodCgroups,
        desired: &[&Pod],
        hit: crate::node::pressure::Hit,
    ) -> Option<Eviction> {
        let candidates: Vec<Candidate> = desired
            .iter()
            .filter(|d| !self.evicted.contains(&d.metadata.uid))
            .filter_map(|pod| {
                let usage = cgroups.pod_memory_usage(pod)?;
                Some(Candidate { pod, usage })
            })
            .collect();
        let c = eviction::choose(&candidates)?;
        let uid = c.pod.metadata.uid.clone();
        self.evicted.insert(uid.clone());
        let pod_grace = super::kill::grace_period(c.pod);
        Some(Eviction {
            uid,
            message: eviction::message(&c, hit.available, hit.threshold),
            grace: eviction::grace_period(pod_grace, hit.soft, cfg.eviction_max_pod_grace_period),
        })
    }

    /// Logs and writes the conditions when they or the thresholds met changed.
    fn record(&mut self, cfg: &Config, p: &Pressure) {
        let now = crate::model::time::format_rfc3339(SystemTime::now());
        let rec = Recorded::of(cfg, p, &self.recorded, &now);
        if rec.same_as(&self.recorded) {
            return;
        }
        for c in &rec.conditions {
            let was = self.recorded.conditions.iter().find(|o| o.kind == c.kind);
            if was.is_none_or(|o| o.status != c.status || o.thresholds != c.thresholds) {
                let why = c.thresholds.join(", ");
                match c.status.as_str() {
                    "True" if why.is_empty() => log::warn!(
                        "node condition {}: True (thresholds cleared; held for \
                         evictionPressureTransitionPeriod)",
                        c.kind
                    ),
                    "True" => log::warn!("node condition {}: True ({why})", c.kind),
                    _ if was.is_some() => log::info!("node condition {}: False", c.kind),
                    _ => {}
                }
            }
        }
        if let Err(e) = pressure_file::write(&cfg.state_dir, &rec) {
            log::warn!(
                "{}: {e}; `get node` shows older conditions",
                cfg.state_dir.join(pressure_file::FILE_NAME).display()
            );
        }
        self.recorded = rec;
    }
}
