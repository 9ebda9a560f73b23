//! `make bench-fleet`: what a fleet of nodes costs the control plane, tinylet beside
//! Kubernetes' own hollow node (kubemark v1.20.2, kubelet's code on a fake runtime), on
//! one control plane (tests/harness/kube.sh: kube-apiserver, etcd, controller-manager,
//! scheduler v1.20.2, Node authorizer and NodeRestriction on). Not part of `make bench`
//! nor of CI: it takes about an hour with the defaults and prints numbers.
//!
//! The fleets, one after the other on the same control plane:
//! - `NODES` (default 100) tinylet agents (the release build; the static musl one when
//!   `make` built it), each a process with its own identity (client and serving
//!   certificates the cluster CA signed), state directory, kubelet API port, and its own
//!   in-memory CRI runtime (tests/cri_fake/runtime/, real gRPC on a Unix socket; pods
//!   "run" without processes); all runtimes served by one thread of one process, this
//!   binary in another role (benches/fleet/runtimes.rs), measured apart.
//! - `KUBEMARK_NODES` (default `NODES`, fewer when half the machine's free memory cannot
//!   hold them: a hollow node takes ~80 MB) hollow nodes, `kubemark --morph=kubelet`,
//!   each in a mount namespace of its own (benches/fleet/hollow_node.rs says why).
//!
//! Every node reaches the API server through one of two counting relays (the first
//! half through one, the rest through the other): the bytes are counted on the wire,
//! and half the fleet can lose its uplink. What the cluster shows comes from watches as
//! admin (benches/fleet/view.rs); the control plane's figures from /proc and the API
//! server's and etcd's /metrics (benches/fleet/sample.rs).
//!
//! Phases of each fleet (benches/fleet/phases.rs): start → all Nodes registered and
//! Ready; a DaemonSet and `FLEET_PODS_PER_NODE` (4) pods per node, all Ready; settle
//! (`FLEET_SETTLE_SECS`, 60), then the idle window (`FLEET_IDLE_SECS`, 600); the API
//! server restarted (SIGTERM, its graceful shutdown, started again): until every node
//! renewed its Lease with the new server and is Ready, the first minute's requests (a
//! renewal the new server took before its /readyz said ok counts as back at ready:
//! measured from ready only, that node would show its next renewal, an interval
//! later); the DaemonSet's image
//! changed: until every node runs the new pod; half the fleet's relay cut for
//! `FLEET_CUT_SECS` (120) and restored: until those nodes and every pod are back. Before
//! the fleets, the control plane alone for `FLEET_BASELINE_SECS` (300): subtracted from
//! the fleets' idle figures. `FLEET_WAIT_SECS` (600) bounds every wait; `FLEET_KINDS`
//! (tinylet,kubemark) picks the fleets. A wait of the restart, the rollout or the cut
//! that runs out is printed under the tables with what was still missing, and the run
//! goes on; a fleet that fails earlier has no figures, the other's are still printed;
//! either way the bench then exits with an error.
//!
//! With hollow nodes, `fs.inotify.max_user_instances` is raised to 8192 for the run and
//! put back at the end (benches/fleet/inotify.rs).
//!
//! Everything started is stopped at the end and on failure (Drop), and when the bench
//! is killed or interrupted: the agents and the runtime host die with it
//! (PR_SET_PDEATHSIG), the harness's watchdog takes down the control plane and removes
//! the session directory holding every node's directory and socket.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/cri_fake/runtime/mod.rs"]
#[allow(unused_imports)]
mod runtime;
#[path = "../tests/cri_fake/wire.rs"]
mod wire;

#[path = "agent/figures.rs"]
#[allow(dead_code)]
mod figures;
#[path = "agent/procfs.rs"]
#[allow(dead_code)]
mod procfs;
#[path = "uplink/relay.rs"]
mod relay;

