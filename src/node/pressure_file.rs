//! The node's pressure conditions as the agent last decided them, kept in
//! `STATE_DIR/node-pressure.json` for `tinylet get node` (the CLI does not talk to the
//! agent). Written only when a condition or the set of thresholds met changes, never
//! on a reading alone: gateways run on flash, and every write wears it.

use super::pressure::Pressure;
use super::signals::{Resource, Signal};
use crate::config::Config;
use crate::store::atomic;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file's name in the state directory.
pub const FILE_NAME: &str = "node-pressure.json";

/// The three conditions, in the order kubelet lists them.
const CONDITIONS: [(&str, Resource); 3] = [
    ("MemoryPressure", Resource::Memory),
    ("DiskPressure", Resource::Disk),
    ("PIDPressure", Resource::Pid),
];

/// One condition as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedCondition {
    /// `MemoryPressure`, `DiskPressure` or `PIDPressure`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `True` or `False`.
    pub status: String,
    /// When the status last changed (RFC 3339).
    pub last_transition_time: String,
    /// The thresholds met when written, as the config spells them
    /// (`imagefs.available<15%`, `memory.available<20Mi (soft)`).
    #[serde(default)]
    pub thresholds: Vec<String>,
}

/// The file's content.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Recorded {
    /// The three conditions.
    pub conditions: Vec<RecordedCondition>,
}

impl Recorded {
    /// The record of `p` at `now` (RFC 3339); a condition whose status `prior` holds
    /// already keeps its transition time.
    pub fn of(cfg: &Config, p: &Pressure, prior: &Recorded, now: &str) -> Recorded {
        let conditions = CONDITIONS
            .iter()
            .map(|(kind, r)| {
                let status = if p.condition(*r) { "True" } else { "False" };
                let since = prior
                    .conditions
                    .iter()
                    .find(|c| c.kind == *kind && c.status == status)
                    .map_or(now, |c| c.last_transition_time.as_str());
                RecordedCondition {
                    kind: kind.to_string(),
                    status: status.into(),
                    last_transition_time: since.into(),
                    thresholds: thresholds(cfg, p, *r),
                }
            })
            .collect();
        Recorded { conditions }
    }

    /// Whether `other` says the same, the transition times aside.
    pub fn same_as(&self, other: &Recorded) -> bool {
        self.conditions.len() == other.conditions.len()
            && self.conditions.iter().zip(&other.conditions).all(|(a, b)| {
                a.kind == b.kind && a.status == b.status && a.thresholds == b.thresholds
            })
    }
}

/// The thresholds of `r`'s signals met in `p`, spelled as in the config.
fn thresholds(cfg: &Config, p: &Pressure, r: Resource) -> Vec<String> {
    Signal::ALL
        .iter()
        .filter(|s| s.resource() == r)
        .filter_map(|s| {
            let hit = p.hit(*s)?;
            let (map, note) = if hit.soft {
                (&cfg.eviction_soft, " (soft)")
            } else {
                (&cfg.eviction_hard, "")
            };
            let spelled = map.get(s.name()).map_or("?", String::as_str);
            Some(format!("{}<{spelled}{note}", s.name()))
        })
        .collect()
}

/// Reads the record; `None` when there is none or it does not parse (the agent
/// writes a fresh one; `get node` then shows no conditions).
pub fn read(state_dir: &Path) -> Option<Recorded> {
    let bytes = atomic::read_optional(&state_dir.join(FILE_NAME)).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// Writes the record atomically.
pub fn write(state_dir: &Path, r: &Recorded) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(r).map_err(std::io::Error::other)?;
    atomic::write_file(state_dir, FILE_NAME, &bytes, atomic::PLAIN_FILE_MODE).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::pressure::Hit;

    #[test]
    fn records_conditions_with_the_thresholds_met() {
        let cfg = Config::default();
        let mut p = Pressure {
            disk: true,
            ..Default::default()
        };
        p.hits[Signal::ImagefsAvailable as usize] = Some(Hit {
            available: 1,
            threshold: 2,
            soft: false,
        });
        let r = Recorded::of(&cfg, &p, &Recorded::default(), "T1");
        assert_eq!(r.conditions[1].status, "True");
        assert_eq!(r.conditions[1].thresholds, ["imagefs.available<15%"]);
        assert_eq!(r.conditions[0].thresholds, Vec::<String>::new());
        let again = Recorded::of(&cfg, &p, &r, "T2");
        assert!(again.same_as(&r));
        assert_eq!(again.conditions[1].last_transition_time, "T1");
        let clear = Recorded::of(&cfg, &Pressure::default(), &r, "T3");
        assert!(!clear.same_as(&r));
        assert_eq!(clear.conditions[1].last_transition_time, "T3");
        assert_eq!(clear.conditions[0].last_transition_time, "T1");
        let dir = std::env::temp_dir().join(format!("tinylet-pf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, &r).unwrap();
        assert_eq!(read(&dir), Some(r));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
