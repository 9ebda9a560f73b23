//! The cluster side of the uplink bench: the node's kubeconfig pointed at the counting
//! relay, the bench pods as the API gets them (`kubectl create`), and the Node's
//! readiness as kubectl shows it.

use crate::common::kube::Kube;
use crate::common::Containerd;
use crate::node::Node;
use crate::node::{pod_manifest, NS};
use crate::watch::Admin;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A copy of node `name`'s kubeconfig (mode 0600 kept) whose server is `url`, beside
/// the original (its file paths are relative to its directory).
pub fn kubeconfig_via(kube: &Kube, name: &str, url: &str) -> Result<PathBuf, String> {
    let id = kube.node_identity(name);
    let path = id.kubeconfig.with_file_name("kubeconfig-bench-relay");
    std::fs::copy(&id.kubeconfig, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    // `kube.sh node-identity` names the cluster tinylet-test.
    let server = format!("--server={url}");
    let args = ["config", "set-cluster", "tinylet-test", server.as_str()];
    let out = kube.kubectl_as(&path, &args);
    if !out.status.success() {
        return Err(format!(
            "kubectl config set-cluster: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(path)
}

/// Namespace [`NS`], ready for pods.
pub fn namespace(kube: &Kube) {
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}).to_string(),
    );
    kube.wait_namespace(NS);
}

/// The bench pod `name` (node.rs's host-network busybox sleeping) bound to `node`,
/// labelled `bench=BATCH`, with no service-account token volume (projected volumes are
/// not run yet) and tolerating every taint.
pub fn pod(node: &str, image: &str, name: &str, batch: &str) -> Value {
    let mut p = pod_manifest(name, image, &["sleep", "100000"]);
    p["metadata"]["labels"] = json!({"bench": batch});
    let spec = &mut p["spec"];
    spec["nodeName"] = json!(node);
    spec["automountServiceAccountToken"] = json!(false);
    spec["tolerations"] = json!([{"operator": "Exists"}]);
    p
}

/// Writes `pods` as one file each into `dir` (made fresh).
pub fn write_pods(dir: &Path, pods: &[Value]) -> Result<(), String> {
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(io)?;
    for p in pods {
        let name = p["metadata"]["name"].as_str().unwrap_or("pod");
        std::fs::write(dir.join(format!("{name}.json")), p.to_string()).map_err(io)?;
    }
    Ok(())
}

/// `kubectl create -f PATH` (a file or a directory) as admin.
pub fn create(kube: &Kube, path: &Path) -> Result<(), String> {
    let p = path.to_string_lossy();
    let out = kube.kubectl(&["create", "-f", &p]);
    if !out.status.success() {
        return Err(format!(
            "kubectl create -f {p}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// `kubectl delete pods -l bench=BATCH --wait=false` in [`NS`].
pub fn delete_batch(kube: &Kube, batch: &str) -> Result<(), String> {
    let sel = format!("bench={batch}");
    let out = kube.kubectl(&["delete", "pods", "-n", NS, "-l", &sel, "--wait=false"]);
    if !out.status.success() {
        return Err(format!(
            "kubectl delete pods -l {sel}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Waits until Node `name` is Ready in the API (kubectl every 250 ms).
pub fn wait_node_ready(kube: &Kube, name: &str, timeout: Duration) -> Result<(), String> {
    let until = Instant::now() + timeout;
    let mut last = String::new();
    while Instant::now() < until {
        let out = kube.kubectl(&["get", "node", name, "-o", "json"]);
        if out.status.success() {
            let n: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            let ready = n["status"]["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
                .cloned()
                .unwrap_or_default();
            if ready["status"] == "True" {
                return Ok(());
            }
            last = ready.to_string();
        } else {
            last = String::from_utf8_lossy(&out.stderr).into_owned();
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err(format!(
        "Node {name} not Ready in the API within {timeout:?}; last: {last}"
    ))
}

/// Joins the node of `config` to the cluster: the uplink on with `kubeconfig`, the kubelet
/// API on a free port with the `serving` key and certificate, `max_streams` streams.
pub fn join(
    config: &Path,
    kubeconfig: &Path,
    serving: &(PathBuf, PathBuf),
    max_streams: usize,
) -> Result<(), String> {
    let io = |e: String| format!("{}: {e}", config.display());
    let text = std::fs::read_to_string(config).map_err(|e| io(e.to_string()))?;
    let mut cfg: Value = serde_json::from_str(&text).map_err(|e| io(e.to_string()))?;
    let port = std::net::TcpListener::bind("0.0.0.0:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("a free port: {e}"))?
        .port();
    cfg["apiServer"] = json!({"kubeconfig": kubeconfig, "port": port,
                              "tlsPrivateKeyFile": serving.0, "tlsCertFile": serving.1,
                              "maxStreams": max_streams});
    std::fs::write(config, cfg.to_string()).map_err(|e| io(e.to_string()))
}

/// The admin's credentials, for the pod watch.
pub fn admin(kube: &Kube) -> Admin {
    let pki = kube.dir().join("pki");
    Admin {
        url: kube.api_url().to_string(),
        ca: kube.ca_file().to_path_buf(),
        cert: pki.join("admin.crt"),
        key: pki.join("admin.key"),
    }
}

/// "https://127.0.0.1:PORT" -> the socket address.
pub fn api_addr(url: &str) -> Result<std::net::SocketAddr, String> {
    url.trim_start_matches("https://")
        .trim_end_matches('/')
        .parse()
        .map_err(|e| format!("API server URL {url}: {e}"))
}

/// The node under bench in `dir` on `ctd`, joined as `name` through the relay at
/// `relay_url`, with the kubelet API on (a certificate the cluster CA signed) and room
/// for `max_streams` streams; the agent is not started.
pub fn joined_node(
    kube: &Kube,
    ctd: &Containerd,
    relay_url: &str,
    bin: &Path,
    dir: &Path,
    name: &str,
    max_streams: usize,
) -> Result<Node, String> {
    let node = Node::new(
        bin.to_path_buf(),
        dir.to_path_buf(),
        &ctd.endpoint(),
        ctd.sandbox_image(),
        ctd.test_image(),
    )?;
    let kubeconfig = kubeconfig_via(kube, name, relay_url)?;
    let serving = crate::streams::serving_cert(kube, dir, name)?;
    join(&node.config, &kubeconfig, &serving, max_streams)?;
    Ok(node)
}
