//! End-to-end tests of the kubelet API (`apiServer.port`) against the real control plane
//! of `tests/harness/kube.sh` and a private containerd: `kubectl logs`, `-f` and
//! `--previous` through the API server (which proxies to the node's InternalIP with its
//! kubelet client certificate, in system:masters, and checks the serving certificate
//! against the cluster CA); and the node's own checks with curl: no client certificate
//! -> 401, a certificate of another CA -> refused in the TLS handshake, a user without
//! `nodes/proxy` -> 403, one bound to it by RBAC -> 200, each counted on the local
//! status endpoint's `/metrics`; authenticated requests (curl, and kubectl logs through
//! the API server) answered during a flood of strangers on the node port.

mod agent_support;
mod common;
mod kapi_support;

use agent_support::{wait_for, Node};
use common::kube::Kube;
use common::Containerd;
use kapi_support::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `kubectl logs ARGS -n NS` until it succeeds with output `pred` accepts.
fn logs_until(
    kube: &Kube,
    ns: &str,
    args: &[&str],
    what: &str,
    pred: impl Fn(&str) -> bool,
) -> String {
    let mut all = vec!["logs", "-n", ns];
    all.extend_from_slice(args);
    let deadline = Instant::now() + START;
    loop {
        let out = kube.kubectl(&all);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && pred(&text) {
            return text;
        }
        let last = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(
            Instant::now() < deadline,
            "kubectl {all:?}: not {what}; last:\n{last}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn kubectl_logs_follow_and_previous_through_the_api_server() {
    const NODE: &str = "tl-kapi-logs";
    const NS: &str = "kapi-logs";
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = api_node(kube, &c, NODE);
    namespace(kube, NS);
    let image = c.test_image();
    pod(
        kube,
        NS,
        NODE,
        "ticker",
        image,
        "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.3; done",
    );
    pod(
        kube,
        NS,
        NODE,
        "twice",
        image,
        "n=$(cat /d/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /d/n; echo run $n; \
         if [ $n -lt 2 ]; then exit 1; fi; exec sleep 3600",
    );

    // kubectl logs: the lines so far, in order.
    let text = logs_until(kube, NS, &["ticker"], "three lines", |t| {
        t.lines().count() >= 3
    });
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[..3], ["tick 0", "tick 1", "tick 2"], "{text}");
    // tailLines, timestamps, limitBytes.
    let tail = logs_until(
        kube,
        NS,
        &["ticker", "--tail=1", "--timestamps"],
        "one line",
        |_| true,
    );
    assert_eq!(tail.lines().count(), 1, "{tail}");
    let (time, msg) = tail.trim_end().split_once(' ').unwrap();
    assert!(time.ends_with('Z') && time.contains('T'), "{tail}");
    assert!(msg.starts_with("tick "), "{tail}");
    let limited = logs_until(kube, NS, &["ticker", "--limit-bytes=9"], "9 bytes", |_| {
        true
    });
    assert_eq!(limited, "tick 0\nti");

    // kubectl logs -f: lines the container writes after the request arrive on it.
    let mut follow = Command::new(kube.kubectl_path());
    follow
        .arg("--kubeconfig")
        .arg(kube.kubeconfig_admin())
        .args(["logs", "-f", "-n", NS, "ticker", "--tail=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = follow.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let number = |l: &str| -> u64 { l.trim().trim_start_matches("tick ").parse().unwrap() };
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let first = number(&line);
    let mut seen = vec![first];
    while seen.len() < 5 {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the follow ended early"
        );
        seen.push(number(&line));
    }
    let want: Vec<u64> = (first..first + 5).collect();
    assert_eq!(seen, want, "consecutive lines as written");
    let _ = child.kill();
    let _ = child.wait();

    // /metrics/resource through the API server's node proxy (subresource metrics).
    let path = format!("/api/v1/nodes/{NODE}/proxy/metrics/resource");
    let metrics = wait_for("the ticker's resource metrics", START, || {
        let m = kube.kubectl_ok(&["get", "--raw", &path]);
        m.contains(r#"container_cpu_usage_seconds_total{container="app",pod="ticker",namespace="kapi-logs"}"#)
            .then_some(m)
    });
    for family in [
        "node_cpu_usage_seconds_total",
        "node_memory_working_set_bytes",
        "container_memory_working_set_bytes",
        "scrape_error",
    ] {
        assert!(
            metrics.contains(&format!("# TYPE {family} ")),
            "{family}: {metrics}"
        );
    }
    assert!(metrics.contains("\nscrape_error 0\n"), "{metrics}");
    common::promtool::check_metrics(&metrics);

    // --previous: the run before the restart; without it: the current run.
    let prev = logs_until(kube, NS, &["twice", "--previous"], "the first run", |t| {
        t == "run 1\n"
    });
    assert_eq!(prev, "run 1\n");
    let cur = logs_until(kube, NS, &["twice"], "the second run", |t| t == "run 2\n");
    assert_eq!(cur, "run 2\n");
    n.node.assert_agent_alive();
}

#[test]
fn kubelet_api_authenticates_by_certificate_and_authorizes_by_review() {
    const NODE: &str = "tl-kapi-auth";
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = api_node(kube, &c, NODE);
    let cluster_pki = kube.dir().join("pki");

    // No client certificate: the TLS handshake succeeds, the request gets 401.
    let (_, code, body) = n.curl("/pods", None);
    assert_eq!((code.as_str(), body.as_str()), ("401", "Unauthorized\n"));

    // Not TLS at all (1 MiB of garbage), and a 64 KiB request head: bounded, no harm.
    {
        use std::io::{Read, Write};
        let mut raw = std::net::TcpStream::connect(("127.0.0.1", n.port)).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = raw.write_all(&vec![b'G'; 1 << 20]);
        let mut sink = Vec::new();
        let _ = raw.read_to_end(&mut sink);
        assert!(
            sink.len() < 1024,
            "a TLS alert at most, got {} bytes",
            sink.len()
        );
    }
    let big = format!("X-Big: {}", "a".repeat(64 << 10));
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "20",
            "-H",
            &big,
            "--cacert",
        ])
        .arg(&n.ca)
        .arg(format!("https://127.0.0.1:{}/pods", n.port))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "431");
    n.node.assert_agent_alive();

    // A certificate from another CA: refused in the handshake, no HTTP answer.
    let other = n.pki.join("other");
    std::fs::create_dir_all(&other).unwrap();
    foreign_ca(&other);
    let mallory = issue(
        &other,
        "mallory",
        "/CN=mallory/O=system:masters",
        CLIENT_EXT,
        &other,
    );
    let (exit, code, _) = n.curl("/pods", Some(&mallory));
    assert_ne!(exit, 0, "curl with a foreign certificate must fail");
    assert_eq!(code, "000", "no HTTP status for a refused certificate");

    // A cluster user without nodes/proxy: 403 with kubelet's wording.
    let alice = issue(&n.pki, "alice", "/CN=alice/O=dev", CLIENT_EXT, &cluster_pki);
    let (_, code, body) = n.curl("/pods", Some(&alice));
    assert_eq!(code, "403", "{body}");
    assert_eq!(
        body,
        "Forbidden (user=alice, verb=get, resource=nodes, subresource=proxy)\n"
    );
    // And one bound to nodes/proxy (get) by RBAC: 200, the node's pods.
    kube.apply(
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "kapi-node-proxy"},
                "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}]})
        .to_string(),
    );
    kube.apply(
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "kapi-bob"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "kapi-node-proxy"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                              "name": "bob"}]})
        .to_string(),
    );
    let bob = issue(&n.pki, "bob", "/CN=bob", CLIENT_EXT, &cluster_pki);
    let (_, code, body) = wait_for("bob's binding to take effect", START, || {
        let r = n.curl("/pods", Some(&bob));
        (r.1 == "200").then_some(r)
    });
    assert_eq!(code, "200");
    let list: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["kind"], "PodList", "{body}");
    // bob may get, not create (the verb comes from the method): 403.
    let (_, code, _) = n.curl("/healthz", Some(&bob));
    assert_eq!(code, "200");
    let mut post = Command::new("curl");
    post.args([
        "-sS",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-X",
        "POST",
        "--cacert",
    ])
    .arg(&n.ca)
    .arg("--cert")
    .arg(&bob.1)
    .arg("--key")
    .arg(&bob.0)
    .arg(format!("https://127.0.0.1:{}/pods", n.port));
    let out = post.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403");

    // The local /metrics counts what was accepted and refused, by reason: the garbage
    // and mallory failed the handshake, the anonymous /pods got 401 (the 431 is no
    // refusal of the client), alice and bob's POST 403 (and bob's tries before his
    // binding took effect), bob's GETs were served.
    let text = n.local_metrics();
    common::promtool::check_metrics(&text);
    let value = |series: &str| -> u64 {
        let line = text.lines().find(|l| l.starts_with(series));
        let v = line.and_then(|l| l.rsplit_once(' ')).map(|(_, v)| v);
        v.and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{series} in\n{text}"))
    };
    const REFUSED: &str = "tinylet_kubelet_api_connections_refused_total";
    assert_eq!(value(&format!("{REFUSED}{{reason=\"tls_handshake\"}}")), 2);
    assert_eq!(value(&format!("{REFUSED}{{reason=\"unauthorized\"}}")), 1);
    assert!(value(&format!("{REFUSED}{{reason=\"forbidden\"}}")) >= 2);
    assert!(value("tinylet_kubelet_api_connections_accepted_total ") >= 2);
    // Every connection's TLS records count, the refused ones' too.
    assert!(value("tinylet_kubelet_api_received_bytes_total ") > 1000);
    assert!(value("tinylet_kubelet_api_sent_bytes_total ") > 1000);
    n.node.assert_agent_alive();
}

