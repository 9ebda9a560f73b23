//! `make bench-node-port` (part of make bench): the kubelet API's node port (:10250)
//! under a flood of strangers on loopback, and what the node's clients see meanwhile.
//!
//! The release agent (TINYLET_BIN, default target/release/tinylet) joins the project's
//! real control plane (tests/harness/kube.sh, v1.20.2) on a private containerd, its
//! kubelet API served with a certificate of the cluster CA. One host-network pod is
//! probed every second: an exec liveness probe (`true`, one failure restarts it) and an
//! httpGet readiness probe to a recorder in this process, which notes when each probe
//! arrives: the probes' timing as the agent keeps it. Then, for each scenario, for
//! TINYLET_BENCH_FLOOD_SECS (default 20) each:
//! - `none`: no flood (the baseline);
//! - `idle`: TCP connects that send nothing, 200 held at once from 100 addresses;
//! - `slow-tls`: a ClientHello, then silence, 200 held at once from 100 addresses;
//! - `tls-cpu`: ClientHellos as fast as the node answers them (each costs it a key
//!   exchange and a signature), from 100 addresses;
//! - `all`: the three at once.
//!
//! The flood (`tests/kapi_support/flood.rs`) is bounded in connects and time and stops
//! by itself. Meanwhile `kubectl logs` and `kubectl exec -- true` through the API server
//! run one after the other (their times and failures are reported), and the bench
//! reads the probes' intervals, liveness restarts, the agent's CPU and RSS, and the
//! kubelet API's refusal counters (handshakes failed or too slow, connections closed
//! for newcomers). TINYLET_BENCH_COMPARE_BIN names another build to run the same
//! scenarios with (e.g. main's), reported beside.

#[path = "../tests/common/mod.rs"]
mod common;

#[path = "agent/figures.rs"]
#[allow(dead_code)]
mod figures;
#[path = "../tests/kapi_support/flood.rs"]
mod flood;
#[path = "agent/node.rs"]
#[allow(dead_code)]
mod node;
#[path = "agent/procfs.rs"]
#[allow(dead_code)]
mod procfs;

#[path = "uplink/cluster.rs"]
#[allow(dead_code)]
mod cluster;
#[path = "uplink/streams.rs"]
#[allow(dead_code)]
mod streams;
#[path = "uplink/watch.rs"]
#[allow(dead_code)]
mod watch;

use common::kube::Kube;
use common::Containerd;
use figures::{env_u64, pct};
use flood::{Flood, Kind, Plan, Stats};
use node::{Node, NS};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NODE: &str = "bench-node";
const POD: &str = "probed";
const WAIT: Duration = Duration::from_secs(90);

/// What one scenario measured.
struct Scenario {
    name: &'static str,
    logs: Vec<Duration>,
    execs: Vec<Duration>,
    failures: Vec<String>,
    /// Between consecutive readiness probes.
    probe_gaps: Vec<Duration>,
    restarts: u64,
    cpu: Duration,
    rss_kib: u64,
    flood: Vec<Stats>,
    /// Connections refused by reason, during the scenario.
    refused: Vec<(String, u64)>,
}

fn main() {
    figures::bench_main("bench-node-port", "bench-node-port", run);
}

fn run() -> Result<(), String> {
    let secs = env_u64("TINYLET_BENCH_FLOOD_SECS", 20)?;
    let mut bins = vec![binary("TINYLET_BIN")?];
    if std::env::var_os("TINYLET_BENCH_COMPARE_BIN").is_some() {
        bins.push(binary("TINYLET_BENCH_COMPARE_BIN")?);
    }
    eprintln!("bench-node-port: starting the control plane and containerd");
    let kube = Kube::start();
    let ctd = Containerd::start();
    cluster::namespace(&kube);
    let probes = ProbeRecorder::start()?;
    let dir = ctd.dir().join("bench-node-port");
    let mut node = cluster::joined_node(&kube, &ctd, kube.api_url(), &bins[0], &dir, NODE, 8)?;
    let port = kubelet_port(&node)?;
    let mut reports = Vec::new();
    for bin in &bins {
        eprintln!("bench-node-port: agent {}", bin.display());
        let pid = node.start_agent(bin)?;
        node.wait_ready(WAIT)?;
        cluster::wait_node_ready(&kube, NODE, WAIT).map_err(|e| with_log(&node, e))?;
        if reports.is_empty() {
            create_probed_pod(&kube, &dir, ctd.test_image(), probes.port)?;
        }
        wait_served(&kube, &node)?;
        let mut scenarios = Vec::new();
        for (name, plans) in scenarios_of() {
            eprintln!("bench-node-port: {name} for {secs} s");
            let s = scenario(&kube, &node, pid, port, &probes, name, &plans, secs)?;
            scenarios.push(s);
        }
        reports.push((bin.clone(), scenarios));
    }
    node.stop_agent();
    drop(ctd);
    drop(kube);
    print_report(&reports, secs);
    Ok(())
}

