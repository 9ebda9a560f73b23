//! The kubelet API's streams under load, through the real API server to a tinylet node
//! on the private containerd: 20 streams at once (18 `kubectl exec -i cat`
//! sessions, 2 `kubectl port-forward`) plus one `kubectl exec ... yes` whose client
//! stops reading, while 20 idle TCP connections press on the kubelet API's connection
//! bound. Checked: no stream is closed for the newcomers (streams are bounded by
//! `apiServer.maxStreams`, not by the accept loop); the agent's memory stays within
//! what the design allows per stream (VmRSS sampled, VmHWM at the end, from /proc);
//! the stalled stream stops moving bytes instead of buffering; `/healthz` through the
//! API server's node proxy and a new `kubectl logs` are still answered; every stream
//! ends, with its process in the container, once the clients go; and the agent's idle
//! CPU afterwards is back near what it was before the streams (a loose check: CPU
//! seconds over a 10 s window on a shared machine are noisy).

mod agent_support;
mod common;
mod kapi_support;
#[path = "../benches/agent/procfs.rs"]
#[allow(dead_code)]
mod procfs;

use agent_support::wait_for;
use common::kube::Kube;
use common::Containerd;
use kapi_support::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const NODE: &str = "tl-stream-load";
const NS: &str = "kapi-stream-load";
/// `kubectl exec -i cat` sessions and port-forwards held open: 20 streams.
const ECHOES: usize = 18;
const FORWARDS: usize = 2;
/// Streams at the flood's peak: those and the one that stops reading.
const STREAMS: u64 = (ECHOES + FORWARDS + 1) as u64;
/// Idle connections opened while the streams are up: more than the kubelet API's bound
/// on strangers from one address (8), so the accept loop closes some.
const IDLE_CONNECTIONS: usize = 20;
/// What one stream may cost the agent by design while it moves data: two relay
/// chunks (2 x 8 KiB), a TLS record being received (up to 16.7 KiB) and its plaintext
/// (up to 16 KiB), one being sent (8 KiB), the connection and task state (a few KiB).
const PER_STREAM_KIB: u64 = 64;
/// Besides: allocator slack, the requests answered meanwhile.
const SLACK_KIB: u64 = 512;
/// How long the stalled stream is watched.
const FLOOD: Duration = Duration::from_secs(10);
const CPU_WINDOW: Duration = Duration::from_secs(10);

fn kubectl(kube: &Kube, args: &[&str]) -> Command {
    kubectl_ns(kube, NS, args)
}

/// An open `kubectl exec -i shell -- cat`: what is written comes back.
struct Echo {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
}

impl Echo {
    fn open(kube: &Kube) -> Echo {
        let (mut child, out) = spawn_piped(kubectl(kube, &["exec", "-i", "shell", "--", "cat"]));
        let stdin = child.stdin.take().unwrap();
        Echo { child, stdin, out }
    }

    /// Writes `text` and reads it back; on failure, says what kubectl and the agent
    /// said.
    fn round_trip(&mut self, text: &str, n: &ApiNode) {
        let mut back = String::new();
        let wrote = self.stdin.write_all(format!("{text}\n").as_bytes());
        if wrote.is_ok() {
            let _ = self.out.read_line(&mut back);
        }
        if back != format!("{text}\n") {
            let _ = self.child.kill();
            let mut err = String::new();
            if let Some(mut e) = self.child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!(
                "{text}: wrote {wrote:?}, read back {back:?}; kubectl said {err:?}\nagent log:\n{}",
                n.node.agent_log_tail()
            );
        }
    }
}

/// `kubectl port-forward web LOCAL:8080`, its forwarded page fetched once.
fn forward(kube: &Kube) -> (Child, u16) {
    let local = free_port();
    let (child, mut out) = spawn_piped(kubectl(
        kube,
        &["port-forward", "web", &format!("{local}:8080")],
    ));
    let first = line(&mut out, "port-forward");
    assert!(first.starts_with("Forwarding from"), "{first}");
    assert_eq!(forwarded_page(local), b"hello-web\n");
    // kubectl prints a line per forwarded connection: read on, so it never blocks.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (child, local)
}

/// The agent's CPU time over `CPU_WINDOW`.
fn idle_cpu(pid: u32) -> Duration {
    let before = procfs::cpu_time(pid).unwrap();
    std::thread::sleep(CPU_WINDOW);
    procfs::cpu_time(pid).unwrap().saturating_sub(before)
}

fn rss(pid: u32) -> u64 {
    procfs::vm_kib(pid, "VmRSS:").unwrap()
}