#[test]
fn serving_certificate_from_a_csr_once_approved() {
    const NODE: &str = "tl-kapi-csr";
    const NS: &str = "kapi-csr";
    let kube = Kube::shared();
    let c = Containerd::start();
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}).to_string(),
    );
    let id = kube.node_identity(NODE);
    let node = Node::joining(&c, &id);
    let port = free_port();
    let status = free_port();
    node.set_config("statusAddress", json!(format!("127.0.0.1:{status}")));
    node.set_config(
        "apiServer",
        json!({"kubeconfig": id.kubeconfig, "port": port, "serverTLSBootstrap": true}),
    );
    node.start_agent();
    // The node asks for a kubelet-serving certificate; nothing listens until it has one.
    let csr = wait_for("the node's CSR", START, || {
        let out = kube.kubectl_ok(&["get", "csr", "-o", "json"]);
        let list: Value = serde_json::from_str(&out).ok()?;
        list["items"].as_array()?.iter().find_map(|r| {
            let mine = r["spec"]["username"] == format!("system:node:{NODE}")
                && r["spec"]["signerName"] == "kubernetes.io/kubelet-serving";
            mine.then(|| r["metadata"]["name"].as_str().unwrap().to_string())
        })
    });
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the kubelet API listens before it has a certificate"
    );
    kube.kubectl_ok(&["certificate", "approve", &csr]);
    wait_for("the node to advertise its kubelet port", START, || {
        let out = kube.kubectl(&["get", "node", NODE, "-o", "json"]);
        let n: Value = serde_json::from_slice(&out.stdout).ok()?;
        (n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == port).then_some(())
    });
    let kept = node.dir.join("state/pki/kubelet-server-current.pem");
    let meta = std::fs::metadata(&kept).unwrap_or_else(|e| panic!("{}: {e}", kept.display()));
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
        0o600
    );
    // The API server checks the certificate against the cluster CA for the node's
    // InternalIP: kubectl logs works through it.
    namespace(kube, NS);
    pod(
        kube,
        NS,
        NODE,
        "hello",
        c.test_image(),
        "echo hello from csr; exec sleep 3600",
    );
    let text = logs_until(kube, NS, &["hello"], "the line", |t| !t.is_empty());
    assert_eq!(text, "hello from csr\n");
    node.assert_agent_alive();
}

