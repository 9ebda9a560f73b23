//! End-to-end tests of the local status endpoint (`statusAddress`) of `tinylet run` on a
//! private containerd each (one of them stops the runtime): `/healthz` follows the
//! runtime, `/pods` is what `tinylet get pods -A -o json` prints, `/metrics` passes
//! `promtool check metrics` and its restart counter moves as a container restarts, and
//! abusive clients (one byte a second, 1,000 connections, a 1 MiB header) are cut off
//! while the endpoint and the pods go on.

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

const START: Duration = Duration::from_secs(60);

/// A node on `c` whose endpoint listens on a free loopback port; the agent is started.
fn node_with_endpoint(c: &Containerd, name: &str) -> (Node, SocketAddr) {
    let addr = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let n = Node::new(c, name);
    n.set_config("statusAddress", json!(addr.to_string()));
    n.start_agent();
    wait_for("the endpoint to answer", START, || get(addr, "/healthz"));
    (n, addr)
}

/// `GET path`: the status code and body, `None` when the connection failed.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: tinylet\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split(' ').nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

/// `GET path`, which must answer 200; its body.
fn get_ok(addr: SocketAddr, path: &str) -> String {
    match get(addr, path) {
        Some((200, body)) => body,
        other => panic!("GET {path}: {other:?}"),
    }
}

/// The value of the sample `name{labels...}` (every `k="v"` in `labels` present).
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?;
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            return None;
        }
        let (series, value) = rest.rsplit_once(' ')?;
        labels
            .iter()
            .all(|kv| series.contains(kv))
            .then(|| value.parse().ok())?
    })
}

#[test]
fn healthz_follows_the_runtime() {
    let c = Containerd::start();
    let (n, addr) = node_with_endpoint(&c, "health");
    wait_for("healthz 200", START, || {
        (get(addr, "/healthz")? == (200, "ok\n".into())).then_some(())
    });
    c.stop();
    let why = wait_for("healthz 503 with the runtime stopped", START, || {
        get(addr, "/healthz").filter(|(code, _)| *code == 503)
    });
    assert!(why.1.contains("relist failed"), "{why:?}");
    c.start_again();
    wait_for("healthz 200 with the runtime back", START, || {
        (get(addr, "/healthz")?.0 == 200).then_some(())
    });
    n.assert_agent_alive();
}

