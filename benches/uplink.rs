//! `make bench`, cluster uplink part (`make bench-uplink`): the release agent joined as a
//! Node to the project's real control plane (tests/harness/kube.sh: kube-apiserver
//! v1.20.2, etcd, controller-manager, scheduler; Node authorizer and NodeRestriction on),
//! on a private containerd (tests/harness/containerd.sh), measured from outside as an
//! operator would see it, beside the project's targets and kubelet v1.20's figures
//! (a real kubelet v1.20 measured against the same control plane and containerd).
//!
//! The agent is the static musl build (TINYLET_MUSL_BIN, made by `make bench-uplink`
//! when a static toolchain is here) else TINYLET_BIN (default target/release/tinylet),
//! with the default features (`uplink` on). Its kubeconfig (node identity
//! `system:node:bench-node`) points at a counting TCP relay in this process
//! (benches/uplink/relay.rs), so the uplink's bytes are counted on the wire (TLS
//! records, both directions) and the link can be cut. What the cluster sees comes from a
//! watch of the bench namespace's pods as admin (benches/uplink/watch.rs): times are
//! when the API server's events arrive, not a polling period. Pods: host-network busybox
//! `sleep`, `spec.nodeName` set, `automountServiceAccountToken: false` (projected
//! service-account volumes are not run yet), every taint tolerated; `plegPeriod: 1s`.
//!
//! Phases, in order:
//! 1. The agent registers the Node (Ready in the API), settles: RSS (VmHWM/VmRSS/RssAnon)
//!    with 0 pods; again once it is idle, past its first trim of its code pages
//!    (`tinylet::code_pages`; the idle figures, at the end of each idle window too, are
//!    the ones held against the targets).
//! 2. A warm-up pod created, Running, deleted. 20 pods created one at a time
//!    (`kubectl create -f`), each awaited: from its ADDED event to the event showing it
//!    Running and Ready (time from the kubectl launch beside it). RSS at 20 pods.
//! 3. 20 pods idle for TINYLET_BENCH_UPLINK_SECS (default 300): relay bytes both ways
//!    scaled to an hour, CPU (utime+stime), threads, state-directory writes. Then the
//!    kubelet API's streams (the node serves it with a certificate the cluster
//!    CA signed): RSS with 0 exec streams, with 10 `kubectl exec -i POD -- cat` sessions
//!    open through the API server (each seen echoing; quiet while measured), and after
//!    they closed.
//! 4. 20 pods created at once (one `kubectl create -f DIR`): from the kubectl launch to
//!    all Running and Ready in the API. 10 more; RSS at 50 pods; 50 pods idle for the
//!    same window: CPU, threads, bytes, state-directory writes.
//! 5. 5 containers killed one after the other (`ctr tasks kill -s SIGKILL`): from ctr
//!    returning to `restartCount: 1` in the API (target plegPeriod + 200 ms + the patch:
//!    "ok" up to plegPeriod + 300 ms).
//! 6. The 30 pods of phase 4 deleted (`kubectl delete`, the node's deletion handshake).
//!    Reboot without uplink: relay cut, agent SIGKILLed, containerd rebooted (the
//!    harness's `reboot`: containers and /run state gone), agent started: time until all
//!    20 pods' status files show them Running with new containers. Relay restored: time
//!    until the API shows all 20 Running with those container IDs (and until the agent
//!    reconnected: its client's back-off, 1-30 s, decides when it tries again).
//!
//! Everything (agent, relay, watch, containerd with its pods, the control plane) is torn
//! down at the end, also when a phase fails (Drop; the harness's watchdog when the
//! process dies).

#[path = "../tests/common/mod.rs"]
mod common;

#[path = "agent/figures.rs"]
mod figures;
#[path = "agent/node.rs"]
#[allow(dead_code)]
mod node;
#[path = "agent/procfs.rs"]
mod procfs;

#[path = "uplink/cluster.rs"]
mod cluster;
#[path = "uplink/relay.rs"]
#[allow(dead_code)]
mod relay;
#[path = "uplink/streams.rs"]
mod streams;
#[path = "uplink/watch.rs"]
mod watch;

