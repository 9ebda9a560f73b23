//! `make bench`, agent part (`make bench-agent`): the release binary's `tinylet run`
//! against a private containerd (tests/harness), measured from outside as an operator
//! would see it, beside the project's targets.
//!
//! The agent measured is the static musl build of the release profile
//! (TINYLET_MUSL_BIN, `make static TARGET=x86_64-unknown-linux-musl`: the same libc and
//! linking as the device's binary) when there is one, else the glibc build
//! (TINYLET_BIN, default target/release/tinylet). With both, the glibc agent's memory is
//! measured too, for comparison: at each memory point the musl agent is replaced by the
//! glibc one, which adopts the running pods (no restart), and then back.
//!
//! The agent runs with its local status endpoint on (`statusAddress` on loopback): every
//! feature a gateway would have on, short of the cluster uplink (bench-uplink's part).
//!
//! Phases, in order (`plegPeriod: 1s`):
//! 1. Two warm-up pod starts issued directly (below), removed again.
//! 2. Agent with 0 pods: VmHWM / VmRSS / RssAnon, 3 s after it is ready and again once
//!    idle, past its first trim of its code pages (`tinylet::code_pages`). The idle
//!    figures (here and at the end of phase 5) are the ones held against the targets.
//! 3. 20 pods, one at a time, each after one direct start so both see the same machine
//!    load: the runtime alone (the agent's CRI calls for one pod - RunPodSandbox,
//!    ImageStatus, CreateContainer, StartContainer - with the agent's own config
//!    builders, issued directly; their pod-uid label renamed so the agent ignores them),
//!    then `tinylet apply`: time from apply returning to the status file showing Running
//!    with the container running (polled every 2 ms). Memory at 10 pods; the direct
//!    pods are removed after the 20th.
//! 4. 30 more pods applied at once; memory at 50 running pods.
//! 5. 50 pods idle for TINYLET_BENCH_IDLE_SECS (default 60): CPU time (utime + stime),
//!    threads, and every file in the state directory created/changed/removed (the
//!    endpoint listens, nobody asks).
//! 6. 20 rounds of GET /healthz, /metrics and /pods, a new connection each: the agent's
//!    CPU per round and its peak RSS after them.
//! 7. 5 pods whose container exits after ~1 s: time from the exit (finished_at) to the
//!    restarted container's created_at, from ContainerStatus.
//!
//! Binary sizes: the glibc agent binary, and target/cross/TRIPLE/release/tinylet for the
//! targets TINYLET_BENCH_STATIC_BUILT lists (what `make bench-agent` built this run);
//! any other target prints "not built", never the size of an older file.

#[path = "../tests/common/mod.rs"]
mod common;

#[path = "agent/direct.rs"]
mod direct;
#[path = "agent/figures.rs"]
mod figures;
#[path = "agent/node.rs"]
mod node;
#[path = "agent/procfs.rs"]
mod procfs;

use common::Containerd;
use figures::{env_u64, pct, verdict};
use node::Node;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tinylet::config::Config;
use tinylet::cri::CriClient;
use tinylet::kuberuntime::dns::parse_resolv_conf;
use tinylet::rt;

const PLEG: Duration = Duration::from_secs(1);
const SETTLE: Duration = Duration::from_secs(3);
const LATENCY_PODS: usize = 20;
const TOTAL_PODS: usize = 50;
const CRASH_PODS: usize = 5;
const SCRAPES: u32 = 20;
const STATIC_TARGETS: [&str; 3] = [
    "x86_64-unknown-linux-musl",
    "aarch64-unknown-linux-musl",
    "armv7-unknown-linux-musleabihf",
];
const MIB: f64 = 1024.0 * 1024.0;

/// Memory of the agent at one pod count, KiB.
struct Mem {
    /// Which build ("musl static", "glibc").
    build: &'static str,
    /// The agent adopted the pods after a restart instead of starting them.
    adopted: bool,
    pods: usize,
    hwm: u64,
    rss: u64,
    /// Of `rss`: heap and stacks; the rest is mapped files (binary, libc).
    anon: u64,
}

/// A binary's size in bytes and whether it is stripped, or why it is not there.
type Size = Result<(u64, bool), String>;

