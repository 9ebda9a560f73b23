//! A fleet: N nodes of one kind, each with its identity, directory, kubelet port and
//! relay (the first half behind relay 0, the rest behind relay 1, so half the fleet can
//! lose its uplink), and for tinylet the runtime host serving their fake runtimes.

use crate::agents::{Agents, Usage};
use crate::common::kube::Kube;
use crate::identities::{self, NodeFiles};
use crate::options::Kind;
use crate::runtimes::RuntimeHost;
use crate::{hollow_node, tinylet_node};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where a fleet's kubelet ports start looking (below the ephemeral range, so no
/// outgoing connection takes one).
const FIRST_PORT: u16 = 14000;

pub struct Fleet {
    pub kind: Kind,
    pub names: Vec<String>,
    pub agents: Agents,
    pub host: Option<RuntimeHost>,
    dir: PathBuf,
    ports: Vec<u16>,
}

/// Which relay node `i` of `count` goes through.
pub fn half(i: usize, count: usize) -> usize {
    usize::from(i >= count / 2)
}

impl Fleet {
    /// Everything but the agents: identities, kubeconfigs, ports, the runtimes.
    pub fn prepare(
        kube: &Kube,
        kind: Kind,
        count: usize,
        dir: &Path,
        relays: [&str; 2],
    ) -> Result<Fleet, String> {
        let names: Vec<String> = (1..=count)
            .map(|i| format!("{}-{i:04}", kind.prefix()))
            .collect();
        identities::make(kube, &names);
        for (i, name) in names.iter().enumerate() {
            let d = dir.join(name);
            std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            NodeFiles::of(kube, name).kubeconfig(relays[half(i, count)], &d.join("kubeconfig"))?;
        }
        let host = match kind {
            Kind::Tinylet => Some(RuntimeHost::start(&dir.join("runtimes"), count)?),
            Kind::Kubemark => None,
        };
        Ok(Fleet {
            kind,
            ports: free_ports(count)?,
            names,
            agents: Agents::default(),
            host,
            dir: dir.to_path_buf(),
        })
    }

    /// Starts every agent (`bin`: tinylet or kubemark); returns when the first started.
    pub fn start(&mut self, kube: &Kube, bin: &Path) -> Result<Instant, String> {
        let t0 = Instant::now();
        for (i, name) in self.names.iter().enumerate() {
            let d = self.dir.join(name);
            let kubeconfig = d.join("kubeconfig");
            match &self.host {
                Some(host) => {
                    let setup = tinylet_node::NodeSetup {
                        name,
                        dir: &d,
                        runtime_endpoint: host.endpoint(i),
                        kubeconfig: &kubeconfig,
                        port: self.ports[i],
                        serving: NodeFiles::of(kube, name).serving(),
                    };
                    tinylet_node::start(&mut self.agents, bin, &setup)?;
                }
                None => {
                    hollow_node::start(&mut self.agents, bin, name, &d, &kubeconfig, self.ports[i])?
                }
            }
        }
        Ok(t0)
    }

    /// The names of the nodes behind relay `r`.
    pub fn behind(&self, r: usize) -> Vec<String> {
        let n = self.names.len();
        self.names
            .iter()
            .enumerate()
            .filter(|(i, _)| half(*i, n) == r)
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// The agents' usage now, and the runtime host's (CPU since its start, VmRSS KiB).
    pub fn usage(&self) -> (Usage, Option<(Duration, u64)>) {
        (
            self.agents.usage(),
            self.host.as_ref().map(RuntimeHost::usage),
        )
    }

    /// Stops the agents (SIGTERM, then SIGKILL after 10 s) and the runtimes.
    pub fn stop(&mut self) {
        self.agents.stop(Duration::from_secs(10));
        self.host = None;
    }
}

/// `count` TCP ports nobody listens on, from [`FIRST_PORT`] up.
fn free_ports(count: usize) -> Result<Vec<u16>, String> {
    let mut out = Vec::with_capacity(count);
    let mut p = FIRST_PORT;
    while out.len() < count {
        if std::net::TcpListener::bind(("0.0.0.0", p)).is_ok() {
            out.push(p);
        }
        p = p
            .checked_add(1)
            .filter(|p| *p < 32768)
            .ok_or("no free ports left below 32768 for the kubelet APIs")?;
    }
    Ok(out)
}