use common::kube::Kube;
use common::Containerd;
use figures::{env_u64, pct, verdict, FIRST_TRIM_WAIT};
use node::{Node, NS};
use relay::{Bytes, Relay};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use watch::{container_id, restart_count, running_ready, PodWatch};

/// The node's name (config `nodeName`, set by node.rs) and identity.
const NODE: &str = "bench-node";
const PLEG: Duration = Duration::from_secs(1);
const SETTLE: Duration = Duration::from_secs(5);
const ONE_BY_ONE: usize = 20;
const AT_ONCE: usize = 20;
const TOTAL: usize = 50;
const KILLS: usize = 5;
/// Exec streams held open for the memory figure.
const STREAMS: usize = 10;
const WAIT: Duration = Duration::from_secs(60);
const MIB: f64 = 1024.0 * 1024.0;

/// Memory at one pod count, KiB.
#[derive(Default)]
struct Mem {
    pods: usize,
    hwm: u64,
    rss: u64,
    anon: u64,
}

/// What an idle window measured.
#[derive(Default)]
struct Window {
    pods: usize,
    dur: Duration,
    bytes: Bytes,
    cpu: Duration,
    threads: (usize, Vec<String>),
    writes: (Vec<PathBuf>, u64),
    /// Memory at the window's end: idle, past a trim of the code pages.
    idle: Mem,
}

#[derive(Default)]
struct Report {
    agent: String,
    runtime: String,
    mem: Vec<Mem>,
    /// ADDED -> Running and Ready, and kubectl launched -> Running and Ready.
    create: Vec<Duration>,
    create_cli: Vec<Duration>,
    /// kubectl launched -> all Running; kubectl's own run.
    bulk: Duration,
    bulk_cli: Duration,
    windows: Vec<Window>,
    restarts: Vec<Duration>,
    /// Memory at 0 pods once the agent is idle (past its first trim).
    idle0: Option<Mem>,
    /// RSS at 20 pods with 0, then [`STREAMS`], then again 0 exec streams open.
    streams: Vec<Mem>,
    reboot_local: Duration,
    uplink_back: Duration,
    reconnect: Option<Duration>,
}

fn main() {
    figures::bench_main("bench-uplink", "bench-uplink", run);
}

