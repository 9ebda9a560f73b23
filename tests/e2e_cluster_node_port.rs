//! What the node port (the kubelet API) resolves and how it counts connections, on the
//! real control plane of `tests/harness/kube.sh` and a private containerd:
//! - a cluster pod with the name of the device owner's local pod (bound to the node,
//!   refused there) reaches nothing: `kubectl logs`, and exec and port-forward through
//!   the API server, get an error and never the local pod, whose mirror
//!   (`NAME-NODE`) is how the cluster reaches it;
//! - a two-port forward reaches each port: as the API server sends a WebSocket
//!   client's (`port=8080,8081`, v4.channel.k8s.io) and as kubectl's (SPDY);
//! - connections that authenticate with a certificate of the cluster CA and send
//!   nothing (a stolen gateway's, say) do not close another client's request in
//!   progress (its head half sent), nor keep a new one from being answered.

mod agent_support;
mod common;
mod kapi_support;

use agent_support::{wait_for, NS as LOCAL_NS};
use common::kube::Kube;
use common::Containerd;
use kapi_support::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// curl through the API server as its admin (system:masters): `path` with WebSocket
/// upgrade headers (as a WebSocket client of exec or port-forward sends them), for at
/// most 10 s; (HTTP code, everything received).
fn api_websocket(kube: &Kube, path: &str) -> (String, String) {
    let pki = kube.dir().join("pki");
    let out = Command::new("curl")
        .args([
            "-sS",
            "-N",
            "--http1.1",
            "--max-time",
            "10",
            "-w",
            "\n%{http_code}",
        ])
        .arg("--cacert")
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"))
        .args([
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
        ])
        .arg(format!("{}{path}", kube.api_url()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.to_string(), body.to_string())
}

/// A WebSocket port-forward (`v4.channel.k8s.io`) of two ports through the API server
/// as its admin (TLS by `openssl s_client`): an HTTP/1.0 GET sent on each port's data
/// channel (0 and 2); what came back on each of channels 0 to 3 within 15 s.
fn forward_two(kube: &Kube, path: &str) -> Vec<String> {
    use tinylet::cri::websocket::{encode_binary, Decoder, Message};
    let pki = kube.dir().join("pki");
    let authority = kube.api_url().trim_start_matches("https://").to_string();
    let mut tls = Command::new("openssl")
        .args(["s_client", "-quiet", "-connect", &authority, "-CAfile"])
        .arg(pki.join("ca.crt"))
        .arg("-cert")
        .arg(pki.join("admin.crt"))
        .arg("-key")
        .arg(pki.join("admin.key"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = tls.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(15));
        let _ = Command::new("kill")
            .arg(&pid)
            .stderr(Stdio::null())
            .status();
    });
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: Upgrade\r\n\
         Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n"
    );
    let mut stdin = tls.stdin.take().unwrap();
    let mut out = tls.stdout.take().unwrap();
    let _ = stdin.write_all(head.as_bytes());
    let mut by_channel = vec![String::new(); 4];
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    // The answer's head, then the frames.
    let rest = loop {
        match out.read(&mut chunk) {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => {
                let _ = tls.kill();
                let _ = tls.wait();
                return by_channel;
            }
        }
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            if !buf.starts_with(b"HTTP/1.1 101") {
                let _ = tls.kill();
                let _ = tls.wait();
                return by_channel;
            }
            break buf.split_off(i + 4);
        }
    };
    for channel in [0u8, 2] {
        let get = [&[channel][..], b"GET / HTTP/1.0\r\n\r\n"].concat();
        let _ = stdin.write_all(&encode_binary(&get));
    }
    let _ = stdin.flush();
    let mut frames = Decoder::new(1 << 20);
    frames.push(&rest);
    loop {
        while let Ok(Some(m)) = frames.next_message() {
            if let Message::Binary(data) = m {
                if let Some((c, body)) = data.split_first().filter(|(c, _)| **c < 4) {
                    by_channel[usize::from(*c)].push_str(&String::from_utf8_lossy(body));
                }
            }
        }
        let done = by_channel[0].contains("from-8080") && by_channel[2].contains("from-8081");
        if done {
            break;
        }
        match out.read(&mut chunk) {
            Ok(n) if n > 0 => frames.push(&chunk[..n]),
            _ => break,
        }
    }
    drop(stdin);
    let _ = tls.kill();
    let _ = tls.wait();
    by_channel
}

