//! The eviction config, with kubelet's names: `evictionHard`, `evictionSoft`,
//! `evictionSoftGracePeriod`, `evictionMaxPodGracePeriod` and
//! `evictionPressureTransitionPeriod`; the signals tinylet watches and their thresholds.

use super::{Config, ConfigError};
use crate::model::Quantity;
use std::collections::BTreeMap;

/// The eviction signals tinylet watches (kubelet's names).
pub const SIGNALS: [&str; 6] = [
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
];

/// The hard eviction thresholds by default: kubelet's four Linux defaults
/// (`memory.available<100Mi`, `nodefs.available<10%`, `nodefs.inodesFree<5%`,
/// `imagefs.available<15%`), plus `imagefs.inodesFree<5%` (kubelet sets none: the same
/// rule as nodefs, since the image store is where small boards run out of inodes first)
/// and `pid.available<10%` (tinylet's: scales with a small board's `threads-max`).
/// Board configs lower `memory.available`, which does not fit a 128-512 MB board.
pub fn default_eviction_hard() -> BTreeMap<String, String> {
    [
        ("memory.available", "100Mi"),
        ("nodefs.available", "10%"),
        ("nodefs.inodesFree", "5%"),
        ("imagefs.available", "15%"),
        ("imagefs.inodesFree", "5%"),
        ("pid.available", "10%"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// kubelet's `evictionPressureTransitionPeriod` default: 5 minutes.
pub const DEFAULT_TRANSITION_PERIOD: std::time::Duration = std::time::Duration::from_secs(300);

/// A threshold: an amount, or a percentage of the capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// Bytes, inodes or pids.
    Amount(i64),
    /// Percent of capacity.
    Percent(f64),
}

impl Threshold {
    /// Parses `"100Mi"`, `"500"` or `"10%"`.
    pub fn parse(s: &str) -> Option<Threshold> {
        match s.strip_suffix('%') {
            Some(p) => p
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .map(Threshold::Percent),
            None => Quantity::parse(s)
                .ok()
                .filter(|q| q.nanos() >= 0)
                .map(|q| Threshold::Amount(q.value())),
        }
    }

    /// The amount below which `capacity` is under pressure.
    pub fn amount(self, capacity: i64) -> i64 {
        match self {
            Threshold::Amount(a) => a,
            Threshold::Percent(p) => (capacity as f64 * p / 100.0) as i64,
        }
    }
}

/// The threshold of `signal` in `evictionHard`, if set.
pub fn eviction_threshold(cfg: &Config, signal: &str) -> Option<Threshold> {
    cfg.eviction_hard
        .get(signal)
        .and_then(|s| Threshold::parse(s))
}

/// The threshold of `signal` in `evictionSoft` and its grace period, if set.
pub fn soft_threshold(cfg: &Config, signal: &str) -> Option<(Threshold, std::time::Duration)> {
    let t = Threshold::parse(cfg.eviction_soft.get(signal)?)?;
    let grace = cfg.eviction_soft_grace_period.get(signal)?;
    Some((t, super::parse_duration(grace).ok()?))
}

/// Checks every eviction field, naming the one at fault.
pub fn validate(cfg: &Config) -> Result<(), ConfigError> {
    let unknown = |field: &str, k: &str| {
        ConfigError(format!(
            "{field}.{k}: unknown signal; expected one of {}",
            SIGNALS.join(", ")
        ))
    };
    for (field, map) in [
        ("evictionHard", &cfg.eviction_hard),
        ("evictionSoft", &cfg.eviction_soft),
    ] {
        for (k, v) in map {
            if !SIGNALS.contains(&k.as_str()) {
                return Err(unknown(field, k));
            }
            if Threshold::parse(v).is_none() {
                return Err(ConfigError(format!(
                    "{field}.{k}: expected a quantity (\"100Mi\") or a percentage \
                     (\"10%\"), got {v:?}"
                )));
            }
        }
    }
    for (k, v) in &cfg.eviction_soft_grace_period {
        if !SIGNALS.contains(&k.as_str()) {
            return Err(unknown("evictionSoftGracePeriod", k));
        }
        if let Err(e) = super::parse_duration(v) {
            return Err(ConfigError(format!("evictionSoftGracePeriod.{k}: {e}")));
        }
        if !cfg.eviction_soft.contains_key(k) {
            return Err(ConfigError(format!(
                "evictionSoftGracePeriod.{k}: no evictionSoft threshold for this signal"
            )));
        }
    }
    if let Some(k) = cfg
        .eviction_soft
        .keys()
        .find(|k| !cfg.eviction_soft_grace_period.contains_key(*k))
    {
        return Err(ConfigError(format!(
            "evictionSoft.{k}: a soft threshold needs its grace period in \
             evictionSoftGracePeriod.{k}"
        )));
    }
    if cfg.eviction_max_pod_grace_period < 0 {
        return Err(ConfigError(format!(
            "evictionMaxPodGracePeriod: expected seconds >= 0, got {}",
            cfg.eviction_max_pod_grace_period
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(json: &str) -> String {
        Config::parse(json).unwrap_err().0
    }

    #[test]
    fn bad_values_name_the_field() {
        let e = err(r#"{"evictionHard":{"memory.available":"lots"}}"#);
        assert!(
            e.starts_with("evictionHard.memory.available: expected"),
            "{e}"
        );
        let e = err(r#"{"evictionHard":{"nodefs.inodesfree":"5%"}}"#);
        assert!(
            e.starts_with("evictionHard.nodefs.inodesfree: unknown"),
            "{e}"
        );
        let e = err(r#"{"evictionSoft":{"memory.available":"200%"}}"#);
        assert!(
            e.starts_with("evictionSoft.memory.available: expected"),
            "{e}"
        );
        let e = err(r#"{"evictionSoft":{"memory.available":"20Mi"}}"#);
        assert!(
            e.starts_with("evictionSoft.memory.available: a soft threshold needs"),
            "{e}"
        );
        let e = err(r#"{"evictionSoftGracePeriod":{"pid.available":"1m"}}"#);
        assert!(
            e.starts_with("evictionSoftGracePeriod.pid.available: no evictionSoft"),
            "{e}"
        );
        let e = err(
            r#"{"evictionSoft":{"pid.available":"5%"},"evictionSoftGracePeriod":{"pid.available":"soon"}}"#,
        );
        assert!(
            e.starts_with("evictionSoftGracePeriod.pid.available: "),
            "{e}"
        );
        let e = err(r#"{"evictionMaxPodGracePeriod":-1}"#);
        assert!(e.starts_with("evictionMaxPodGracePeriod: "), "{e}");
        let e = err(r#"{"evictionPressureTransitionPeriod":"often"}"#);
        assert!(e.starts_with("evictionPressureTransitionPeriod"), "{e}");
    }

    #[test]
    fn defaults_and_soft_thresholds() {
        let c = Config::default();
        assert_eq!(c.eviction_hard.len(), SIGNALS.len());
        let t = eviction_threshold(&c, "memory.available").unwrap();
        assert_eq!(t.amount(1 << 30), 100 << 20);
        let t = eviction_threshold(&c, "imagefs.available").unwrap();
        assert_eq!(t.amount(1000), 150);
        assert_eq!(
            c.eviction_pressure_transition_period,
            DEFAULT_TRANSITION_PERIOD
        );
        let c = Config::parse(
            r#"{"evictionSoft":{"memory.available":"20Mi"},
                "evictionSoftGracePeriod":{"memory.available":"1m30s"},
                "evictionMaxPodGracePeriod":30,"evictionPressureTransitionPeriod":"30s"}"#,
        )
        .unwrap();
        let (t, g) = soft_threshold(&c, "memory.available").unwrap();
        assert_eq!((t.amount(0), g.as_secs()), (20 << 20, 90));
        assert_eq!(c.eviction_max_pod_grace_period, 30);
        assert_eq!(c.eviction_pressure_transition_period.as_secs(), 30);
        assert_eq!(Config::parse(&c.to_pretty_json()).unwrap(), c);
    }
}
