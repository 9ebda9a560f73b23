//! Runs the garbage collectors on their periods, as tasks beside the sync loop so a slow
//! pass never delays the PLEG: image GC (`imageGC.period`), container GC with on-disk
//! leftovers (`containerGC.period`) and container log rotation (every 10 s, kubelet's
//! log manager period), and the node pressure check (every 10 s, see
//! [`super::pressure_check`]). A pass never overlaps itself; a failed pass is logged and the
//! next one retries. On the container GC period it also measures disk emptyDirs against
//! their `sizeLimit` (inline: a bounded directory walk, see `gc::empty_dir_limit`). The sync loop hands over the desired pods, since only it knows
//! which pods exist.

use super::context::Context;
use super::pressure_check::{Eviction, PressureCheck};
use crate::gc::container;
use crate::gc::empty_dir_limit::SizeLimits;
use crate::gc::image::ImageGc;
use crate::gc::logs::LogRotator;
use crate::model::Pod;
use crate::node::signals::Resource;
use smol::Task;
use std::collections::HashSet;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

/// How often container logs are checked for rotation.
pub const ROTATION_PERIOD: Duration = Duration::from_secs(10);

/// A collector with state: idle between passes, or lent to the task running a pass.
enum Slot<T> {
    Idle(T),
    Busy(Task<T>),
    Empty,
}

impl<T: 'static> Slot<T> {
    /// The collector when it is idle (collecting a finished pass's result first).
    async fn take_idle(&mut self) -> Option<T> {
        match std::mem::replace(self, Slot::Empty) {
            Slot::Idle(t) => Some(t),
            Slot::Busy(task) if task.is_finished() => Some(task.await),
            busy => {
                *self = busy;
                None
            }
        }
    }
}

/// The periodic work beside the pods: image GC, container GC, log rotation, emptyDir size
/// limits, each on its own period, run from the sync loop.
pub struct Housekeeping {
    image_gc: Slot<ImageGc>,
    rotator: Slot<LogRotator>,
    container_gc: Option<Task<()>>,
    size_limits: SizeLimits,
    next_image: Instant,
    next_container: Instant,
    next_rotation: Instant,
    next_pressure: Instant,
    pressure: PressureCheck,
}

impl Housekeeping {
    /// Housekeeping with periods from the config; the first passes are due at once.
    pub fn new(ctx: &Context) -> Housekeeping {
        let cfg = &ctx.cfg;
        let now = Instant::now();
        Housekeeping {
            image_gc: Slot::Idle(ImageGc::new(cfg)),
            rotator: Slot::Idle(LogRotator::new(
                cfg.container_log_max_size,
                cfg.container_log_max_files,
                crate::kuberuntime::agent_mark::mark(&cfg.state_dir),
            )),
            container_gc: None,
            size_limits: SizeLimits::default(),
            // The first passes wait one period: right after a (re)start the runtime may
            // still be coming back, and nothing is urgent.
            next_image: now + cfg.image_gc.period,
            next_container: now + cfg.container_gc.period,
            next_rotation: now + ROTATION_PERIOD,
            next_pressure: now + ROTATION_PERIOD,
            pressure: PressureCheck::new(cfg),
        }
    }

    /// Starts the passes that are due. `desired` must be the complete desired set.
    /// Returns the pod to evict when memory runs short. Under disk pressure image GC
    /// runs at once, and frees every image it may while a disk threshold is met.
    pub async fn tick(&mut self, ctx: &Rc<Context>, desired: &[&Pod]) -> Option<Eviction> {
        let now = Instant::now();
        let mut evict = None;
        if now >= self.next_pressure {
            self.next_pressure = now + ROTATION_PERIOD;
            let out = self.pressure.tick(ctx, desired, now).await;
            if out.reclaim_images {
                self.next_image = now;
            }
            evict = out.evict;
        }
        if now >= self.next_rotation {
            if let Some(mut rot) = self.rotator.take_idle().await {
                self.next_rotation = now + ROTATION_PERIOD;
                let ctx = ctx.clone();
                self.rotator = Slot::Busy(crate::rt::spawn(async move {
                    if let Err(e) = rot.pass(&ctx.cri.runtime).await {
                        log::warn!("log rotation: {e}");
                    }
                    rot
                }));
            }
        }
        if now >= self.next_container && self.container_gc.as_ref().is_none_or(|t| t.is_finished())
        {
            self.next_container = now + ctx.cfg.container_gc.period;
            self.size_limits.check(&ctx.cfg.pods_dir, desired);
            if let Some(cg) = &ctx.cgroups {
                cg.sweep(desired);
            }
            let uids: Vec<String> = desired.iter().map(|p| p.metadata.uid.clone()).collect();
            let ctx = ctx.clone();
            self.container_gc = Some(crate::rt::spawn(async move {
                let set: HashSet<&str> = uids.iter().map(String::as_str).collect();
                if let Err(e) =
                    container::pass(&ctx.cri.runtime, &ctx.cfg, &set, SystemTime::now()).await
                {
                    log::warn!("container GC: {e}");
                }
            }));
        }
        if now >= self.next_image {
            if let Some(mut gc) = self.image_gc.take_idle().await {
                self.next_image = now + ctx.cfg.image_gc.period;
                let images: Vec<String> = desired
                    .iter()
                    .flat_map(|p| p.all_containers().map(|c| c.image.clone()))
                    .collect();
                gc.set_disk_pressure(ctx.pressure.get().met(Resource::Disk));
                let ctx = ctx.clone();
                self.image_gc = Slot::Busy(crate::rt::spawn(async move {
                    let refs: Vec<&str> = images.iter().map(String::as_str).collect();
                    match gc.pass(&ctx.cri, &refs, SystemTime::now()).await {
                        Ok(r) => crate::metrics::image_gc(r.removed.len() as u64, r.bytes_freed),
                        Err(e) => {
                            crate::metrics::image_gc(0, 0);
                            log::warn!("image GC: {e}");
                        }
                    }
                    gc
                }));
            }
        }
        evict
    }
}
