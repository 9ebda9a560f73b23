//! What the kubelet API's cluster tests share: a node joined to the real control plane
//! whose kubelet API serves with a certificate of the cluster CA, client certificates,
//! namespaces and pods.
#![allow(dead_code)]

#[cfg(feature = "uplink")]
pub mod flood;

use crate::agent_support::{wait_for, Node};
use crate::common::kube::Kube;
use crate::common::Containerd;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub const START: Duration = Duration::from_secs(90);

/// Runs a shell script (openssl), panicking with its output when it fails; returns
/// its stdout.
pub fn sh(script: &str) -> String {
    let out = Command::new("sh").args(["-ec", script]).output().unwrap();
    assert!(
        out.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A key and certificate `dir/NAME.{key,crt}` for `subj`, signed by `ca` (`ca.crt` and
/// `ca.key` in that directory), with X.509 v3 `ext` lines.
pub fn issue(dir: &Path, name: &str, subj: &str, ext: &str, ca: &Path) -> (PathBuf, PathBuf) {
    let (key, crt) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.crt")),
    );
    let ext_file = dir.join(format!("{name}.ext"));
    std::fs::write(&ext_file, ext).unwrap();
    sh(&format!(
        "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
         -keyout {k} -out {d}/{name}.csr -subj '{subj}' 2>/dev/null
         openssl x509 -req -in {d}/{name}.csr -CA {ca}/ca.crt -CAkey {ca}/ca.key \
         -set_serial 0x$(od -An -tx1 -N8 /dev/urandom | tr -d ' \\n') -days 2 \
         -extfile {e} -out {c} 2>/dev/null
         chmod 600 {k}",
        k = key.display(),
        c = crt.display(),
        d = dir.display(),
        e = ext_file.display(),
        ca = ca.display(),
    ));
    (key, crt)
}

/// A CA of its own in `dir` (`ca.crt`, `ca.key`).
pub fn foreign_ca(dir: &Path) {
    sh(&format!(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
         -keyout {d}/ca.key -out {d}/ca.crt -days 2 -subj /CN=other-ca 2>/dev/null",
        d = dir.display()
    ));
}

pub const CLIENT_EXT: &str = "basicConstraints=critical,CA:FALSE\n\
    keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n";

/// A free TCP port (bound and released: the agent binds it next).
pub fn free_port() -> u16 {
    TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The machine's IPv4 addresses (the node's InternalIP is one of them).
pub fn host_ips() -> Vec<String> {
    let out = Command::new("hostname").arg("-I").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|a| a.parse::<std::net::Ipv4Addr>().is_ok())
        .map(String::from)
        .collect()
}

/// A node joined to `kube` whose kubelet API serves on a free port with a serving
/// certificate the cluster CA signed for the machine's addresses.
pub struct ApiNode {
    pub node: Node,
    pub port: u16,
    /// The local status endpoint's port (plain HTTP on loopback).
    pub status: u16,
    pub pki: PathBuf,
    pub ca: PathBuf,
}

pub fn api_node(kube: &Kube, c: &Containerd, name: &str) -> ApiNode {
    api_node_with(kube, c, name, json!({}))
}

/// As [`api_node`], with `extra` keys in the `apiServer` section.
pub fn api_node_with(kube: &Kube, c: &Containerd, name: &str, extra: Value) -> ApiNode {
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}).to_string(),
    );
    let id = kube.node_identity(name);
    let node = Node::joining(c, &id);
    let pki = node.dir.join("kubelet-pki");
    std::fs::create_dir_all(&pki).unwrap();
    let mut sans = vec![format!("DNS:{name}"), "IP:127.0.0.1".to_string()];
    sans.extend(host_ips().iter().map(|ip| format!("IP:{ip}")));
    let ext = format!(
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
         extendedKeyUsage=serverAuth\nsubjectAltName={}\n",
        sans.join(",")
    );
    let cluster_pki = kube.dir().join("pki");
    let (key, crt) = issue(
        &pki,
        "serving",
        &format!("/CN=system:node:{name}/O=system:nodes"),
        &ext,
        &cluster_pki,
    );
    let port = free_port();
    let status = node.serve_status();
    let mut section = json!({"kubeconfig": id.kubeconfig, "port": port,
                             "tlsCertFile": crt, "tlsPrivateKeyFile": key});
    if let (Some(s), Some(e)) = (section.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    node.set_config("apiServer", section);
    node.start_agent();
    wait_for("the node to advertise its kubelet port", START, || {
        let out = kube.kubectl(&["get", "node", name, "-o", "json"]);
        let n: Value = serde_json::from_slice(&out.stdout).ok()?;
        (n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == port).then_some(())
    });
    ApiNode {
        node,
        port,
        status,
        pki,
        ca: id.ca.clone(),
    }
}

