//! Node pressure as kubelet's eviction manager decides it, from the signals'
//! readings ([`super::signals`]) and a clock the caller passes in:
//! - a hard threshold (`evictionHard`) is met as soon as its signal is below it;
//! - a soft one (`evictionSoft`) once its signal stayed below it for its
//!   `evictionSoftGracePeriod` (going above resets the wait);
//! - a condition (`MemoryPressure`, `DiskPressure`, `PIDPressure`) is true while one of
//!   its signals' thresholds is met and for `evictionPressureTransitionPeriod` after
//!   the last time one was, so a signal hovering at its threshold does not flap it.
//!
//! Run on the housekeeping's 10 s tick, kubelet's own eviction interval.

use super::signals::{Readings, Resource, Signal};
use crate::config::{eviction_threshold, soft_threshold, Config};
use std::time::{Duration, Instant};

/// A threshold met now: what was available and the threshold it is below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// Available bytes, inodes or pids.
    pub available: i64,
    /// The threshold as an amount.
    pub threshold: i64,
    /// Met by a soft threshold (its grace period passed), not a hard one.
    pub soft: bool,
}

/// The node's pressure: the three conditions and the thresholds met now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pressure {
    /// `MemoryPressure`.
    pub memory: bool,
    /// `DiskPressure`.
    pub disk: bool,
    /// `PIDPressure`.
    pub pid: bool,
    /// The thresholds met now, by [`Signal`] index.
    pub hits: [Option<Hit>; 6],
}

impl Pressure {
    /// The threshold met now for `s`, if any.
    pub fn hit(&self, s: Signal) -> Option<Hit> {
        self.hits[s as usize]
    }

    /// Whether any signal of `r` meets its threshold now (the condition may stay true
    /// longer).
    pub fn met(&self, r: Resource) -> bool {
        Signal::ALL
            .iter()
            .any(|s| s.resource() == r && self.hit(*s).is_some())
    }

    /// The condition of `r`.
    pub fn condition(&self, r: Resource) -> bool {
        match r {
            Resource::Memory => self.memory,
            Resource::Disk => self.disk,
            Resource::Pid => self.pid,
        }
    }
}

/// What the decisions remember between ticks.
#[derive(Debug, Default)]
pub struct Tracker {
    /// Since when each signal has been below its soft threshold.
    below_soft_since: [Option<Instant>; 6],
    /// When each condition's thresholds were last met (Memory, Disk, Pid).
    last_met: [Option<Instant>; 3],
}

impl Tracker {
    /// The pressure at `now` given the readings.
    pub fn update(&mut self, cfg: &Config, readings: &Readings, now: Instant) -> Pressure {
        let mut p = Pressure::default();
        for s in Signal::ALL {
            let i = s as usize;
            let Some((available, capacity)) = readings[i] else {
                self.below_soft_since[i] = None;
                continue;
            };
            let hard = eviction_threshold(cfg, s.name()).map(|t| t.amount(capacity));
            let soft = soft_threshold(cfg, s.name()).map(|(t, g)| (t.amount(capacity), g));
            let soft_met = soft.and_then(|(threshold, grace)| {
                if available >= threshold {
                    self.below_soft_since[i] = None;
                    return None;
                }
                let since = *self.below_soft_since[i].get_or_insert(now);
                (now.saturating_duration_since(since) >= grace).then_some(threshold)
            });
            p.hits[i] = match (hard.filter(|t| available < *t), soft_met) {
                (Some(threshold), _) => Some(Hit {
                    available,
                    threshold,
                    soft: false,
                }),
                (None, Some(threshold)) => Some(Hit {
                    available,
                    threshold,
                    soft: true,
                }),
                (None, None) => None,
            };
        }
        let period = cfg.eviction_pressure_transition_period;
        let [memory, disk, pid] = [Resource::Memory, Resource::Disk, Resource::Pid]
            .map(|r| self.condition(r, p.met(r), now, period));
        Pressure {
            memory,
            disk,
            pid,
            ..p
        }
    }