/// `kubectl logs -n NS POD`: (success, stdout, stderr).
fn kubectl_logs(kube: &Kube, ns: &str, pod: &str) -> (bool, String, String) {
    let out = kube.kubectl(&["logs", "-n", ns, pod]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_cluster_pod_named_as_a_local_pod_reaches_nothing_the_mirror_reaches_it() {
    const NODE: &str = "tl-kapi-names";
    const OWNER: &str = "kapi-owner";
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = api_node(kube, &c, NODE);
    namespace(kube, LOCAL_NS);
    let image = c.test_image();

    // The device owner's local pod, and its mirror in the API.
    let secret = "owner-secret-42";
    let script = format!("echo {secret}; exec sleep 3600");
    n.node.apply(&agent_support::pod(
        OWNER,
        json!({"containers": [agent_support::sh("app", image, &script)]}),
    ));
    n.node.wait_running(OWNER, START);
    let mirror = format!("{OWNER}-{NODE}");
    let text = wait_for("the mirror's logs", START, || {
        let (ok, out, _) = kubectl_logs(kube, LOCAL_NS, &mirror);
        (ok && !out.is_empty()).then_some(out)
    });
    assert_eq!(
        text,
        format!("{secret}\n"),
        "the mirror reaches the local pod"
    );
    let exec = |pod: &str| {
        format!(
            "/api/v1/namespaces/{LOCAL_NS}/pods/{pod}/exec?container=app&command=echo\
             &command=reached-{pod}&stdout=true"
        )
    };
    let (code, body) = api_websocket(kube, &exec(&mirror));
    assert_eq!(code, "101", "exec into the mirror: {body}");
    assert!(body.contains(&format!("reached-{mirror}")), "{body:?}");

    // A tenant's cluster pod of the local pod's name, bound to the node (privileged
    // too: refused by the name and by the default policy). The object stays, Failed.
    pod_with(
        kube,
        LOCAL_NS,
        NODE,
        OWNER,
        image,
        "echo tenant; exec sleep 3600",
        json!({"securityContext": {"privileged": true}}),
    );
    wait_for("the node to refuse the tenant's pod", START, || {
        let out = kube.kubectl(&["get", "pod", "-n", LOCAL_NS, OWNER, "-o", "json"]);
        let p: Value = serde_json::from_slice(&out.stdout).ok()?;
        (p["status"]["phase"] == "Failed").then_some(())
    });
    // Its logs, an exec into it, a port-forward to it: an error, never the owner's pod.
    let (ok, out, err) = kubectl_logs(kube, LOCAL_NS, OWNER);
    assert!(!ok && !out.contains(secret), "kubectl logs: {out}{err}");
    let (code, body) = api_websocket(kube, &exec(OWNER));
    assert_ne!(code, "101", "exec into the refused pod: {body}");
    assert!(!body.contains("reached"), "{body:?}");
    let forward = format!("/api/v1/namespaces/{LOCAL_NS}/pods/{OWNER}/portforward?ports=8080");
    let (code, body) = api_websocket(kube, &forward);
    assert_ne!(code, "101", "port-forward to the refused pod: {body}");
    // On the node port itself (what the API server sends, and with a uid): 404.
    let pki = kube.dir().join("pki");
    let admin = issue(
        &n.pki,
        "names-admin",
        "/CN=names-admin/O=system:masters",
        CLIENT_EXT,
        &pki,
    );
    let local_uid = n.node.uid(OWNER);
    let (get, post): (&[&str], &[&str]) = (&[], &["-X", "POST"]);
    for (method, path) in [
        (get, format!("/containerLogs/{LOCAL_NS}/{OWNER}/app")),
        (
            post,
            format!("/exec/{LOCAL_NS}/{OWNER}/app?command=true&output=1"),
        ),
        (
            post,
            format!("/exec/{LOCAL_NS}/{OWNER}/{local_uid}/app?command=true&output=1"),
        ),
        (post, format!("/portForward/{LOCAL_NS}/{OWNER}?port=8080")),
    ] {
        let (_, code, body) = n.curl_with(method, &path, Some(&admin));
        assert_eq!(code, "404", "{path}: {body}");
        assert!(!body.contains(secret), "{path}: {body}");
    }
    // The mirror still reaches the owner's pod; the local pod runs on.
    let (ok, out, err) = kubectl_logs(kube, LOCAL_NS, &mirror);
    assert!(ok && out == format!("{secret}\n"), "{out}{err}");

    // A two-port forward as a WebSocket client asks the API server for it
    // (`ports=8080&ports=8081`; the node gets `port=8080,8081`): each port's channel
    // reaches its own httpd.
    let serve_two = "mkdir -p /d/a /d/b; echo from-8080 > /d/a/index.html; \
                     echo from-8081 > /d/b/index.html; httpd -p 8081 -h /d/b; \
                     exec httpd -f -p 8080 -h /d/a";
    pod(kube, LOCAL_NS, NODE, "kapi-two-ports", image, serve_two);
    let two = format!(
        "/api/v1/namespaces/{LOCAL_NS}/pods/kapi-two-ports/portforward?ports=8080&ports=8081"
    );
    let got = wait_for("both forwarded ports to answer", START, || {
        let by_channel = forward_two(kube, &two);
        let answered = by_channel[0].contains("from-8080") && by_channel[2].contains("from-8081");
        answered.then_some(by_channel)
    });
    assert!(
        !got[0].contains("from-8081") && !got[2].contains("from-8080"),
        "{got:?}"
    );
    // And as kubectl (v1.20, SPDY: no ports in the query, one per stream's headers).
    let (a, b) = (free_port(), free_port());
    let (mut fwd, mut out) = spawn_piped(kubectl_ns(
        kube,
        LOCAL_NS,
        &[
            "port-forward",
            "kapi-two-ports",
            &format!("{a}:8080"),
            &format!("{b}:8081"),
        ],
    ));
    let first = line(&mut out, "kubectl port-forward");
    assert!(first.starts_with("Forwarding from"), "{first}");
    assert_eq!(forwarded_page(a), b"from-8080\n");
    assert_eq!(forwarded_page(b), b"from-8081\n");
    let _ = fwd.kill();
    let _ = fwd.wait();
    n.node.assert_agent_alive();
}

/// `openssl s_client` to the node port with `cert` (key, crt): the TLS handshake done,
/// then whatever is written to its stdin goes to the node.
fn tls_client(n: &ApiNode, cert: &(std::path::PathBuf, std::path::PathBuf)) -> Child {
    Command::new("openssl")
        .args(["s_client", "-quiet", "-tls1_3", "-connect"])
        .arg(format!("127.0.0.1:{}", n.port))
        .arg("-CAfile")
        .arg(&n.ca)
        .arg("-cert")
        .arg(&cert.1)
        .arg("-key")
        .arg(&cert.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn idle_authenticated_connections_never_close_an_authorized_request() {
    const NODE: &str = "tl-kapi-slots";
    const NS: &str = "kapi-slots";
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = api_node(kube, &c, NODE);
    namespace(kube, NS);
    // A log of about 2.6 MB, read whole at the end.
    let script = "i=0; while [ $i -lt 40000 ]; do \
                  echo line-$i-abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz; \
                  i=$((i+1)); done; echo last-line; exec sleep 3600";
    pod(kube, NS, NODE, "big", c.test_image(), script);
    let pki = kube.dir().join("pki");
    let admin = issue(
        &n.pki,
        "slots-admin",
        "/CN=slots-admin/O=system:masters",
        CLIENT_EXT,
        &pki,
    );
    let path = format!("/containerLogs/{NS}/big/app");
    wait_for("the whole log", START, || {
        let (_, code, body) = n.curl(&path, Some(&admin));
        (code == "200" && body.ends_with("last-line\n")).then_some(())
    });

    // The authorized client's request: the TLS handshake done, half of its head sent
    // (as the API server's request waits for its review, or a slow network).
    let mut reader = tls_client(&n, &admin);
    let head = format!("GET {path} HTTP/1.1\r\nHost: node\r\n\r\n");
    let (early, late) = head.split_at(head.len() / 2);
    let stdin = reader.stdin.as_mut().unwrap();
    stdin.write_all(early.as_bytes()).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_secs(1));

    // 24 connections with a certificate of the cluster CA whose user may do nothing
    // here (another gateway's), authenticated and idle: more than the node holds
    // trusted connections in short requests (16).
    let stolen = issue(
        &n.pki,
        "stolen",
        "/CN=system:node:tl-kapi-stolen/O=system:nodes",
        CLIENT_EXT,
        &pki,
    );
    let mut idle: Vec<Child> = (0..24).map(|_| tls_client(&n, &stolen)).collect();
    std::thread::sleep(Duration::from_secs(3));
    // A new authorized request is answered meanwhile ...
    let (_, code, _) = n.curl("/healthz", Some(&admin));
    assert_eq!(code, "200");
    // ... and the one in progress was not closed for them: the rest of its head goes
    // out, the whole log comes back, to its last chunk.
    let stdin = reader.stdin.as_mut().unwrap();
    // A closed connection: openssl has exited, its stdin is a broken pipe.
    let sent = stdin.write_all(late.as_bytes()).and_then(|_| stdin.flush());
    let mut all = Vec::new();
    let _ = reader.stdout.take().unwrap().read_to_end(&mut all);
    let text = String::from_utf8_lossy(&all);
    assert!(
        sent.is_ok()
            && text.starts_with("HTTP/1.1 200")
            && text.contains("last-line\n")
            && text.ends_with("0\r\n\r\n"),
        "the request was closed (sending the rest of its head: {sent:?}; {} bytes \
         received): {:?}",
        all.len(),
        &text[text.len().saturating_sub(200)..]
    );
    for mut c in idle.drain(..) {
        let _ = c.kill();
        let _ = c.wait();
    }
    let _ = reader.kill();
    let _ = reader.wait();
    n.node.assert_agent_alive();
}