/// The agent builds under bench: the one measured throughout, and optionally a second
/// one whose memory is measured for comparison.
struct Agents {
    main: (&'static str, PathBuf),
    other: Option<(&'static str, PathBuf)>,
}

/// Everything the table shows.
#[derive(Default)]
struct Report {
    runtime: String,
    agent: String,
    sizes: Vec<(String, Size)>,
    mem: Vec<Mem>,
    window: Duration,
    cpu: Duration,
    threads: (usize, Vec<String>),
    writes: (Vec<PathBuf>, u64),
    apply: Vec<Duration>,
    direct: Vec<Duration>,
    restarts: Vec<Duration>,
    scrape: Scrape,
    /// The main agent's memory once idle, past a trim of its code pages: at 0 pods, and
    /// at the end of the idle window at 50 pods.
    idle: Vec<Mem>,
}

/// The status endpoint asked as a fleet probe would, at 50 pods.
#[derive(Default)]
struct Scrape {
    rounds: u32,
    /// Agent CPU time for all rounds.
    cpu: Duration,
    /// Body sizes of the last round's /metrics and /pods.
    metrics_bytes: usize,
    pods_bytes: usize,
    /// VmHWM after the rounds, KiB.
    hwm: u64,
}

fn main() {
    figures::bench_main("bench-agent", "bench-agent", run);
}

fn run() -> Result<(), String> {
    let window = Duration::from_secs(env_u64("TINYLET_BENCH_IDLE_SECS", 60)?);
    let glibc = agent_binary()?;
    let agents = match std::env::var_os("TINYLET_MUSL_BIN") {
        Some(musl) => Agents {
            main: ("musl static", PathBuf::from(musl)),
            other: Some(("glibc", glibc.clone())),
        },
        None => Agents {
            main: ("glibc", glibc.clone()),
            other: None,
        },
    };
    let mut r = Report {
        sizes: sizes(&glibc),
        agent: format!("{} ({})", agents.main.0, agents.main.1.display()),
        window,
        ..Default::default()
    };
    let ctd = Containerd::start();
    let cfg = Config {
        runtime_endpoint: ctd.endpoint(),
        ..Default::default()
    };
    let cri = CriClient::from_config(&cfg).map_err(|e| e.to_string())?;
    let v = rt::block_on(cri.runtime.version()).map_err(|e| e.to_string())?;
    r.runtime = format!("{} {}", v.runtime_name, v.runtime_version);
    let direct = Direct::new(&ctd);
    eprintln!("bench-agent: {}: direct CRI calls, warm-up", r.runtime);
    let warm: Vec<String> = (0..2)
        .map(|i| direct.start(&cri, i).map(|(_, sb)| sb))
        .collect::<Result<_, _>>()?;
    rt::block_on(direct::remove_sandboxes(&cri, &warm))?;

    let dir = ctd.dir().join("bench-agent");
    let mut node = Node::new(
        agents.main.1.clone(),
        dir,
        &ctd.endpoint(),
        ctd.sandbox_image(),
        ctd.test_image(),
    )?;
    let mut pid = node.start_agent(&agents.main.1)?;
    node.wait_ready(Duration::from_secs(30))?;
    std::thread::sleep(SETTLE);
    measure_mem(&mut node, &agents, &mut pid, 0, &mut r)?;
    // Idle: past the agent's first trim of its code pages (tinylet::code_pages).
    node::wait_trims(node.status, 1, figures::FIRST_TRIM_WAIT)?;
    r.idle.push(mem(agents.main.0, pid, 0, false)?);
    eprintln!("bench-agent: {LATENCY_PODS} pods one at a time, each after a direct start");
    let manifests = node.dir.join("manifests");
    let mut sandboxes = Vec::new();
    for i in 0..LATENCY_PODS {
        let (t, sb) = direct.start(&cri, i + 2)?;
        r.direct.push(t);
        sandboxes.push(sb);
        r.apply.push(apply_and_wait(&node, &manifests, i)?);
        if i + 1 == 10 {
            std::thread::sleep(SETTLE);
            measure_mem(&mut node, &agents, &mut pid, 10, &mut r)?;
        }
    }
    rt::block_on(direct::remove_sandboxes(&cri, &sandboxes))?;
    eprintln!(
        "bench-agent: applying {} pods at once",
        TOTAL_PODS - LATENCY_PODS
    );
    apply_bulk(
        &node,
        LATENCY_PODS..TOTAL_PODS,
        &["sleep", "100000"],
        "bulk",
    )?;
    std::thread::sleep(SETTLE);
    measure_mem(&mut node, &agents, &mut pid, TOTAL_PODS, &mut r)?;
    eprintln!("bench-agent: {TOTAL_PODS} pods idle for {window:?}");
    idle_window(&node, pid, agents.main.0, &mut r)?;
    eprintln!("bench-agent: {SCRAPES} scrapes of /healthz, /metrics and /pods");
    r.scrape = scrape_phase(&node, pid)?;
    eprintln!("bench-agent: {CRASH_PODS} pods exiting after 1 s");
    r.restarts = restart_phase(&node, &cri)?;
    drop(node);
    print_report(&r);
    Ok(())
}

/// Memory of the main agent (running, pid `*pid`) at `pods` pods, then of the other
/// build, if any: it replaces the main agent, adopts the pods, is measured after they
/// all show Running again and the agent settled, and the main agent comes back.
fn measure_mem(
    node: &mut Node,
    agents: &Agents,
    pid: &mut u32,
    pods: usize,
    r: &mut Report,
) -> Result<(), String> {
    r.mem.push(mem(agents.main.0, *pid, pods, false)?);
    let Some((build, bin)) = &agents.other else {
        return Ok(());
    };
    let other = node.start_agent(bin)?;
    node.wait_ready(Duration::from_secs(30))?;
    std::thread::sleep(SETTLE);
    r.mem.push(mem(build, other, pods, pods > 0)?);
    *pid = node.start_agent(&agents.main.1)?;
    node.wait_ready(Duration::from_secs(30))?;
    std::thread::sleep(SETTLE);
    Ok(())
}

/// The agent binary: TINYLET_BIN, else the release build of this checkout.
fn agent_binary() -> Result<PathBuf, String> {
    let bin = std::env::var_os("TINYLET_BIN").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/tinylet"),
        PathBuf::from,
    );
    if !bin.is_file() {
        return Err(format!(
            "{}: no agent binary; run `cargo build --release` (make bench-agent does)",
            bin.display()
        ));
    }
    Ok(bin)
}

/// Size and strippedness of the glibc binary and of the static builds made this run.
fn sizes(glibc: &Path) -> Vec<(String, Size)> {
    let mut out = vec![("x86_64 glibc".to_string(), elf_size(glibc))];
    let built = std::env::var("TINYLET_BENCH_STATIC_BUILT").unwrap_or_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for t in STATIC_TARGETS {
        let path = root.join("target/cross").join(t).join("release/tinylet");
        // Only what make bench-agent built this run: an older file may be anything.
        let size = if built.split_whitespace().any(|b| b == t) {
            elf_size(&path)
        } else {
            Err("not built this run (make bench-agent builds it with a static toolchain: cross/install-deps.sh)".into())
        };
        out.push((t.to_string(), size));
    }
    out
}

/// File size, and whether the ELF has no symbol table (stripped).
fn elf_size(path: &Path) -> Size {
    let bytes = std::fs::read(path).map_err(|_| format!("not built ({})", path.display()))?;
    let stripped = !bytes.windows(8).any(|w| w == b".symtab\0");
    Ok((bytes.len() as u64, stripped))
}

fn mem(build: &'static str, pid: u32, pods: usize, adopted: bool) -> Result<Mem, String> {
    Ok(Mem {
        build,
        adopted,
        pods,
        hwm: procfs::vm_kib(pid, "VmHWM:")?,
        rss: procfs::vm_kib(pid, "VmRSS:")?,
        anon: procfs::vm_kib(pid, "RssAnon:")?,
    })
}

/// Starts pods with the agent's CRI calls issued directly (the runtime's own time).
struct Direct {
    dir: PathBuf,
    image: String,
    resolv: tinylet::kuberuntime::dns::ResolvConf,
}

impl Direct {
    fn new(ctd: &Containerd) -> Direct {
        let resolv =
            parse_resolv_conf(&std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default());
        Direct {
            dir: ctd.dir().join("bench-direct"),
            image: ctd.test_image().to_string(),
            resolv,
        }
    }

