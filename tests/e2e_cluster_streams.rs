//! End-to-end tests of `kubectl exec`, `attach` and `port-forward` through the real
//! API server to a tinylet node (`/exec`, `/attach`, `/portForward` on the kubelet API,
//! relayed to the private containerd's streaming server): output, exit code and stdin
//! of exec; attach to a container's output and to its stdin; an httpd answering through
//! a forwarded port; `apiServer.maxStreams` (429) and `streamingConnectionIdleTimeout`;
//! a pod deleted mid-stream ends its streams with the agent alive; a user without
//! `nodes/proxy` gets 403 and no stream. On a second node: `kubectl exec -it` and
//! `attach -it` as a user types them (kubectl on a pty, `common::pty`): prompt, output,
//! a terminal inside, its size and a resize, the exit code; exec and attach into a
//! container that crashed once land in its new, running attempt; one that keeps
//! crashing (no running attempt) is "not found".

mod agent_support;
mod common;
mod kapi_support;

use agent_support::wait_for;
use common::kube::Kube;
use common::pty::{session, Step};
use common::Containerd;
use kapi_support::*;
use serde_json::json;
use std::io::{BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const NODE: &str = "tl-streams";
const NS: &str = "kapi-streams";
/// The node and namespace of the terminal tests.
const TTY_NODE: &str = "tl-streams-tty";
const TTY_NS: &str = "kapi-streams-tty";

/// kubectl as the cluster admin, in the test namespace.
fn kubectl(kube: &Kube, args: &[&str]) -> Command {
    kubectl_ns(kube, NS, args)
}

/// `{.status.containerStatuses[0].FIELD}` of pod `name` in the terminal tests' namespace.
fn container_status(kube: &Kube, name: &str, field: &str) -> String {
    let path = format!("jsonpath={{.status.containerStatuses[0].{field}}}");
    let out = kubectl_ns(kube, TTY_NS, &["get", "pod", name, "-o", &path])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A kubectl child with stdout piped, and that stdout read by lines.
fn spawn(kube: &Kube, args: &[&str]) -> (Child, BufReader<ChildStdout>) {
    spawn_piped(kubectl(kube, args))
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
    web_pod(kube, NS, NODE, image);

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
    assert_eq!(forwarded_page(local), b"hello-web\n");
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
    websocket_exec_needs_create(kube, &n);
    n.node.assert_agent_alive();
}

/// A WebSocket exec (a GET with an upgrade) asks for `create` on `nodes/proxy`: a user
/// who may only `get` it is refused (403, no stream), one who may `create` gets the
/// runtime's 101. Roles and bindings made with kubectl.
fn websocket_exec_needs_create(kube: &Kube, n: &ApiNode) {
    let cluster_pki = kube.dir().join("pki");
    for verb in ["get", "create"] {
        let (role, user) = (format!("kapi-ws-{verb}"), format!("ws-{verb}"));
        let verb = format!("--verb={verb}");
        let resource = "--resource=nodes/proxy";
        kube.kubectl_ok(&["create", "clusterrole", &role, &verb, resource]);
        let (role, user) = (role.as_str(), user.as_str());
        let binding = ["create", "clusterrolebinding", role, "--clusterrole", role];
        kube.kubectl_ok(&[&binding[..], &["--user", user]].concat());
    }
    let getter = issue(&n.pki, "ws-get", "/CN=ws-get", CLIENT_EXT, &cluster_pki);
    let creator = issue(
        &n.pki,
        "ws-create",
        "/CN=ws-create",
        CLIENT_EXT,
        &cluster_pki,
    );
    let upgrade = [
        "-H",
        "Connection: Upgrade",
        "-H",
        "Upgrade: websocket",
        "-H",
        "Sec-WebSocket-Version: 13",
        "-H",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "-H",
        "Sec-WebSocket-Protocol: v4.channel.k8s.io",
    ];
    let path = format!("/exec/{NS}/shell/app?command=echo&command=hi&output=1");
    let opened = counter(n, "tinylet_kubelet_api_streams_opened_total");
    // The getter's RBAC works (a GET of /pods is allowed) ...
    let (_, code, _) = wait_for("ws-get's binding to take effect", START, || {
        let r = n.curl("/pods", Some(&getter));
        (r.1 == "200").then_some(r)
    });
    assert_eq!(code, "200");
    // ... but a WebSocket GET of /exec asks for create: 403, no stream.
    let (_, code, body) = n.curl_with(&upgrade, &path, Some(&getter));
    assert_eq!(code, "403", "{body}");
    assert_eq!(
        body,
        "Forbidden (user=ws-get, verb=create, resource=nodes, subresource=proxy)\n"
    );
    assert_eq!(
        counter(n, "tinylet_kubelet_api_streams_opened_total"),
        opened
    );
    // The creator's is relayed to the runtime, which switches protocols.
    let (_, code, body) = wait_for("ws-create's binding to take effect", START, || {
        let r = n.curl_with(&upgrade, &path, Some(&creator));
        (r.1 != "403").then_some(r)
    });
    assert_eq!(code, "101", "{body}");
    assert_eq!(
        counter(n, "tinylet_kubelet_api_streams_opened_total"),
        opened + 1
    );
}

#[test]
fn kubectl_exec_and_attach_on_a_terminal_and_after_a_crash() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = api_node(kube, &c, TTY_NODE);
    namespace(kube, TTY_NS);
    let image = c.test_image();
    pod(kube, TTY_NS, TTY_NODE, "shell", image, "exec sleep 3600");
    let tty = json!({"stdin": true, "tty": true});
    pod_with(kube, TTY_NS, TTY_NODE, "console", image, "exec sh", tty);
    // Crashes on its first run; its second attempt runs on.
    let crash_once =
        "if [ -e /d/crashed ]; then exec sleep 3600; fi; touch /d/crashed /tmp/first; exit 1";
    pod(kube, TTY_NS, TTY_NODE, "crasher", image, crash_once);
    // Crashes at once every time: it has no running attempt but for a moment.
    pod(kube, TTY_NS, TTY_NODE, "crashing", image, "exit 1");
    for p in ["shell", "console"] {
        wait_for(&format!("{p} to run"), START, || {
            (container_status(kube, p, "ready") == "true").then_some(())
        });
    }

    // exec -it: a prompt, typed commands and their output, a terminal of the size of
    // kubectl's (33x111), then resized (40x120), and `exit 3` is kubectl's exit code.
    let cmd = kubectl_ns(kube, TTY_NS, &["exec", "-it", "shell", "--", "sh"]);
    let steps = [
        Step::Until("# "),
        Step::Type("echo $((6*7))"),
        Step::Until("\r\n42\r\n"),
        Step::Type("tty; echo TERM=$TERM"),
        Step::Until("/dev/pts/"),
        Step::Until("TERM=xterm"),
        Step::Retype("stty size", "33 111"),
        Step::Size(40, 120),
        Step::Retype("stty size", "40 120"),
        Step::Type("exit 3"),
    ];
    let s = session(&cmd, 33, 111, &steps, 60)
        .unwrap_or_else(|e| panic!("kubectl exec -it: {e}\nagent:\n{}", n.node.agent_log_tail()));
    assert_eq!((s.exit, s.cooked), (3, true), "{s:?}");

    // attach -it: the container's own shell on its own terminal; ended by the user.
    let cmd = kubectl_ns(kube, TTY_NS, &["attach", "-it", "console"]);
    let steps = [
        // Enter until a prompt: the shell printed its first one before kubectl came.
        Step::Retype("", "# "),
        Step::Type("echo $((6*7)) $(tty)"),
        Step::Until("\r\n42 /dev/pts/"),
        Step::Term,
    ];
    if let Err(e) = session(&cmd, 24, 80, &steps, 60) {
        panic!(
            "kubectl attach -it: {e}\nagent:\n{}",
            n.node.agent_log_tail()
        );
    }

    // After a crash: the exited first attempt and the running second carry the same
    // labels; exec goes to the running one (a fresh root: no /tmp/first).
    wait_for("crasher's second attempt to run", START, || {
        let restarts = container_status(kube, "crasher", "restartCount");
        let running = container_status(kube, "crasher", "state.running.startedAt");
        (restarts == "1" && !running.is_empty()).then_some(())
    });
    let probe = "test -e /d/crashed && ! test -e /tmp/first && tr '\\0' ' ' </proc/1/cmdline";
    let out = kubectl_ns(kube, TTY_NS, &["exec", "crasher", "--", "sh", "-c", probe])
        .output()
        .unwrap();
    assert_eq!(
        (
            String::from_utf8_lossy(&out.stdout).as_ref(),
            out.status.code()
        ),
        ("sleep 3600 ", Some(0)),
        "{out:?}"
    );
    // attach too: its stdout is the new attempt's (which prints nothing: the stream
    // stays open until kubectl is stopped, where the exited one would end at once).
    let mut attach = kubectl_ns(kube, TTY_NS, &["attach", "crasher"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        attach.try_wait().unwrap().is_none(),
        "attach ended: {:?}",
        attach.wait_with_output()
    );
    let _ = attach.kill();
    let _ = attach.wait();

    // No running attempt (only exited ones, between restarts): no stream into an
    // exited one either, "not found" as kubelet says it.
    wait_for("crashing to have restarted", START, || {
        let restarts = container_status(kube, "crashing", "restartCount");
        (restarts.parse::<u32>().unwrap_or(0) >= 1).then_some(())
    });
    let out = kubectl_ns(kube, TTY_NS, &["exec", "crashing", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        err.contains(r#"container not found ("app" in pod kapi-streams-tty/crashing; no attempt of it is running)"#),
        "{err}"
    );
    n.node.assert_agent_alive();
}