/// `/healthz` through the API server's node proxy and a new `kubectl logs` are answered.
fn others_answered(kube: &Kube) {
    let raw = format!("/api/v1/nodes/{NODE}/proxy/healthz");
    let out = kubectl(kube, &["get", "--raw", &raw]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok", "{out:?}");
    let out = kubectl(kube, &["logs", "shell"]).output().unwrap();
    assert_eq!(out.stdout, b"started\n", "{out:?}");
}

/// Processes named `name` in the shell pod's container (busybox `ps`: the command last).
fn processes(kube: &Kube, name: &str) -> usize {
    let out = kubectl(kube, &["exec", "shell", "--", "ps"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.split_whitespace().last() == Some(name))
        .count()
}

#[test]
fn twenty_streams_and_a_stalled_reader_keep_the_agent_bounded() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = api_node_with(kube, &c, NODE, json!({"maxStreams": 24}));
    namespace(kube, NS);
    let image = c.test_image();
    pod(
        kube,
        NS,
        NODE,
        "shell",
        image,
        "echo started; exec sleep 3600",
    );
    web_pod(kube, NS, NODE, image);
    wait_for("an exec in the shell pod", START, || {
        let out = kubectl(kube, &["exec", "shell", "--", "true"])
            .output()
            .unwrap();
        out.status.success().then_some(())
    });
    let pid = n.node.agent_pid().unwrap();

    // Warm-up: one stream of each kind, so one-time allocations are in the baseline.
    let mut e = Echo::open(kube);
    e.round_trip("warm-up", &n);
    drop(e.stdin);
    assert!(exits_within(&mut e.child, START, "the warm-up exec").success());
    let (mut f, _) = forward(kube);
    let _ = f.kill();
    let _ = f.wait();
    others_answered(kube);
    std::thread::sleep(Duration::from_secs(3));
    let base = rss(pid);
    let cpu_before = idle_cpu(pid);

    // 20 streams at once, each seen working.
    let mut echoes: Vec<Echo> = (0..ECHOES).map(|_| Echo::open(kube)).collect();
    for (i, e) in echoes.iter_mut().enumerate() {
        e.round_trip(&format!("hello {i}"), &n);
    }
    let forwards: Vec<(Child, u16)> = (0..FORWARDS).map(|_| forward(kube)).collect();
    std::thread::sleep(Duration::from_secs(2));
    let quiet = rss(pid);
    eprintln!(
        "agent VmRSS {base} KiB idle, {quiet} KiB with {} quiet streams: {:.1} KiB each",
        ECHOES + FORWARDS,
        quiet.saturating_sub(base) as f64 / (ECHOES + FORWARDS) as f64
    );

    // More idle connections than the kubelet API's bound for one address: the accept
    // loop closes the oldest of them, never a stream.
    let addr = ("127.0.0.1", n.port);
    let idle: Vec<TcpStream> = (0..IDLE_CONNECTIONS)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();

    // A client that stops reading while the container writes as fast as it can.
    let sent = "tinylet_kubelet_api_sent_bytes_total";
    let sent0 = counter(&n, sent);
    let mut flood = kubectl(kube, &["exec", "shell", "--", "yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut peak = quiet;
    let mut sent_half = None;
    while t0.elapsed() < FLOOD {
        std::thread::sleep(Duration::from_millis(500));
        peak = peak.max(rss(pid));
        if sent_half.is_none() && t0.elapsed() >= FLOOD / 2 {
            sent_half = Some(counter(&n, sent));
        }
    }
    let sent_end = counter(&n, sent);
    assert!(
        flood.try_wait().unwrap().is_none(),
        "the flood's kubectl ended"
    );
    others_answered(kube);
    for (i, e) in echoes.iter_mut().enumerate() {
        e.round_trip(&format!("still {i}"), &n);
    }
    for (_, local) in &forwards {
        assert_eq!(forwarded_page(*local), b"hello-web\n");
    }
    let hwm = procfs::vm_kib(pid, "VmHWM:").unwrap();
    peak = peak.max(rss(pid));
    let grown = peak.saturating_sub(base);
    let bound = STREAMS * PER_STREAM_KIB + SLACK_KIB;
    let moved = sent_end - sent0;
    let late = sent_end - sent_half.unwrap();
    eprintln!(
        "agent VmRSS peak {peak} KiB (+{grown} KiB over idle, bound {bound} KiB), VmHWM \
         {hwm} KiB; kubelet API sent {moved} B in the flood, {late} B in its last {:?}",
        FLOOD / 2
    );
    assert!(grown <= bound, "VmRSS grew {grown} KiB, bound {bound} KiB");
    assert!(moved >= 256 << 10, "the flood moved only {moved} B");
    assert!(
        late < 1 << 20,
        "{late} B moved while the reader was stalled"
    );

    // The clients go: every stream ends, its process in the container too.
    for mut e in echoes {
        drop(e.stdin);
        assert!(exits_within(&mut e.child, START, "an echo exec").success());
    }
    for (mut f, _) in forwards {
        let _ = f.kill();
        let _ = f.wait();
    }
    let _ = flood.kill();
    let _ = flood.wait();
    drop(idle);
    let log = n.node.agent_log_path();
    wait_for("every stream ended in the agent's log", START, || {
        let text = std::fs::read_to_string(&log).unwrap();
        let streams = text.lines().filter(|l| l.contains(" stream to "));
        let opened = streams.clone().filter(|l| l.ends_with(" opened")).count();
        let ended = streams.filter(|l| l.contains(" ended: ")).count();
        (opened >= STREAMS as usize && opened == ended).then_some(())
    });
    // cat saw its stdin end through each stream. `yes` is only reported: it stays,
    // blocked on its output, after its stream ended above (containerd's streaming
    // server owns the exec process; the agent only relays its connection).
    wait_for("no cat left in the container", START, || {
        (processes(kube, "cat") == 0).then_some(())
    });
    eprintln!(
        "yes processes left in the container: {}",
        processes(kube, "yes")
    );

    // Idle again: the agent's CPU back near its level before the streams.
    std::thread::sleep(Duration::from_secs(3));
    let cpu_after = idle_cpu(pid);
    eprintln!("agent CPU over {CPU_WINDOW:?} idle: {cpu_before:?} before, {cpu_after:?} after");
    assert!(
        cpu_after <= cpu_before * 2 + Duration::from_millis(100),
        "idle CPU {cpu_after:?} after the streams, {cpu_before:?} before"
    );
    n.node.assert_agent_alive();
}