impl ApiNode {
    /// The local status endpoint's `/metrics`.
    pub fn local_metrics(&self) -> String {
        let out = Command::new("curl")
            .args(["-sS", "--fail", "--max-time", "20"])
            .arg(format!("http://127.0.0.1:{}/metrics", self.status))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// curl `path` on the node's kubelet API with `cert` (key, crt); (exit code, status
    /// line code or "000", body).
    pub fn curl(&self, path: &str, cert: Option<&(PathBuf, PathBuf)>) -> (i32, String, String) {
        self.curl_with(&[], path, cert)
    }

    /// As [`ApiNode::curl`] with `extra` curl arguments (`-X POST`, ...).
    pub fn curl_with(
        &self,
        extra: &[&str],
        path: &str,
        cert: Option<&(PathBuf, PathBuf)>,
    ) -> (i32, String, String) {
        let mut cmd = Command::new("curl");
        cmd.args(extra);
        cmd.args([
            "-sS",
            "--max-time",
            "20",
            "--tlsv1.3",
            "-w",
            "\n%{http_code}",
            "--cacert",
        ])
        .arg(&self.ca);
        if let Some((key, crt)) = cert {
            cmd.arg("--cert").arg(crt).arg("--key").arg(key);
        }
        cmd.arg(format!("https://127.0.0.1:{}{path}", self.port));
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        (
            out.status.code().unwrap_or(-1),
            code.to_string(),
            body.to_string(),
        )
    }
}

pub fn namespace(kube: &Kube, ns: &str) {
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}).to_string(),
    );
    kube.wait_namespace(ns);
}

pub fn pod(kube: &Kube, ns: &str, node: &str, name: &str, image: &str, script: &str) {
    pod_with(kube, ns, node, name, image, script, json!({}));
}

/// Pod `web`: busybox httpd on port 8080 serving "hello-web\n" (the port-forward tests).
pub fn web_pod(kube: &Kube, ns: &str, node: &str, image: &str) {
    let serve =
        "mkdir -p /d/www; echo hello-web > /d/www/index.html; exec httpd -f -p 8080 -h /d/www";
    pod(kube, ns, node, "web", image, serve);
}

/// As [`pod`], with `extra` keys in the container (`stdin`, ...).
pub fn pod_with(
    kube: &Kube,
    ns: &str,
    node: &str,
    name: &str,
    image: &str,
    script: &str,
    extra: Value,
) {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "nodeName": node,
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 1,
            "tolerations": [{"operator": "Exists"}],
            "volumes": [{"name": "d", "emptyDir": {}}],
            "containers": [{"name": "app", "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "volumeMounts": [{"name": "d", "mountPath": "/d"}],
                            "command": ["sh", "-c", script]}],
        },
    });
    let mut pod = pod;
    if let (Some(c), Some(e)) = (
        pod["spec"]["containers"][0].as_object_mut(),
        extra.as_object(),
    ) {
        c.extend(e.clone());
    }
    kube.apply(&pod.to_string());
}

/// kubectl as the cluster admin, in namespace `ns`.
pub fn kubectl_ns(kube: &Kube, ns: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(kube.kubectl_path());
    cmd.arg("--kubeconfig")
        .arg(kube.kubeconfig_admin())
        .args(["-n", ns])
        .args(args);
    cmd
}

/// The next line of `out` (panics at the end of the output).
pub fn line(out: &mut BufReader<ChildStdout>, what: &str) -> String {
    let mut l = String::new();
    assert!(out.read_line(&mut l).unwrap() > 0, "{what}: output ended");
    l
}

/// Waits for `child` to exit, at most `limit`.
pub fn exits_within(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
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
pub fn counter(n: &ApiNode, name: &str) -> u64 {
    let text = n.local_metrics();
    let v = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")));
    v.and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} in\n{text}"))
}

/// `cmd` started with stdin, stdout and stderr piped, and its stdout read by lines.
pub fn spawn_piped(mut cmd: Command) -> (Child, BufReader<ChildStdout>) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

/// The body of `http://127.0.0.1:LOCAL/` once it answers (a `kubectl port-forward`'s local
/// port, which takes a moment to be served).
pub fn forwarded_page(local: u16) -> Vec<u8> {
    wait_for("the httpd through the forwarded port", START, || {
        let out = Command::new("curl")
            .args(["-sS", "--fail", "--max-time", "10"])
            .arg(format!("http://127.0.0.1:{local}/"))
            .output()
            .unwrap();
        out.status.success().then_some(out.stdout)
    })
}