    /// The condition of `r`: met now, or met less than `period` ago.
    fn condition(&mut self, r: Resource, met: bool, now: Instant, period: Duration) -> bool {
        let last = &mut self.last_met[r as usize];
        if met {
            *last = Some(now);
        }
        last.is_some_and(|t| met || now.saturating_duration_since(t) < period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MI: i64 = 1 << 20;

    fn readings(memory_available: i64) -> Readings {
        let mut r: Readings = [None; 6];
        r[Signal::MemoryAvailable as usize] = Some((memory_available, 1024 * MI));
        r[Signal::NodefsAvailable as usize] = Some((50 * MI, 100 * MI));
        r[Signal::NodefsInodesFree as usize] = Some((4, 100));
        r[Signal::ImagefsAvailable as usize] = Some((14, 100));
        r[Signal::PidAvailable as usize] = Some((900, 1000));
        r
    }

    #[test]
    fn hard_thresholds_meet_at_once_from_injected_numbers() {
        let cfg = Config::default();
        let mut t = Tracker::default();
        let now = Instant::now();
        let p = t.update(&cfg, &readings(200 * MI), now);
        assert!(!p.memory && p.disk && !p.pid, "{p:?}");
        // 4 of 100 inodes < 5 %, 14 of 100 bytes < 15 %; nodefs bytes 50 % are fine.
        assert!(p.hit(Signal::NodefsInodesFree).is_some());
        assert!(p.hit(Signal::ImagefsAvailable).is_some());
        assert!(p.hit(Signal::NodefsAvailable).is_none());
        // No inode count (UBIFS): the signal is not read, so never met.
        assert!(p.hit(Signal::ImagefsInodesFree).is_none());
        let p = t.update(&cfg, &readings(99 * MI), now);
        let h = p.hit(Signal::MemoryAvailable).unwrap();
        assert_eq!(
            (h.available, h.threshold, h.soft),
            (99 * MI, 100 * MI, false)
        );
        assert!(p.memory);
    }

    #[test]
    fn soft_thresholds_wait_for_their_grace_period() {
        let cfg = Config::parse(
            r#"{"evictionHard":{"memory.available":"10Mi"},
                "evictionSoft":{"memory.available":"100Mi"},
                "evictionSoftGracePeriod":{"memory.available":"1m"},
                "evictionPressureTransitionPeriod":"0s"}"#,
        )
        .unwrap();
        let mut t = Tracker::default();
        let t0 = Instant::now();
        let at = |s| t0 + Duration::from_secs(s);
        assert!(!t.update(&cfg, &readings(50 * MI), at(0)).memory);
        assert!(!t.update(&cfg, &readings(50 * MI), at(59)).memory);
        let p = t.update(&cfg, &readings(50 * MI), at(60));
        assert!(
            p.memory && p.hit(Signal::MemoryAvailable).unwrap().soft,
            "{p:?}"
        );
        // Above the threshold once: the wait starts again.
        assert!(!t.update(&cfg, &readings(150 * MI), at(61)).memory);
        assert!(!t.update(&cfg, &readings(50 * MI), at(62)).memory);
        assert!(!t.update(&cfg, &readings(50 * MI), at(121)).memory);
        assert!(t.update(&cfg, &readings(50 * MI), at(122)).memory);
        // Below the hard threshold: met at once, and hard.
        let mut fresh = Tracker::default();
        let p = fresh.update(&cfg, &readings(5 * MI), at(0));
        assert!(p.memory && !p.hit(Signal::MemoryAvailable).unwrap().soft);
    }

    #[test]
    fn conditions_stay_for_the_transition_period() {
        let cfg = Config::parse(
            r#"{"evictionHard":{"memory.available":"100Mi"},"evictionPressureTransitionPeriod":"5m"}"#,
        )
        .unwrap();
        let mut t = Tracker::default();
        let t0 = Instant::now();
        let at = |s| t0 + Duration::from_secs(s);
        assert!(t.update(&cfg, &readings(50 * MI), at(0)).memory);
        let p = t.update(&cfg, &readings(500 * MI), at(10));
        assert!(p.memory && !p.met(Resource::Memory), "{p:?}");
        assert!(t.update(&cfg, &readings(500 * MI), at(299)).memory);
        // Met again at 200 s would have restarted the period; it was not: clear at 300 s.
        assert!(!t.update(&cfg, &readings(500 * MI), at(300)).memory);
        assert!(t.update(&cfg, &readings(50 * MI), at(310)).memory);
        assert!(t.update(&cfg, &readings(500 * MI), at(609)).memory);
        assert!(!t.update(&cfg, &readings(500 * MI), at(610)).memory);
        assert!(!t.update(&cfg, &readings(500 * MI), at(610)).disk);
    }
}
