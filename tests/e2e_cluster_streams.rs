//! End-to-end tests of `kubectl exec`, `attach` and `port-forward` through the real
//! API server to a tinylet node (`/exec`, `/attach`, `/portForward` on the kubelet API,
//! relayed to the private containerd's streaming server): output, exit code and stdin
//! of exec; attach to a container's output and to its stdin; an httpd answering through
//! a forwarded port; `apiServer.maxStreams` (429) and `streamingConnectionIdleTimeout`;
//! a pod deleted mid-stream ends its streams with the agent alive; a user without
//! `nodes/proxy` gets 403 and no stream.

mod agent_support;
mod common;
mod kapi_support;

use agent_support::wait_for;
use common::kube::Kube;
use common::Containerd;
use kapi_support::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const NODE: &str = "tl-streams";
const NS: &str = "kapi-streams";

/// kubectl as the cluster admin, in the test namespace.
fn kubectl(kube: &Kube, args: &[&str]) -> Command {
    let mut cmd = Command::new(kube.kubectl_path());
    cmd.arg("--kubeconfig")
        .arg(kube.kubeconfig_admin())
        .args(["-n", NS])
        .args(args);
    cmd
}

/// A kubectl child with stdout piped, and that stdout read by lines.
fn spawn(kube: &Kube, args: &[&str]) -> (Child, BufReader<ChildStdout>) {
    let mut child = kubectl(kube, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

/// The next line of `out` (panics at the end of the output).
fn line(out: &mut BufReader<ChildStdout>, what: &str) -> String {
    let mut l = String::new();
    assert!(out.read_line(&mut l).unwrap() > 0, "{what}: output ended");
    l
}

/// Waits for `child` to exit, at most `limit`.
fn exits_within(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: still running after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `/metrics` counter `name` of the node.
fn counter(n: &ApiNode, name: &str) -> u64 {
    let text = n.local_metrics();
    let v = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")));
    v.and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} in\n{text}"))
}

#[test]
fn kubectl_exec_attach_and_port_forward_through_the_api_server() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = api_node_with(
        kube,
        &c,
        NODE,
        json!({"maxStreams": 3, "streamingConnectionIdleTimeout": "4s"}),
    );
    namespace(kube, NS);
    let image = c.test_image();
    pod(kube, NS, NODE, "shell", image, "exec sleep 3600");
    pod(
        kube,
        NS,
        NODE,
        "ticker",
        image,
        "while true; do echo tick; sleep 0.3; done",
    );
    pod_with(
        kube,
        NS,
        NODE,
        "reader",
        image,
        "while read l; do echo got $l; done; exec sleep 3600",
        json!({"stdin": true}),
    );
    pod(
        kube,
        NS,
        NODE,
        "web",
        image,
        "mkdir -p /d/www; echo hello-web > /d/www/index.html; exec httpd -f -p 8080 -h /d/www",
    );

    // exec: the output and the exit code come back (retried until the pod runs).
    let deadline = Instant::now() + START;
    let out = loop {
        let out = kubectl(
            kube,
            &["exec", "shell", "--", "sh", "-c", "echo hi; exit 3"],
        )
        .output()
        .unwrap();
        if out.stdout == b"hi\n" {
            break out;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl exec: {out:?}\nagent:\n{}",
            n.node.agent_log_tail()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(out.status.code(), Some(3), "{out:?}");

    // exec -i: stdin goes through and its end reaches the command.
    let mut cat = kubectl(kube, &["exec", "-i", "shell", "--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    cat.stdin.take().unwrap().write_all(b"data\n").unwrap();
    let out = cat.wait_with_output().unwrap();
    assert_eq!(out.stdout, b"data\n", "{out:?}");
    assert!(out.status.success(), "{out:?}");

    // attach: the container's own output, and its stdin.
    let (mut ticks, mut out) = spawn(kube, &["attach", "ticker"]);
    assert_eq!(line(&mut out, "attach"), "tick\n");
    let _ = ticks.kill();
    let _ = ticks.wait();
    let (mut reader, mut out) = wait_for("the reader to run", START, || {
        let out = kubectl(
            kube,
            &["get", "pod", "reader", "-o", "jsonpath={.status.phase}"],
        )
        .output()
        .unwrap();
        (out.stdout == b"Running").then(|| spawn(kube, &["attach", "-i", "reader"]))
    });
    let mut stdin = reader.stdin.take().unwrap();
    // kubectl reads its stdin once the stream is up; lines before that wait in the pipe.
    stdin.write_all(b"ping\n").unwrap();
    let got = line(&mut out, "attach -i");
    assert_eq!(got, "got ping\n");
    drop(stdin);
    let _ = reader.kill();
    let _ = reader.wait();

    // port-forward: the pod's httpd answers on a local port.
    let local = free_port();
    let (mut fwd, mut out) = spawn(kube, &["port-forward", "web", &format!("{local}:8080")]);
    let first = line(&mut out, "port-forward");
    assert!(first.starts_with("Forwarding from"), "{first}");
    let page = wait_for("the httpd through the forwarded port", START, || {
        let out = Command::new("curl")
            .args(["-sS", "--fail", "--max-time", "10"])
            .arg(format!("http://127.0.0.1:{local}/"))
            .output()
            .unwrap();
        out.status.success().then_some(out.stdout)
    });
    assert_eq!(page, b"hello-web\n");
    let _ = fwd.kill();
    let _ = fwd.wait();

    // An exec with no byte either way ends after streamingConnectionIdleTimeout (4 s).
    let t = Instant::now();
    let mut quiet = kubectl(kube, &["exec", "shell", "--", "sleep", "3600"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    exits_within(&mut quiet, Duration::from_secs(60), "an idle exec");
    assert!(t.elapsed() >= Duration::from_secs(3), "{:?}", t.elapsed());

    // maxStreams (3): three open streams, a fourth request gets 429 before any stream.
    let cluster_pki = kube.dir().join("pki");
    let admin = issue(
        &n.pki,
        "streams-admin",
        "/CN=streams-admin/O=system:masters",
        CLIENT_EXT,
        &cluster_pki,
    );
    let mut held = Vec::new();
    for i in 0..3 {
        let (child, mut out) = spawn(
            kube,
            &[
                "exec",
                "ticker",
                "--",
                "sh",
                "-c",
                "while true; do echo x; sleep 1; done",
            ],
        );
        assert_eq!(line(&mut out, &format!("held exec {i}")), "x\n");
        held.push((child, out));
    }
    let post = ["-X", "POST"];
    let exec_path = format!("/exec/{NS}/shell/app?command=true&output=1");
    let (_, code, body) = n.curl_with(&post, &exec_path, Some(&admin));
    assert_eq!(code, "429", "{body}");
    assert!(body.contains("apiServer.maxStreams is 3"), "{body}");

    // Deleting the pod ends its streams: every held kubectl returns, the agent lives.
    kubectl(kube, &["delete", "pod", "ticker", "--wait=false"])
        .output()
        .unwrap();
    for (i, (child, _)) in held.iter_mut().enumerate() {
        exits_within(
            child,
            START,
            &format!("held exec {i} after the pod's deletion"),
        );
    }
    n.node.assert_agent_alive();

    // A user without nodes/proxy: 403 as kubelet words it, and no stream opened.
    let opened = counter(&n, "tinylet_kubelet_api_streams_opened_total");
    let alice = issue(&n.pki, "alice", "/CN=alice/O=dev", CLIENT_EXT, &cluster_pki);
    let (_, code, body) = n.curl_with(&post, &exec_path, Some(&alice));
    assert_eq!(code, "403", "{body}");
    assert_eq!(
        body,
        "Forbidden (user=alice, verb=create, resource=nodes, subresource=proxy)\n"
    );
    assert_eq!(
        counter(&n, "tinylet_kubelet_api_streams_opened_total"),
        opened
    );
    assert!(opened >= 8, "{opened} streams counted");
    assert_eq!(counter(&n, "tinylet_kubelet_api_streams_refused_total"), 1);
    n.node.assert_agent_alive();
}