/// A short flood of strangers on the node port: idle connects, slow TLS handshakes (a
/// ClientHello, then silence) and full-speed ClientHellos, from 120 loopback addresses
/// (`kapi_support::flood`). Meanwhile an authenticated client's requests and `kubectl
/// logs` through the API server are answered; the bounds closed strangers (counted),
/// and the agent lives. Outcomes only: no timing is asserted.
#[cfg(feature = "uplink")]
#[test]
fn authenticated_requests_get_through_a_flood_of_strangers() {
    use kapi_support::flood::{Flood, Kind, Plan};
    const NODE: &str = "tl-kapi-flood";
    const NS: &str = "kapi-flood";
    const REFUSED: &str = "tinylet_kubelet_api_connections_refused_total";
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = api_node(kube, &c, NODE);
    namespace(kube, NS);
    let script = "echo hello from the flood test; exec sleep 3600";
    pod(kube, NS, NODE, "hello", c.test_image(), script);
    let cluster_pki = kube.dir().join("pki");
    let subj = "/CN=flood-admin/O=system:masters";
    let admin = issue(&n.pki, "flood-admin", subj, CLIENT_EXT, &cluster_pki);
    let want = "hello from the flood test\n";
    logs_until(kube, NS, &["hello"], "the line", |t| t == want);
    let (_, code, _) = n.curl("/healthz", Some(&admin));
    assert_eq!(code, "200");

    let plan = |kind, peers, held| Plan {
        kind,
        peers,
        held,
        max_connects: 100_000,
        max_time: Duration::from_secs(90),
    };
    let target = std::net::SocketAddr::from(([127, 0, 0, 1], n.port));
    let flood = Flood::start(
        target,
        &[
            plan(Kind::Idle, (2, 41), 200),
            plan(Kind::SlowHandshake, (42, 81), 200),
            plan(Kind::Handshake, (82, 121), 1),
        ],
    );
    let evicted = |n: &ApiNode| {
        let text = n.local_metrics();
        let series = format!("{REFUSED}{{reason=\"evicted\"}} ");
        let line = text.lines().find_map(|l| l.strip_prefix(series.as_str()));
        line.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
    };
    wait_for("the flood to press on the bounds", START, || {
        (evicted(&n) > 0).then_some(())
    });
    let before = evicted(&n);
    for i in 0..10 {
        let (exit, code, body) = n.curl("/pods", Some(&admin));
        assert_eq!((exit, code.as_str()), (0, "200"), "request {i}: {body}");
        let out = kube.kubectl(&["logs", "-n", NS, "hello"]);
        assert!(
            out.status.success() && out.stdout == want.as_bytes(),
            "kubectl logs {i} during the flood: {out:?}"
        );
    }
    let during = evicted(&n) - before;
    let stats = flood.stop();
    eprintln!("flood: {stats:?}; {during} connections closed for newcomers meanwhile");
    assert!(
        stats.iter().all(|s| s.stopped && s.connects > 0),
        "the flood went on through the requests: {stats:?}"
    );
    assert!(during > 0, "the flood pressed on the bounds meanwhile");
    let text = n.local_metrics();
    assert!(
        !text.contains(&format!("{REFUSED}{{reason=\"tls_handshake\"}} 0\n")),
        "slow and abandoned handshakes are counted"
    );
    // Afterwards as before.
    let (_, code, _) = n.curl("/healthz", Some(&admin));
    assert_eq!(code, "200");
    n.node.assert_agent_alive();
}