fn binary(var: &str) -> Result<PathBuf, String> {
    let bin = std::env::var_os(var).map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/tinylet"),
        PathBuf::from,
    );
    if !bin.is_file() {
        return Err(format!("{}: no agent binary ({var})", bin.display()));
    }
    Ok(bin)
}

/// The kubelet API's port from the node's config.
fn kubelet_port(node: &Node) -> Result<u16, String> {
    let text = std::fs::read_to_string(&node.config).map_err(|e| e.to_string())?;
    let cfg: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    cfg["apiServer"]["port"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .ok_or_else(|| "no apiServer.port in the config".into())
}

/// The floods: (name, one plan per flood thread).
fn scenarios_of() -> Vec<(&'static str, Vec<Plan>)> {
    let plan = |kind, peers| Plan {
        kind,
        peers,
        held: if kind == Kind::Handshake { 1 } else { 200 },
        max_connects: 1_000_000,
        max_time: Duration::from_secs(600),
    };
    let idle = plan(Kind::Idle, (2, 101));
    let slow = plan(Kind::SlowHandshake, (102, 201));
    let cpu = plan(Kind::Handshake, (150, 249));
    vec![
        ("none", vec![]),
        ("idle", vec![idle.clone()]),
        ("slow-tls", vec![slow.clone()]),
        ("tls-cpu", vec![cpu.clone()]),
        ("all", vec![idle, slow, cpu]),
    ]
}

/// The probed pod: host network, an exec liveness probe and an httpGet readiness probe
/// to the recorder, each every second; it prints a line a second (for `kubectl logs`).
fn create_probed_pod(kube: &Kube, dir: &Path, image: &str, recorder: u16) -> Result<(), String> {
    let script = "i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done";
    let mut pod = cluster::pod(NODE, image, POD, "flood");
    let c = &mut pod["spec"]["containers"][0];
    c["command"] = json!(["sh", "-c", script]);
    c["livenessProbe"] = json!({"exec": {"command": ["true"]}, "periodSeconds": 1,
                                "timeoutSeconds": 1, "failureThreshold": 1});
    c["readinessProbe"] = json!({"httpGet": {"host": "127.0.0.1", "port": recorder,
                                              "path": "/probe"},
                                 "periodSeconds": 1, "timeoutSeconds": 1});
    let file = dir.join("probed.json");
    std::fs::write(&file, pod.to_string()).map_err(|e| e.to_string())?;
    cluster::create(kube, &file)
}

/// Waits until `kubectl logs` and `kubectl exec` reach the pod (the API server then
/// knows the node's serving certificate and the node the API server's address).
fn wait_served(kube: &Kube, node: &Node) -> Result<(), String> {
    let until = Instant::now() + WAIT;
    loop {
        let logs = kubectl(kube, &["logs", POD, "--tail=1"]);
        let exec = kubectl(kube, &["exec", POD, "--", "true"]);
        if logs.is_ok() && exec.is_ok() {
            return Ok(());
        }
        if Instant::now() > until {
            return Err(with_log(
                node,
                format!("{POD} not served through the API server: {logs:?} {exec:?}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// kubectl in the bench namespace as admin: its time, or its error.
fn kubectl(kube: &Kube, args: &[&str]) -> Result<Duration, String> {
    let t0 = Instant::now();
    let out = Command::new(kube.kubectl_path())
        .arg("--kubeconfig")
        .arg(kube.kubeconfig_admin())
        .args(["-n", NS, "--request-timeout=30s"])
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(t0.elapsed())
}

/// One scenario: the flood of `plans` for `secs`, kubectl logs and exec meanwhile.
#[allow(clippy::too_many_arguments)]
fn scenario(
    kube: &Kube,
    node: &Node,
    pid: u32,
    port: u16,
    probes: &ProbeRecorder,
    name: &'static str,
    plans: &[Plan],
    secs: u64,
) -> Result<Scenario, String> {
    let refused0 = refused(node)?;
    let restarts0 = restart_count(kube)?;
    let cpu0 = procfs::cpu_time(pid)?;
    let t0 = Instant::now();
    let flood = Flood::start(SocketAddr::from(([127, 0, 0, 1], port)), plans);
    let mut s = Scenario {
        name,
        logs: Vec::new(),
        execs: Vec::new(),
        failures: Vec::new(),
        probe_gaps: Vec::new(),
        restarts: 0,
        cpu: Duration::ZERO,
        rss_kib: 0,
        flood: Vec::new(),
        refused: Vec::new(),
    };
    let window = Duration::from_secs(secs);
    while t0.elapsed() < window {
        match kubectl(kube, &["logs", POD, "--tail=1"]) {
            Ok(t) => s.logs.push(t),
            Err(e) => s.failures.push(format!("logs: {e}")),
        }
        match kubectl(kube, &["exec", POD, "--", "true"]) {
            Ok(t) => s.execs.push(t),
            Err(e) => s.failures.push(format!("exec: {e}")),
        }
    }
    s.rss_kib = procfs::vm_kib(pid, "VmRSS:")?;
    s.flood = flood.stop();
    s.cpu = procfs::cpu_time(pid)? - cpu0;
    s.probe_gaps = probes.gaps_since(t0);
    s.restarts = restart_count(kube)?.saturating_sub(restarts0);
    let refused1 = refused(node)?;
    s.refused = refused1
        .into_iter()
        .map(|(why, n)| {
            let before = refused0.iter().find(|(w, _)| *w == why).map_or(0, |r| r.1);
            (why, n - before)
        })
        .collect();
    Ok(s)
}

/// The kubelet API's refusal counters by reason (local `/metrics`).
fn refused(node: &Node) -> Result<Vec<(String, u64)>, String> {
    let text = status_get(node.status, "/metrics")?;
    let prefix = "tinylet_kubelet_api_connections_refused_total{reason=\"";
    Ok(text
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|l| {
            let (why, n) = l.split_once("\"} ")?;
            Some((why.to_string(), n.parse().ok()?))
        })
        .collect())
}

/// A GET on the local status endpoint: the body.
fn status_get(addr: SocketAddr, path: &str) -> Result<String, String> {
    let mut c = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    write!(c, "GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n").map_err(|e| e.to_string())?;
    let mut answer = String::new();
    c.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    Ok(answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string())
}

/// The probed pod's container restarts as the API shows them.
fn restart_count(kube: &Kube) -> Result<u64, String> {
    let out = Command::new(kube.kubectl_path())
        .arg("--kubeconfig")
        .arg(kube.kubeconfig_admin())
        .args(["-n", NS, "get", "pod", POD, "-o"])
        .arg("jsonpath={.status.containerStatuses[0].restartCount}")
        .output()
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0))
}

/// An HTTP server on loopback noting when each request arrives (the agent's httpGet
/// probes) and answering 200.
struct ProbeRecorder {
    port: u16,
    seen: Arc<Mutex<Vec<Instant>>>,
}

impl ProbeRecorder {
    fn start() -> Result<ProbeRecorder, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for mut c in listener.incoming().flatten() {
                let at = Instant::now();
                let _ = c.set_read_timeout(Some(Duration::from_secs(1)));
                let mut head = [0u8; 1024];
                let _ = c.read(&mut head);
                if let Ok(mut v) = log.lock() {
                    v.push(at);
                }
                let _ = c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
                );
            }
        });
        Ok(ProbeRecorder { port, seen })
    }

    /// The gaps between probes that arrived since `t0`.
    fn gaps_since(&self, t0: Instant) -> Vec<Duration> {
        let seen = self.seen.lock().map(|v| v.clone()).unwrap_or_default();
        let at: Vec<Instant> = seen.into_iter().filter(|t| *t >= t0).collect();
        at.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

fn with_log(node: &Node, e: String) -> String {
    format!("{e}\nagent log (last lines):\n{}", node.log_tail())
}

fn ms(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e3)
}

fn print_report(reports: &[(PathBuf, Vec<Scenario>)], secs: u64) {
    println!(
        "\ntinylet node-port bench: kube-apiserver v1.20.2 (tests/harness), {secs} s per \
         scenario, probes every 1 s; times in ms (p50/p99/max)"
    );
    for (bin, scenarios) in reports {
        println!("\nagent: {}", bin.display());
        println!(
            "{:<9} {:>17} {:>17} {:>5} {:>19} {:>4} {:>6} {:>7} {:>26} refused \
             (handshake/evicted)",
            "flood",
            "kubectl logs",
            "kubectl exec",
            "fail",
            "probe gap",
            "rst",
            "cpu%",
            "RSS KiB",
            "flood connects/answered",
        );
        for s in scenarios {
            let three =
                |v: &[Duration]| format!("{}/{}/{}", ms(pct(v, 50)), ms(pct(v, 99)), ms(max(v)));
            let connects: u64 = s.flood.iter().map(|f| f.connects).sum();
            let answered: u64 = s.flood.iter().map(|f| f.answered).sum();
            let why = |w: &str| s.refused.iter().find(|r| r.0 == w).map_or(0, |r| r.1);
            println!(
                "{:<9} {:>17} {:>17} {:>5} {:>19} {:>4} {:>6.1} {:>7} {:>26} {}/{}",
                s.name,
                three(&s.logs),
                three(&s.execs),
                s.failures.len(),
                three(&s.probe_gaps),
                s.restarts,
                100.0 * s.cpu.as_secs_f64() / secs as f64,
                s.rss_kib,
                format!("{connects}/{answered}"),
                why("tls_handshake"),
                why("evicted"),
            );
            for f in s.failures.iter().take(3) {
                println!("          failure: {f}");
            }
        }
    }
}

fn max(v: &[Duration]) -> Duration {
    v.iter().max().copied().unwrap_or_default()
}
