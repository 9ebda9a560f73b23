//! What `make bench-fleet` is asked to do: the settings from the environment, with the
//! issue's defaults (100 nodes of each kind, 10 idle minutes); shorter phases for
//! development runs.

use crate::figures::env_u64;
use std::path::PathBuf;
use std::time::Duration;

/// A kind of node the fleet is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Tinylet,
    Kubemark,
}

impl Kind {
    /// The value of the nodes' `fleet` label, and the table's column.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Tinylet => "tinylet",
            Kind::Kubemark => "kubemark",
        }
    }

    /// The prefix of the node names.
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Tinylet => "tl",
            Kind::Kubemark => "km",
        }
    }
}

pub struct Options {
    /// Tinylet nodes (`NODES`, default 100).
    pub nodes: usize,
    /// Hollow nodes (`KUBEMARK_NODES`, default `NODES`; lowered when the machine's memory
    /// cannot hold them, which the report says).
    pub kubemark_nodes: usize,
    /// Pods per node besides the DaemonSet's (`FLEET_PODS_PER_NODE`, default 4).
    pub pods_per_node: usize,
    /// The idle window (`FLEET_IDLE_SECS`, default 600).
    pub idle: Duration,
    /// The control plane alone, before any node (`FLEET_BASELINE_SECS`, default 300).
    pub baseline: Duration,
    /// After the pods run and before the idle window (`FLEET_SETTLE_SECS`, default 60).
    pub settle: Duration,
    /// How long half the fleet's uplink stays cut (`FLEET_CUT_SECS`, default 120: past
    /// the node controller's 40 s grace, so the nodes are seen unreachable).
    pub cut: Duration,
    /// How long a phase may take before the bench fails (`FLEET_WAIT_SECS`, default 600).
    pub wait: Duration,
    /// Which fleets run, in order (`FLEET_KINDS`, default "tinylet,kubemark").
    pub kinds: Vec<Kind>,
    /// The agent (`TINYLET_MUSL_BIN` when set, else `TINYLET_BIN`, else
    /// target/release/tinylet).
    pub agent: PathBuf,
}

/// Memory a hollow node takes (VmRSS of an idle kubemark v1.20.2 here: 76-80 MB), with
/// room for its pods.
pub const HOLLOW_NODE_BYTES: u64 = 100 << 20;

impl Options {
    pub fn from_env() -> Result<Options, String> {
        let secs = |k: &str, d: u64| env_u64(k, d).map(Duration::from_secs);
        let nodes = env_u64("NODES", 100)? as usize;
        if nodes < 2 {
            return Err("NODES must be at least 2 (half the fleet loses its uplink)".into());
        }
        let wanted = env_u64("KUBEMARK_NODES", nodes as u64)? as usize;
        Ok(Options {
            nodes,
            kubemark_nodes: wanted.min(hollow_nodes_that_fit()).max(2),
            pods_per_node: env_u64("FLEET_PODS_PER_NODE", 4)? as usize,
            idle: secs("FLEET_IDLE_SECS", 600)?,
            baseline: secs("FLEET_BASELINE_SECS", 300)?,
            settle: secs("FLEET_SETTLE_SECS", 60)?,
            cut: secs("FLEET_CUT_SECS", 120)?,
            wait: secs("FLEET_WAIT_SECS", 600)?,
            kinds: kinds()?,
            agent: agent_binary(),
        })
    }

    /// The node count of a fleet.
    pub fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Tinylet => self.nodes,
            Kind::Kubemark => self.kubemark_nodes,
        }
    }
}

fn kinds() -> Result<Vec<Kind>, String> {
    let v = std::env::var("FLEET_KINDS").unwrap_or_else(|_| "tinylet,kubemark".into());
    v.split(',')
        .map(|k| match k.trim() {
            "tinylet" => Ok(Kind::Tinylet),
            "kubemark" => Ok(Kind::Kubemark),
            other => Err(format!(
                "FLEET_KINDS: {other:?} is neither tinylet nor kubemark"
            )),
        })
        .collect()
}

fn agent_binary() -> PathBuf {
    let from = |k: &str| std::env::var_os(k).map(PathBuf::from);
    from("TINYLET_MUSL_BIN")
        .or_else(|| from("TINYLET_BIN"))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/tinylet"))
}

/// How many hollow nodes half of the machine's available memory holds.
fn hollow_nodes_that_fit() -> usize {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024;
    (available / 2 / HOLLOW_NODE_BYTES) as usize
}
