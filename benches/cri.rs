//! `make bench`, CRI part: how fast and how cheap the CRI client is against a real
//! containerd (a private instance started through the test harness).
//!
//! For Version, ListContainers, ListPodSandbox and ImageStatus: N calls one after another, then N
//! calls from 8 concurrent tasks on the one executor thread. Reported per row: calls per
//! second, p50/p99 latency, client CPU time per call (the process CPU clock, user +
//! system of every thread of this process, so containerd's own work is not counted) and
//! containerd's CPU time per call (its /proc stat, found through the socket's peer
//! credentials), so a latency dominated by the runtime's own work shows as such.
//! At the end: the process's peak RSS (VmHWM).
//!
//! The runtime holds a few pods and containers so the list answers are not empty.
//! `TINYLET_BENCH_CALLS` overrides N (default 10000); `TINYLET_BENCH_PODS` the pod count.

#[path = "../tests/common/mod.rs"]
mod common;

use common::Containerd;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tinylet::cri::{pb, Channel, ImageClient, RuntimeClient};
use tinylet::rt;

/// The calls measured: what the agent's PLEG and status loop make most.
#[derive(Clone, Copy, Debug)]
enum Call {
    Version,
    ListContainers,
    ListPodSandbox,
    ImageStatus,
}

const CALLS: [Call; 4] = [
    Call::Version,
    Call::ListContainers,
    Call::ListPodSandbox,
    Call::ImageStatus,
];
const CONCURRENCY: usize = 8;
const WARMUP: usize = 200;

/// One measured row. Latencies are summarised at once and dropped, so the bench's own
/// bookkeeping does not swell the RSS it reports.
struct Row {
    call: Call,
    mode: &'static str,
    calls: usize,
    wall: Duration,
    cpu: Duration,
    server_cpu: Duration,
    p50: Duration,
    p99: Duration,
}

impl Row {
    fn new(
        call: Call,
        mode: &'static str,
        wall: Duration,
        [cpu, server_cpu]: [Duration; 2],
        mut lat: Vec<Duration>,
    ) -> Row {
        lat.sort_unstable();
        let pct = |p: usize| lat.get(lat.len() * p / 100).copied().unwrap_or_default();
        Row {
            call,
            mode,
            calls: lat.len(),
            wall,
            cpu,
            server_cpu,
            p50: pct(50),
            p99: pct(99),
        }
    }
}