    /// Starts direct pod `i`; returns the time the calls took and the sandbox id.
    fn start(&self, cri: &CriClient, i: usize) -> Result<(Duration, String), String> {
        let name = format!("direct-{i:02}");
        let manifest = node::pod_manifest(&name, &self.image, &["sleep", "100000"]);
        let uid = format!("bench-direct-uid-{i}");
        rt::block_on(direct::start_pod(
            cri,
            &manifest,
            &uid,
            &self.dir,
            &self.resolv,
        ))
    }
}

/// Applies pod `i` and times apply-returned -> Running in its status file.
fn apply_and_wait(node: &Node, dir: &Path, i: usize) -> Result<Duration, String> {
    let name = format!("pod-{i:02}");
    let path = node.write_pod(dir, &name, &["sleep", "100000"])?;
    node.apply(&path)?;
    let t0 = Instant::now();
    while !node.is_running(&name) {
        if t0.elapsed() > Duration::from_secs(60) {
            return Err(format!(
                "{name} not Running after 60 s\n{}",
                node.log_tail()
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(t0.elapsed())
}

/// Applies pods `range` with one `tinylet apply -f DIR` and waits until all run.
fn apply_bulk(
    node: &Node,
    range: std::ops::Range<usize>,
    command: &[&str],
    sub: &str,
) -> Result<Vec<String>, String> {
    let dir = node.dir.join(sub);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names = Vec::new();
    for i in range {
        let name = format!("{sub}-{i:02}");
        node.write_pod(&dir, &name, command)?;
        names.push(name);
    }
    node.apply(&dir)?;
    node.wait_running(&names, Duration::from_millis(20))?;
    Ok(names)
}

/// CPU, threads and state-dir writes over the idle window.
fn idle_window(node: &Node, pid: u32, build: &'static str, r: &mut Report) -> Result<(), String> {
    let before = procfs::snapshot(&node.state_dir);
    let cpu0 = procfs::cpu_time(pid)?;
    let t0 = Instant::now();
    let mut threads = procfs::threads(pid)?;
    while t0.elapsed() < r.window {
        std::thread::sleep(Duration::from_secs(1).min(r.window));
        let now = procfs::threads(pid)?;
        if now.0 > threads.0 {
            threads = now;
        }
    }
    r.cpu = procfs::cpu_time(pid)?.saturating_sub(cpu0);
    r.window = t0.elapsed();
    r.threads = threads;
    r.writes = procfs::writes(&before, &procfs::snapshot(&node.state_dir));
    r.idle.push(mem(build, pid, TOTAL_PODS, false)?);
    Ok(())
}

/// CPU and peak memory of the status endpoint answering `SCRAPES` rounds of /healthz,
/// /metrics and /pods (each a new connection, as Prometheus and curl make them).
fn scrape_phase(node: &Node, pid: u32) -> Result<Scrape, String> {
    let cpu0 = procfs::cpu_time(pid)?;
    let mut s = Scrape::default();
    for _ in 0..SCRAPES {
        node::http_get(node.status, "/healthz")?;
        s.metrics_bytes = node::http_get(node.status, "/metrics")?;
        s.pods_bytes = node::http_get(node.status, "/pods")?;
        s.rounds += 1;
    }
    s.cpu = procfs::cpu_time(pid)?.saturating_sub(cpu0);
    s.hwm = procfs::vm_kib(pid, "VmHWM:")?;
    Ok(s)
}

/// First-restart delays of pods whose container exits after about a second.
fn restart_phase(node: &Node, cri: &CriClient) -> Result<Vec<Duration>, String> {
    let dir = node.dir.join("crash");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names = Vec::new();
    for i in 0..CRASH_PODS {
        let name = format!("crash-{i}");
        node.write_pod(&dir, &name, &["sh", "-c", "sleep 1; exit 1"])?;
        names.push(name);
    }
    node.apply(&dir)?;
    let until = Instant::now() + Duration::from_secs(30);
    let mut delays = Vec::new();
    while !names.is_empty() {
        if Instant::now() > until {
            return Err(format!(
                "no restart of {names:?} within 30 s\n{}",
                node.log_tail()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
        let mut left = Vec::new();
        for name in names {
            match rt::block_on(direct::first_restart_delay(cri, &name))? {
                Some(d) => delays.push(d),
                None => left.push(name),
            }
        }
        names = left;
    }
    Ok(delays)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn print_report(r: &Report) {
    println!(
        "\ntinylet agent bench: {}, plegPeriod {:?}, idle window {:.0} s\nagent: {}",
        r.runtime,
        PLEG,
        r.window.as_secs_f64(),
        r.agent
    );
    let row = |m: &str, v: String, t: &str, ok: &str| {
        println!("{m:<46} {v:>24}  {t:<28} {ok}");
    };
    row("metric", "value".into(), "target", "");
    for (t, s) in &r.sizes {
        let limit = if t.starts_with("aarch64") {
            "<= 1.50 MiB"
        } else {
            "-"
        };
        match s {
            Ok((n, stripped)) => {
                let v = format!("{:.2} MiB ({n} B)", *n as f64 / MIB);
                let ok = *stripped && (limit == "-" || (*n as f64) <= 1.5 * MIB);
                let what = if *stripped {
                    "stripped"
                } else {
                    "NOT stripped"
                };
                row(&format!("binary {t} ({what})"), v, limit, verdict(ok));
            }
            Err(e) => row(&format!("binary {t}"), "-".into(), limit, e),
        }
    }
    for m in &r.mem {
        let mib = |k: u64| k as f64 / 1024.0;
        // The targets are the device binary's (static musl), held against its idle
        // figures below; another build is shown for comparison only.
        let main = r.agent.starts_with(m.build);
        let how = if m.adopted { ", adopted" } else { "" };
        row(
            &format!("RSS {}, {} pods{how}: peak/now (anon)", m.build, m.pods),
            format!(
                "{:.2} / {:.2} ({:.2}) MiB",
                mib(m.hwm),
                mib(m.rss),
                mib(m.anon)
            ),
            if main { "-" } else { "(comparison)" },
            "",
        );
    }
    for m in &r.idle {
        let target = if m.pods == TOTAL_PODS { 4.0 } else { 2.5 };
        let mib = |k: u64| k as f64 / 1024.0;
        row(
            &format!("RSS {} idle, {} pods: now (anon / file)", m.build, m.pods),
            format!(
                "{:.2} ({:.2} / {:.2}) MiB",
                mib(m.rss),
                mib(m.anon),
                mib(m.rss - m.anon)
            ),
            &format!("<= {target} MiB"),
            verdict(mib(m.rss) <= target),
        );
    }
    let cpu_pct = r.cpu.as_secs_f64() / r.window.as_secs_f64().max(1e-9) * 100.0;
    row(
        &format!("CPU idle, {TOTAL_PODS} pods"),
        format!("{cpu_pct:.3} % ({} ms)", r.cpu.as_millis()),
        "<= 0.2 % of one core",
        verdict(cpu_pct <= 0.2),
    );
    let sc = &r.scrape;
    if sc.rounds > 0 {
        row(
            &format!("status endpoint, {TOTAL_PODS} pods: CPU per scrape"),
            format!(
                "{:.2} ms",
                sc.cpu.as_secs_f64() * 1e3 / f64::from(sc.rounds)
            ),
            "/healthz + /metrics + /pods",
            "",
        );
        row(
            "  body sizes /metrics, /pods",
            format!("{} B, {} B", sc.metrics_bytes, sc.pods_bytes),
            "",
            "",
        );
        row(
            &format!("RSS peak after {} scrapes, {TOTAL_PODS} pods", sc.rounds),
            format!("{:.2} MiB", sc.hwm as f64 / 1024.0),
            "peak <= 4 MiB",
            verdict(sc.hwm as f64 / 1024.0 <= 4.0),
        );
    }
    row(
        "threads (max seen in the window)",
        format!("{} ({})", r.threads.0, r.threads.1.join(", ")),
        "2",
        verdict(r.threads.0 == 2),
    );
    let (files, bytes) = &r.writes;
    row(
        "state-dir writes in the window",
        format!("{} files, {bytes} B", files.len()),
        "0",
        verdict(files.is_empty()),
    );
    for f in files {
        println!("  changed: {}", f.display());
    }
    let (a50, a99, d50, d99) = (
        pct(&r.apply, 50),
        pct(&r.apply, 99),
        pct(&r.direct, 50),
        pct(&r.direct, 99),
    );
    let slack = Duration::from_millis(20);
    row(
        &format!("apply->Running p50/p99 ({} pods)", r.apply.len()),
        format!("{} / {}", ms(a50), ms(a99)),
        "<= direct + 20 ms",
        verdict(a50 <= d50 + slack && a99 <= d99 + slack),
    );
    row(
        &format!("  direct CRI calls p50/p99 ({} pods)", r.direct.len()),
        format!("{} / {}", ms(d50), ms(d99)),
        "",
        "",
    );
    let max = r.restarts.iter().max().copied().unwrap_or_default();
    row(
        &format!("first restart p50/max ({} pods)", r.restarts.len()),
        format!("{} / {}", ms(pct(&r.restarts, 50)), ms(max)),
        &format!("<= plegPeriod {} + 100 ms", ms(PLEG)),
        verdict(max <= PLEG + Duration::from_millis(100)),
    );
}