fn run() -> Result<(), String> {
    let secs = env_u64("TINYLET_BENCH_UPLINK_SECS", 300)?;
    let bin = agent_binary()?;
    let mut r = Report {
        agent: bin.display().to_string(),
        ..Default::default()
    };
    eprintln!("bench-uplink: starting the control plane and containerd");
    let kube = Kube::start();
    let ctd = Containerd::start();
    r.runtime = runtime_version(&ctd);
    cluster::namespace(&kube);
    let mut relay = Relay::start(cluster::api_addr(kube.api_url())?)?;
    let dir = ctd.dir().join("bench-uplink");
    let mut node = cluster::joined_node(&kube, &ctd, &relay.url(), &bin, &dir, NODE, 2 * STREAMS)?;
    let pods = PodWatch::start(cluster::admin(&kube), NS);
    let b = Bench {
        kube: &kube,
        ctd: &ctd,
        pods: &pods,
        image: ctd.test_image().to_string(),
        dir,
    };
    let pid = node.start_agent(&bin)?;
    node.wait_ready(WAIT)?;
    cluster::wait_node_ready(&kube, NODE, WAIT).map_err(|e| with_log(&node, e))?;
    std::thread::sleep(SETTLE);
    r.mem.push(mem(pid, 0)?);
    node::wait_trims(node.status, 1, FIRST_TRIM_WAIT)?;
    r.idle0 = Some(mem(pid, 0)?);

    eprintln!("bench-uplink: warm-up pod, then {ONE_BY_ONE} pods one at a time");
    b.warm_up(&node)?;
    for i in 0..ONE_BY_ONE {
        let (api, cli) = b.create_one(&node, i)?;
        r.create.push(api);
        r.create_cli.push(cli);
    }
    std::thread::sleep(SETTLE);
    r.mem.push(mem(pid, ONE_BY_ONE)?);
    eprintln!("bench-uplink: {ONE_BY_ONE} pods idle for {secs} s");
    r.windows
        .push(window(&node, pid, &relay, ONE_BY_ONE, secs)?);
    eprintln!("bench-uplink: {STREAMS} exec streams open at {ONE_BY_ONE} pods");
    r.streams.push(mem(pid, 0)?);
    let execs = streams::Execs::open(&kube, &pod_name(0), STREAMS, WAIT).map_err(|e| {
        let log = std::fs::read_to_string(node.dir.join("agent.log")).unwrap_or_default();
        let api: Vec<&str> = log.lines().filter(|l| l.contains("kubelet API")).collect();
        format!("{e}\nagent log, kubelet API lines:\n{}", api.join("\n"))
    })?;
    std::thread::sleep(SETTLE);
    r.streams.push(mem(pid, STREAMS)?);
    execs.close();
    std::thread::sleep(SETTLE);
    r.streams.push(mem(pid, 0)?);

    eprintln!(
        "bench-uplink: {AT_ONCE} pods at once, then {} more",
        TOTAL - ONE_BY_ONE - AT_ONCE
    );
    (r.bulk, r.bulk_cli) = b.create_batch(&node, "bulk", ONE_BY_ONE..ONE_BY_ONE + AT_ONCE)?;
    b.create_batch(&node, "bulk", ONE_BY_ONE + AT_ONCE..TOTAL)?;
    std::thread::sleep(SETTLE);
    r.mem.push(mem(pid, TOTAL)?);
    eprintln!("bench-uplink: {TOTAL} pods idle for {secs} s");
    r.windows.push(window(&node, pid, &relay, TOTAL, secs)?);

    eprintln!("bench-uplink: {KILLS} containers killed");
    for i in 0..KILLS {
        r.restarts.push(b.kill_one(&node, &pod_name(i))?);
    }
    eprintln!("bench-uplink: reboot without uplink ({ONE_BY_ONE} pods)");
    cluster::delete_batch(&kube, "bulk")?;
    pods.wait("the bulk pods deleted", WAIT, |p| {
        (p.len() == ONE_BY_ONE).then_some(())
    })
    .map_err(|e| with_log(&node, e))?;
    b.reboot(&mut node, &mut relay, &bin, &mut r)?;

    node.stop_agent();
    drop(pods);
    drop(relay);
    drop(ctd);
    drop(kube);
    print_report(&r, secs);
    Ok(())
}

/// The handles every phase uses.
struct Bench<'a> {
    kube: &'a Kube,
    ctd: &'a Containerd,
    pods: &'a PodWatch,
    image: String,
    dir: PathBuf,
}