#[test]
fn pods_match_the_cli_and_metrics_count_restarts() {
    let c = Containerd::start();
    let (n, addr) = node_with_endpoint(&c, "metrics");
    n.apply(&pod(
        "steady",
        json!({"containers": [sh("app", n.image(), "exec sleep 3600")]}),
    ));
    n.wait_running("steady", START);
    // Same items as the CLI prints (retried: the status may still be settling).
    wait_for("/pods to equal `get pods -A -o json`", START, || {
        let ours: Value = serde_json::from_str(&get_ok(addr, "/pods")).ok()?;
        let cli: Value =
            serde_json::from_str(&n.tinylet_ok(&["get", "pods", "-A", "-o", "json"])).ok()?;
        assert_eq!(ours["kind"], "PodList");
        assert_eq!(ours["apiVersion"], "v1");
        (ours["items"] == cli["items"] && cli["items"].as_array()?.len() == 1).then_some(())
    });

    n.apply(&pod(
        "crash",
        json!({"containers": [sh("app", n.image(), "sleep 1; exit 3")]}),
    ));
    let restarts = |text: &str| {
        sample(
            text,
            "kube_pod_container_status_restarts_total",
            &[r#"namespace="e2e""#, r#"pod="crash""#, r#"container="app""#],
        )
    };
    let first = wait_for("a restart counted in /metrics", START, || {
        restarts(&get_ok(addr, "/metrics")).filter(|r| *r >= 1.0)
    });
    wait_for("the restart counter to move on", START, || {
        restarts(&get_ok(addr, "/metrics")).filter(|r| *r > first)
    });

    let text = get_ok(addr, "/metrics");
    common::promtool::check_metrics(&text);
    let steady = [r#"pod="steady""#, r#"container="app""#];
    assert!(
        sample(&text, "container_cpu_usage_seconds_total", &steady).is_some(),
        "{text}"
    );
    assert!(sample(&text, "container_memory_working_set_bytes", &steady).unwrap() > 0.0);
    let running = [r#"container_state="running""#];
    assert!(sample(&text, "kubelet_running_containers", &running).unwrap() >= 1.0);
    assert_eq!(
        sample(&text, "tinylet_pods", &[r#"phase="Running""#]),
        Some(2.0)
    );
    let relists = sample(&text, "kubelet_pleg_relist_duration_seconds_count", &[]).unwrap();
    assert!(relists >= 2.0, "{relists}");
    assert!(
        sample(
            &text,
            "tinylet_pleg_events_total",
            &[r#"event="ContainerDied""#]
        )
        .unwrap()
            >= 1.0
    );
    let lists = [r#"operation_type="list_podsandbox""#, r#"grpc_code="OK""#];
    assert!(
        sample(
            &text,
            "kubelet_runtime_operations_duration_seconds_count",
            &lists
        )
        .unwrap()
            >= 2.0
    );
    assert!(sample(&text, "tinylet_state_dir_written_files_total", &[]).unwrap() >= 1.0);
    assert!(sample(&text, "process_resident_memory_bytes", &[]).unwrap() > 0.0);
    assert!(sample(&text, "process_open_fds", &[]).unwrap() >= 3.0);
    n.assert_agent_alive();
}

/// Open file descriptors of process `pid`.
fn fds_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Resident memory of process `pid` in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn abusive_clients_are_bounded_and_the_agent_keeps_answering() {
    let c = Containerd::start();
    let (n, addr) = node_with_endpoint(&c, "abuse");
    n.apply(&pod(
        "steady",
        json!({"containers": [sh("app", n.image(), "exec sleep 3600")]}),
    ));
    let before = n.wait_running("steady", START);
    let pid = n.agent_pid().unwrap();
    let fds_idle = fds_of(pid);

    // One byte a second: cut off within the endpoint's deadline (10 s), while others
    // are answered meanwhile.
    let (mid_request, midway) = std::sync::mpsc::channel();
    let slow = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let start = Instant::now();
        let mut buf = [0u8; 64];
        for (i, b) in b"GET /healthz HTTP/1.1\r\nX-Slow: "
            .iter()
            .cycle()
            .enumerate()
        {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            if i == 1 {
                let _ = mid_request.send(());
            }
            match s.read(&mut buf) {
                Ok(0) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                _ => break,
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "slow client never cut off"
            );
        }
        start.elapsed()
    });
    // Answered while the slow client is in the middle of its request.
    midway.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(get(addr, "/healthz").map(|r| r.0), Some(200));

    // A 1 MiB header: refused with 431 at once.
    let start = Instant::now();
    let mut big = TcpStream::connect(addr).unwrap();
    big.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut writer = big.try_clone().unwrap();
    let feeder = std::thread::spawn(move || {
        let mut req = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
        req.resize(req.len() + (1 << 20), b'a');
        req.extend_from_slice(b"\r\n\r\n");
        let _ = writer.write_all(&req);
    });
    let mut answer = Vec::new();
    let _ = big.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer:?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    drop(big);
    feeder.join().unwrap();

    // 1,000 connections held open: the agent's descriptors stay bounded and a new
    // request is still answered.
    let mut held = Vec::new();
    for _ in 0..1000 {
        held.push(TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap());
    }
    let answered = get(addr, "/healthz");
    assert_eq!(answered.as_ref().map(|r| r.0), Some(200), "{answered:?}");
    let fds = fds_of(pid);
    assert!(
        fds <= fds_idle + 40,
        "agent fds: {fds_idle} idle, {fds} with 1,000 clients"
    );
    assert!(rss_kib(pid) < 30 << 10, "agent RSS {} KiB", rss_kib(pid));
    drop(held);

    let took = slow.join().unwrap();
    assert!(
        took <= Duration::from_secs(15),
        "slow client cut off after {took:?}"
    );
    assert_eq!(get(addr, "/healthz").map(|r| r.0), Some(200));
    let after = n.pod("steady").unwrap();
    assert_eq!(restarts(&after, "app"), 0);
    assert_eq!(container_id(&after, "app"), container_id(&before, "app"));
    n.assert_agent_alive();
}