fn main() {
    // The instance lives in `run`, so it is torn down (Drop) before the exit code.
    if let Err(e) = run() {
        eprintln!("bench: error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    // `cargo test --all-targets` runs this too (without `--bench`): then a short smoke
    // run, so the test suite does not spend a minute on unoptimised calls.
    let full = std::env::args().any(|a| a == "--bench");
    let n = env_usize("TINYLET_BENCH_CALLS", if full { 10_000 } else { 200 })?;
    let pods = env_usize("TINYLET_BENCH_PODS", 5)?;
    let ctd = Containerd::start();
    let ch = Channel::new(&ctd.endpoint()).map_err(|e| e.to_string())?;
    let timeout = Duration::from_secs(30);
    let client = RuntimeClient::new(ch.clone(), timeout);
    let bench = Bench {
        runtime: client.clone(),
        image: ImageClient::new(ch, timeout, timeout),
        image_name: ctd.test_image().to_string(),
        server_pid: server_pid(ctd.socket())?,
    };
    let rss_before = vm_kib("VmRSS:");
    let (version, rows, hwm_first) = rt::block_on(async {
        let version = client.version().await.map_err(|e| e.to_string())?;
        populate(&ctd, &client, pods).await?;
        let mut rows = Vec::new();
        let mut hwm_first = 0;
        for call in CALLS {
            for _ in 0..WARMUP {
                one(&bench, call).await?;
            }
            rows.push(sequential(&bench, call, n).await?);
            if hwm_first == 0 {
                hwm_first = vm_kib("VmHWM:");
            }
            rows.push(concurrent(&bench, call, n).await?);
        }
        Ok::<_, String>((version, rows, hwm_first))
    })?;
    let hwm = vm_kib("VmHWM:");
    print_report(&version, pods, n, &rows, [rss_before, hwm_first, hwm], full);
    Ok(())
}

/// Creates `pods` host-network pods with one sleeping container each.
async fn populate(ctd: &Containerd, client: &RuntimeClient, pods: usize) -> Result<(), String> {
    let err = |e: tinylet::cri::CriError| e.to_string();
    for i in 0..pods {
        let name = format!("bench-{i}");
        let sb = pb::PodSandboxConfig {
            metadata: Some(pb::PodSandboxMetadata {
                name: name.clone(),
                uid: format!("bench-uid-{i}"),
                namespace: "bench".into(),
                attempt: 0,
            }),
            log_directory: format!("{}/bench-logs/{name}", std::env::temp_dir().display()),
            labels: BTreeMap::from([("io.kubernetes.pod.name".into(), name.clone())]),
            linux: Some(pb::LinuxPodSandboxConfig {
                security_context: Some(pb::LinuxSandboxSecurityContext {
                    namespace_options: Some(pb::NamespaceOption {
                        network: pb::NamespaceMode::Node as i32,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let pod = client.run_pod_sandbox(sb.clone(), "").await.map_err(err)?;
        let c = pb::ContainerConfig {
            metadata: Some(pb::ContainerMetadata {
                name: "app".into(),
                attempt: 0,
            }),
            image: Some(pb::ImageSpec {
                image: ctd.test_image().into(),
                ..Default::default()
            }),
            command: vec!["sleep".into(), "3600".into()],
            log_path: "app/0.log".into(),
            labels: BTreeMap::from([("io.kubernetes.container.name".into(), "app".into())]),
            ..Default::default()
        };
        let id = client.create_container(&pod, c, sb).await.map_err(err)?;
        client.start_container(&id).await.map_err(err)?;
    }
    Ok(())
}

/// What the calls go through, and the runtime process whose CPU time is read.
#[derive(Clone)]
struct Bench {
    runtime: RuntimeClient,
    image: ImageClient,
    /// The image asked about by ImageStatus (present in the runtime).
    image_name: String,
    server_pid: u32,
}

/// Makes one call; a failure ends the bench (numbers after a failure mean nothing).
async fn one(bench: &Bench, call: Call) -> Result<(), String> {
    let client = &bench.runtime;
    let r = match call {
        Call::Version => client.version().await.map(drop),
        Call::ListContainers => client.list_containers(None).await.map(drop),
        Call::ListPodSandbox => client.list_pod_sandbox(None).await.map(drop),
        Call::ImageStatus => match bench.image.image_status(&bench.image_name).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => return Err(format!("ImageStatus: {} not found", bench.image_name)),
            Err(e) => Err(e),
        },
    };
    r.map_err(|e| format!("{call:?}: {e}"))
}

async fn timed(bench: &Bench, call: Call, count: usize) -> Result<Vec<Duration>, String> {
    let mut lat = Vec::with_capacity(count);
    for _ in 0..count {
        let t = Instant::now();
        one(bench, call).await?;
        lat.push(t.elapsed());
    }
    Ok(lat)
}

async fn sequential(bench: &Bench, call: Call, n: usize) -> Result<Row, String> {
    let (cpu0, t0) = (cpu_times(bench), Instant::now());
    let latencies = timed(bench, call, n).await?;
    let (wall, cpu) = (t0.elapsed(), cpu_since(bench, cpu0));
    Ok(Row::new(call, "seq", wall, cpu, latencies))
}

async fn concurrent(bench: &Bench, call: Call, n: usize) -> Result<Row, String> {
    let per_task = n / CONCURRENCY;
    let (cpu0, t0) = (cpu_times(bench), Instant::now());
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let bench = bench.clone();
            rt::spawn(async move { timed(&bench, call, per_task).await })
        })
        .collect();
    let mut latencies = Vec::with_capacity(n);
    for t in tasks {
        latencies.extend(t.await?);
    }
    let (wall, cpu) = (t0.elapsed(), cpu_since(bench, cpu0));
    Ok(Row::new(call, "8-conc", wall, cpu, latencies))
}

fn print_report(
    version: &pb::VersionResponse,
    pods: usize,
    n: usize,
    rows: &[Row],
    [rss_before, hwm_first, hwm]: [u64; 3],
    full: bool,
) {
    println!(
        "CRI client bench: {} {}, {pods} pods / {pods} containers, {n} calls per row",
        version.runtime_name, version.runtime_version
    );
    println!(
        "{:<16} {:<7} {:>10} {:>9} {:>9} {:>15} {:>17}",
        "call", "mode", "calls/s", "p50 us", "p99 us", "CPU us/call", "runtime CPU us"
    );
    for r in rows {
        let calls = r.calls.max(1) as f64;
        println!(
            "{:<16} {:<7} {:>10.0} {:>9.1} {:>9.1} {:>15.1} {:>17.1}",
            format!("{:?}", r.call),
            r.mode,
            calls / r.wall.as_secs_f64(),
            us(&r.p50),
            us(&r.p99),
            us(&r.cpu) / calls,
            us(&r.server_cpu) / calls,
        );
    }
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "peak RSS (VmHWM): {:.2} MiB after the first {} calls, {:.2} MiB after all {} \
         (RSS before the first call: {:.2} MiB)",
        mib(hwm_first),
        n + WARMUP,
        mib(hwm),
        rows.iter().map(|r| r.calls).sum::<usize>() + WARMUP * CALLS.len(),
        mib(rss_before)
    );
    // A debug build's figures say nothing about the targets (release, `make bench`).
    if full {
        println!(
            "targets: p50 <= 90 us, client CPU <= 30 us/call; grpc-go: p50 160 us, \
             115 us CPU/call, 15.6 MB RSS"
        );
    } else {
        println!(
            "smoke run (cargo test, unoptimised): not comparable to the targets; see make bench"
        );
    }
}

fn us(d: &Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// CPU time of the whole process so far (every thread, user + system).
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// This process's and the runtime's CPU time so far.
fn cpu_times(bench: &Bench) -> [Duration; 2] {
    [cpu_time(), server_cpu_time(bench.server_pid)]
}

/// The CPU time of this process and of the runtime since `before`.
fn cpu_since(bench: &Bench, before: [Duration; 2]) -> [Duration; 2] {
    let [cpu, server] = cpu_times(bench);
    [
        cpu.saturating_sub(before[0]),
        server.saturating_sub(before[1]),
    ]
}

/// The pid of the process serving `socket` (containerd), from the peer credentials of a
/// connection to it.
fn server_pid(socket: &std::path::Path) -> Result<u32, String> {
    let conn = std::os::unix::net::UnixStream::connect(socket)
        .map_err(|e| format!("connecting to {}: {e}", socket.display()))?;
    let cred = rustix::net::sockopt::socket_peercred(&conn)
        .map_err(|e| format!("peer credentials of {}: {e}", socket.display()))?;
    Ok(cred.pid.as_raw_nonzero().get() as u32)
}

/// CPU time (user + system, every thread) of process `pid` from /proc/PID/stat, in
/// clock ticks of 10 ms: exact enough summed over thousands of calls. Zero if unreadable.
fn server_cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) end with ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15; `fields` starts at field 3.
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// A `kB` line of /proc/self/status (VmRSS, VmHWM), in KiB; 0 when unreadable.
fn vm_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn env_usize(key: &str, default: usize) -> Result<usize, String> {
    match std::env::var(key) {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("{key}={v:?}: expected a number")),
        Err(_) => Ok(default),
    }
}