impl Bench<'_> {
    /// One pod through the whole path (image snapshot, first sandbox, first patches),
    /// then deleted through the node's handshake.
    fn warm_up(&self, node: &Node) -> Result<(), String> {
        let pod = cluster::pod(NODE, &self.image, "warm-up", "warm");
        let file = self.dir.join("warm-up.json");
        std::fs::write(&file, pod.to_string()).map_err(|e| e.to_string())?;
        cluster::create(self.kube, &file)?;
        self.pods
            .wait("warm-up Running", WAIT, |p| {
                p.get("warm-up")
                    .filter(|s| running_ready(&s.pod))
                    .map(|_| ())
            })
            .map_err(|e| with_log(node, e))?;
        cluster::delete_batch(self.kube, "warm")?;
        self.pods
            .wait("warm-up deleted", WAIT, |p| {
                (!p.contains_key("warm-up")).then_some(())
            })
            .map_err(|e| with_log(node, e))
    }

    /// Creates pod `i` and waits until the API shows it Running and Ready: from its
    /// ADDED event, and from the kubectl launch.
    fn create_one(&self, node: &Node, i: usize) -> Result<(Duration, Duration), String> {
        let name = pod_name(i);
        let file = self.dir.join(format!("{name}.json"));
        let pod = cluster::pod(NODE, &self.image, &name, "one");
        std::fs::write(&file, pod.to_string()).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        cluster::create(self.kube, &file)?;
        let seen = self
            .pods
            .wait(&format!("{name} Running and Ready"), WAIT, |p| {
                p.get(&name).filter(|s| running_ready(&s.pod)).cloned()
            })
            .map_err(|e| with_log(node, e))?;
        Ok((seen.at - seen.added, seen.at - t0))
    }

    /// Creates pods `range` with one `kubectl create -f DIR` (label `bench=BATCH`); returns
    /// the time from the kubectl launch until all are Running and Ready in the API, and
    /// kubectl's own time.
    fn create_batch(
        &self,
        node: &Node,
        batch: &str,
        range: std::ops::Range<usize>,
    ) -> Result<(Duration, Duration), String> {
        let names: Vec<String> = range.map(pod_name).collect();
        let pods: Vec<Value> = names
            .iter()
            .map(|n| cluster::pod(NODE, &self.image, n, batch))
            .collect();
        let dir = self.dir.join(format!("{batch}-{}", names[0]));
        cluster::write_pods(&dir, &pods)?;
        let t0 = Instant::now();
        cluster::create(self.kube, &dir)?;
        let cli = t0.elapsed();
        let what = format!(
            "{} .. {} all Running and Ready",
            names[0],
            names[names.len() - 1]
        );
        let last = self
            .pods
            .wait(&what, WAIT, |p| {
                let seen: Option<Vec<Instant>> = names
                    .iter()
                    .map(|n| p.get(n).filter(|s| running_ready(&s.pod)).map(|s| s.at))
                    .collect();
                seen.and_then(|s| s.into_iter().max())
            })
            .map_err(|e| with_log(node, e))?;
        Ok((last - t0, cli))
    }

    /// Kills the container of pod `name`; time from ctr returning until the API shows
    /// restartCount 1.
    fn kill_one(&self, node: &Node, name: &str) -> Result<Duration, String> {
        let id = self
            .pods
            .pods()
            .get(name)
            .and_then(|s| container_id(&s.pod["status"]))
            .ok_or_else(|| format!("{name}: no containerID in the API"))?;
        self.ctd
            .ctr_ok(&["-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", &id]);
        let t0 = Instant::now();
        let seen = self
            .pods
            .wait(&format!("{name} restartCount 1"), WAIT, |p| {
                p.get(name).filter(|s| restart_count(&s.pod) >= 1).cloned()
            })
            .map_err(|e| with_log(node, e))?;
        Ok(seen.at.saturating_duration_since(t0))
    }

    /// Phase 6 (see the header).
    fn reboot(
        &self,
        node: &mut Node,
        relay: &mut Relay,
        bin: &Path,
        r: &mut Report,
    ) -> Result<(), String> {
        let names: Vec<String> = (0..ONE_BY_ONE).map(pod_name).collect();
        let seen = self.pods.pods();
        let before: Vec<String> = names
            .iter()
            .filter_map(|n| seen.get(n).and_then(|s| container_id(&s.pod["status"])))
            .collect();
        if before.len() != names.len() {
            return Err(format!(
                "reboot: only {} of {} pods have a containerID in the API",
                before.len(),
                names.len()
            ));
        }
        relay.cut();
        node.stop_agent();
        self.ctd.reboot();
        let t0 = Instant::now();
        node.start_agent(bin)?;
        let mut new = Vec::new();
        for n in &names {
            let until = t0 + WAIT;
            let id = loop {
                if let Some(id) = local_running(node, n).filter(|id| !before.contains(id)) {
                    break id;
                }
                if Instant::now() > until {
                    return Err(with_log(
                        node,
                        format!("reboot without uplink: {n} not Running with a new container within {WAIT:?}"),
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            new.push(id);
        }
        r.reboot_local = t0.elapsed();
        relay.restore()?;
        let t1 = Instant::now();
        let log = node.dir.join("agent.log");
        let connects = |path: &Path| {
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .matches("API server: connected")
                .count()
        };
        let connected_before = connects(&log);
        let timeout = Duration::from_secs(120);
        let what = "all pods Running with their new containers after the uplink came back";
        let current = |p: &watch::Pods| {
            let at: Option<Vec<Instant>> = names
                .iter()
                .zip(&new)
                .map(|(n, id)| {
                    p.get(n)
                        .filter(|s| running_ready(&s.pod))
                        .filter(|s| container_id(&s.pod["status"]).as_ref() == Some(id))
                        .map(|s| s.at)
                })
                .collect();
            at.and_then(|a| a.into_iter().max())
        };
        // Short waits, so the reconnection is seen in the log as it happens.
        let last = loop {
            if r.reconnect.is_none() && connects(&log) > connected_before {
                r.reconnect = Some(t1.elapsed());
            }
            match self.pods.wait(what, Duration::from_millis(20), current) {
                Ok(at) => break at,
                Err(e) if t1.elapsed() > timeout => {
                    let e = format!("not within {timeout:?} ({e})");
                    return Err(with_log(node, e));
                }
                Err(_) => {}
            }
        };
        r.uplink_back = last.saturating_duration_since(t1);
        Ok(())
    }
}

/// The container ID of pod `name` when its status file shows it Running with a running
/// container.
fn local_running(node: &Node, name: &str) -> Option<String> {
    let path = node
        .state_dir
        .join("status")
        .join(format!("{NS}_{name}.json"));
    let v: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let c = &v["containerStatuses"][0];
    (v["phase"] == "Running" && c["state"]["running"].is_object())
        .then(|| container_id(&v))
        .flatten()
}

fn pod_name(i: usize) -> String {
    format!("pod-{i:02}")
}

/// Adds the `apiServer` section to the node's config: the kubeconfig, and the kubelet
/// API on a free port with `serving` (key, certificate), room for the exec streams
/// (`maxStreams`, default 8).
/// containerd's version as `ctr version` reports the server.
fn runtime_version(ctd: &Containerd) -> String {
    let out = ctd.ctr_ok(&["version"]);
    let server = out.split("Server:").nth(1).unwrap_or_default();
    let v = server
        .lines()
        .find_map(|l| l.trim().strip_prefix("Version:"))
        .unwrap_or("?");
    format!("containerd {}", v.trim())
}

/// The agent: TINYLET_MUSL_BIN, else TINYLET_BIN, else this checkout's release build.
fn agent_binary() -> Result<PathBuf, String> {
    let bin = std::env::var_os("TINYLET_MUSL_BIN")
        .or_else(|| std::env::var_os("TINYLET_BIN"))
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/tinylet"),
            PathBuf::from,
        );
    if !bin.is_file() {
        return Err(format!(
            "{}: no agent binary; run `cargo build --release` (make bench-uplink does)",
            bin.display()
        ));
    }
    Ok(bin)
}

fn mem(pid: u32, pods: usize) -> Result<Mem, String> {
    Ok(Mem {
        pods,
        hwm: procfs::vm_kib(pid, "VmHWM:")?,
        rss: procfs::vm_kib(pid, "VmRSS:")?,
        anon: procfs::vm_kib(pid, "RssAnon:")?,
    })
}

/// `pods` pods idle for `secs`: relay bytes, CPU, threads, state-dir writes.
fn window(node: &Node, pid: u32, relay: &Relay, pods: usize, secs: u64) -> Result<Window, String> {
    let before = procfs::snapshot(&node.state_dir);
    let bytes0 = relay.bytes();
    let cpu0 = procfs::cpu_time(pid)?;
    let t0 = Instant::now();
    let mut threads = procfs::threads(pid)?;
    let dur = Duration::from_secs(secs);
    while t0.elapsed() < dur {
        std::thread::sleep(Duration::from_secs(1).min(dur));
        let now = procfs::threads(pid)
            .map_err(|e| with_log(node, format!("the agent died in the idle window: {e}")))?;
        if now.0 > threads.0 {
            threads = now;
        }
    }
    let bytes1 = relay.bytes();
    Ok(Window {
        pods,
        cpu: procfs::cpu_time(pid)?.saturating_sub(cpu0),
        dur: t0.elapsed(),
        bytes: Bytes {
            up: bytes1.up - bytes0.up,
            down: bytes1.down - bytes0.down,
            connections: bytes1.connections - bytes0.connections,
        },
        threads,
        writes: procfs::writes(&before, &procfs::snapshot(&node.state_dir)),
        idle: mem(pid, pods)?,
    })
}

fn with_log(node: &Node, e: String) -> String {
    format!("{e}\nagent log (last lines):\n{}", node.log_tail())
}

fn max(v: &[Duration]) -> Duration {
    v.iter().max().copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn print_report(r: &Report, secs: u64) {
    println!(
        "\ntinylet uplink bench: kube-apiserver v1.20.2 (tests/harness), {}, plegPeriod {PLEG:?}, \
         idle windows {secs} s\nagent: {}\n[kubelet v1.20 in brackets]",
        r.runtime, r.agent
    );
    let row = |m: &str, v: String, t: &str, k: &str, ok: &str| {
        println!("{m:<44} {v:>26}  {t:<24} {k:<18} {ok}");
    };
    row("metric", "value".into(), "target", "[kubelet]", "");
    let kubelet_mem = ["[97 MB]", "[107 MB]", "[117 MB]"];
    for (m, k) in r.mem.iter().zip(kubelet_mem) {
        let mib = |k: u64| k as f64 / 1024.0;
        row(
            &format!("RSS, {} pods, {SETTLE:?} after: peak/now (anon)", m.pods),
            format!(
                "{:.2} / {:.2} ({:.2}) MiB",
                mib(m.hwm),
                mib(m.rss),
                mib(m.anon)
            ),
            "-",
            k,
            "",
        );
    }
    let idle = r.idle0.iter().chain(r.windows.iter().map(|w| &w.idle));
    for (m, k) in idle.zip(["[97 MB]", "[107 MB]", "[117 MB]"]) {
        let mib = |k: u64| k as f64 / 1024.0;
        let target = match m.pods {
            0 => Some(2.5),
            TOTAL => Some(4.0),
            _ => None,
        };
        row(
            &format!("RSS idle, {} pods: now (anon / file)", m.pods),
            format!(
                "{:.2} ({:.2} / {:.2}) MiB",
                mib(m.rss),
                mib(m.anon),
                mib(m.rss - m.anon)
            ),
            &target.map_or("-".into(), |t| format!("<= {t} MiB")),
            k,
            target.map_or("", |t| verdict(mib(m.rss) <= t)),
        );
    }
    print_streams(r);
    let half = Duration::from_millis(500);
    row(
        &format!("create->Running+Ready p50/max ({})", r.create.len()),
        format!("{} / {}", ms(pct(&r.create, 50)), ms(max(&r.create))),
        "<= 500 ms",
        "[1.51 s]",
        verdict(max(&r.create) <= half),
    );
    row(
        "  same, from the kubectl launch p50/max",
        format!(
            "{} / {}",
            ms(pct(&r.create_cli, 50)),
            ms(max(&r.create_cli))
        ),
        "",
        "",
        "",
    );
    row(
        &format!("{AT_ONCE} at once -> all Running+Ready"),
        format!("{} (kubectl {})", ms(r.bulk), ms(r.bulk_cli)),
        "<= 3 s",
        "[12.0 s]",
        verdict(r.bulk <= Duration::from_secs(3)),
    );
    for w in &r.windows {
        let s = w.dur.as_secs_f64().max(1e-9);
        let per_hour = |b: u64| b as f64 * 3600.0 / s;
        let total = per_hour(w.bytes.up + w.bytes.down);
        let steady = w.pods == ONE_BY_ONE;
        row(
            &format!("uplink bytes/h, {} pods (up + down)", w.pods),
            format!(
                "{:.3} MiB ({:.0} + {:.0} KiB)",
                total / MIB,
                per_hour(w.bytes.up) / 1024.0,
                per_hour(w.bytes.down) / 1024.0
            ),
            if steady { "<= 0.5 MiB/h" } else { "-" },
            if steady { "[2.15 MB/h]" } else { "" },
            if steady {
                verdict(total <= 0.5 * MIB)
            } else {
                ""
            },
        );
        if w.bytes.connections > 0 {
            println!(
                "  {} new uplink connection(s) in the window",
                w.bytes.connections
            );
        }
        let cpu = w.cpu.as_secs_f64() / s * 100.0;
        let at50 = w.pods == TOTAL;
        row(
            &format!("CPU idle, {} pods", w.pods),
            format!("{cpu:.3} % ({} ms)", w.cpu.as_millis()),
            if at50 { "<= 0.2 % of one core" } else { "-" },
            if at50 { "[3.6 %]" } else { "[2.0 %]" },
            if at50 { verdict(cpu <= 0.2) } else { "" },
        );
        row(
            &format!("threads, {} pods (max seen)", w.pods),
            format!("{} ({})", w.threads.0, w.threads.1.join(", ")),
            "2",
            "",
            verdict(w.threads.0 == 2),
        );
        let (files, bytes) = &w.writes;
        row(
            &format!("state-dir writes, {} pods idle", w.pods),
            format!("{} files, {bytes} B", files.len()),
            "0",
            "",
            verdict(files.is_empty()),
        );
        for f in files {
            println!("  changed: {}", f.display());
        }
    }
    let limit = PLEG + Duration::from_millis(300);
    row(
        &format!(
            "kill -> restartCount 1 in API p50/max ({})",
            r.restarts.len()
        ),
        format!("{} / {}", ms(pct(&r.restarts, 50)), ms(max(&r.restarts))),
        "<= pleg + 200 ms + patch",
        "[1.73 s]",
        verdict(max(&r.restarts) <= limit),
    );
    row(
        &format!("reboot, no uplink -> {ONE_BY_ONE} pods Running"),
        ms(r.reboot_local),
        "<= 10 s",
        "[none]",
        verdict(r.reboot_local <= Duration::from_secs(10)),
    );
    row(
        "uplink back -> API shows all new containers",
        ms(r.uplink_back),
        "<= 5 s",
        "[7-25 s]",
        verdict(r.uplink_back <= Duration::from_secs(5)),
    );
    row(
        "  of which: until the agent reconnected",
        r.reconnect.map_or("-".into(), ms),
        "(client back-off 1-30 s)",
        "",
        "",
    );
}

/// The kubelet API's exec streams rows: RSS at 20 pods with 0 and [`STREAMS`] open (the
/// `pods` field of `r.streams` holds the stream count), and what one costs.
fn print_streams(r: &Report) {
    let mib = |k: u64| k as f64 / 1024.0;
    for (i, m) in r.streams.iter().enumerate() {
        let when = if i == 2 { ", after" } else { "" };
        println!(
            "{:<44} {:>26}",
            format!(
                "RSS, {ONE_BY_ONE} pods, {} exec streams{when}: peak/now (anon)",
                m.pods
            ),
            format!(
                "{:.2} / {:.2} ({:.2}) MiB",
                mib(m.hwm),
                mib(m.rss),
                mib(m.anon)
            )
        );
    }
    if let [zero, open, ..] = r.streams.as_slice() {
        // The anonymous part: the file-backed part moves with the trims of the code
        // pages (tinylet::code_pages), which may fall between the two readings.
        let each = open.anon.saturating_sub(zero.anon) as f64 / STREAMS as f64;
        println!(
            "{:<44} {:>26}",
            "  per open exec stream (RssAnon delta / 10)",
            format!("{each:.1} KiB")
        );
    }
}