#[path = "fleet/admin.rs"]
mod admin;
#[path = "fleet/agents.rs"]
mod agents;
#[path = "fleet/hollow_node.rs"]
mod hollow_node;
#[path = "fleet/identities.rs"]
mod identities;
#[path = "fleet/inotify.rs"]
mod inotify;
#[path = "fleet/nodes.rs"]
mod nodes;
#[path = "fleet/options.rs"]
mod options;
#[path = "fleet/phases.rs"]
mod phases;
#[path = "fleet/plane.rs"]
mod plane;
#[path = "fleet/prom.rs"]
mod prom;
#[path = "fleet/report.rs"]
mod report;
#[path = "fleet/runtimes.rs"]
mod runtimes;
#[path = "fleet/sample.rs"]
mod sample;
#[path = "fleet/tinylet_node.rs"]
mod tinylet_node;
#[path = "fleet/view.rs"]
mod view;
#[path = "fleet/workload.rs"]
mod workload;

use common::kube::Kube;
use options::{Kind, Options};
use phases::Bench;
use relay::Relay;
use std::path::PathBuf;

fn main() {
    if runtimes::serve_if_asked() {
        return;
    }
    figures::bench_main("bench-fleet", "bench-fleet", run);
}

fn run() -> Result<(), String> {
    let opts = Options::from_env()?;
    if !opts.agent.is_file() {
        return Err(format!("no agent at {} (make build)", opts.agent.display()));
    }
    let kubemark = match opts.kinds.contains(&Kind::Kubemark) {
        true => Some(hollow_node::binary()?),
        false => None,
    };
    // Raised for the whole run (dropped last): the hollow nodes need it.
    let _inotify = match kubemark {
        Some(_) => Some(inotify::raise(inotify::WANTED)?),
        None => None,
    };
    eprintln!("bench-fleet: starting the control plane");
    let kube = Kube::start();
    workload::prepare(&kube);
    let api: std::net::SocketAddr = kube
        .api_url()
        .trim_start_matches("https://")
        .parse()
        .map_err(|e| format!("API server URL {}: {e}", kube.api_url()))?;
    let mut relays = [Relay::start(api)?, Relay::start(api)?];
    let view = view::View::start(kube.kubeconfig_admin(), workload::NS)?;
    let admin = admin::Admin::new(kube.kubeconfig_admin())?;
    let base = phases::baseline(&kube, &relays, opts.baseline)?;
    let dir = kube.dir().with_file_name("fleet");
    let _remove = RemoveOnDrop(dir.clone());
    let mut bench = Bench {
        kube: &kube,
        view: &view,
        admin: &admin,
        relays: &mut relays,
        opts: &opts,
        dir,
    };
    let mut outs = Vec::new();
    let mut failed = Vec::new();
    for kind in opts.kinds.clone() {
        let bin = match kind {
            Kind::Tinylet => opts.agent.clone(),
            Kind::Kubemark => kubemark.clone().unwrap_or_default(),
        };
        // A fleet that failed has no figures; the other fleet's are still printed.
        match phases::run(&mut bench, kind, &bin) {
            Ok(o) => outs.push(o),
            Err(e) => {
                eprintln!("bench-fleet: {}: failed: {e}", kind.label());
                failed.push(format!("{}: {e}", kind.label()));
            }
        }
    }
    println!("{}", heading(&opts));
    if !outs.is_empty() {
        println!("{}", report::render(&base, &outs, opts.pods_per_node + 1));
    }
    let missed = outs.iter().any(|o| !o.missed.is_empty());
    match (failed.is_empty(), missed) {
        (true, false) => Ok(()),
        (true, true) => Err("some waits ran out (above, under the tables)".into()),
        (false, _) => Err(failed.join("\n")),
    }
}

/// Date, commit, command, agent: what the README's section names.
fn heading(opts: &Options) -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let dirty = if git(&["status", "--porcelain", "--untracked-files=no"]).is_empty() {
        ""
    } else {
        " (with local changes)"
    };
    let settings: Vec<String> = std::env::vars()
        .filter(|(k, _)| k == "NODES" || k == "KUBEMARK_NODES" || k.starts_with("FLEET_"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let size = std::fs::metadata(&opts.agent).map_or(0, |m| m.len());
    format!(
        "bench-fleet, {}, commit {}{dirty}\ncommand: {}make bench-fleet\nagent: {} ({size} B)\n",
        tinylet::model::time::format_rfc3339(std::time::SystemTime::now()),
        git(&["rev-parse", "--short", "HEAD"]),
        settings.iter().map(|s| format!("{s} ")).collect::<String>(),
        opts.agent.display(),
    )
}

/// Removes the fleets' directory (node state, sockets, logs) when the bench ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
