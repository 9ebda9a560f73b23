//! The kubelet API's serving certificate is renewed before it expires
//! (`serverTLSBootstrap`), against the real control plane of `tests/harness/kube.sh`
//! and a private containerd. The node starts with a kept certificate the cluster CA
//! signed for one hour and five minutes, an hour ago: past the 70-90 % point of its
//! lifetime, so the agent serves it and asks at once for the next one; once an admin
//! approves that CSR, the next TLS handshake gets the new certificate (signed for days
//! here), which is also what is kept for restarts.

mod agent_support;
mod common;
mod kapi_support;

use agent_support::{wait_for, Node};
use common::kube::Kube;
use common::Containerd;
use kapi_support::{free_port, sh, START};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `YYYYMMDDHHMMSSZ` of `t` (what `openssl ca -startdate/-enddate` take).
fn generalized_time(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let date = sh(&format!("date -u -d @{secs} +%Y%m%d%H%M%SZ"));
    date.trim().to_string()
}

/// Certificate and key (PKCS#8), PEM in one file as the agent keeps them, for
/// `system:node:NAME` valid from `from` to `to`, signed by the cluster CA in `ca`.
fn short_lived(dir: &Path, name: &str, ca: &Path, from: SystemTime, to: SystemTime) -> String {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("ca.cnf"),
        "[ca]\ndefault_ca = c\n[c]\ndatabase = index.txt\nnew_certs_dir = .\n\
         serial = serial\ndefault_md = sha256\npolicy = p\n\
         [p]\ncommonName = supplied\norganizationName = optional\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("ext"),
        format!(
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=serverAuth\nsubjectAltName=DNS:{name},IP:127.0.0.1\n"
        ),
    )
    .unwrap();
    sh(&format!(
        "cd {d}; : > index.txt; echo 01 > serial
         openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
           -keyout old.key -out old.csr -subj '/O=system:nodes/CN=system:node:{name}' 2>/dev/null
         openssl ca -batch -config ca.cnf -cert {ca}/ca.crt -keyfile {ca}/ca.key -in old.csr \
           -out old.crt -notext -extfile ext -startdate {from} -enddate {to} 2>/dev/null",
        d = dir.display(),
        ca = ca.display(),
        from = generalized_time(from),
        to = generalized_time(to),
    ));
    let pem = std::fs::read_to_string(dir.join("old.crt")).unwrap()
        + &std::fs::read_to_string(dir.join("old.key")).unwrap();
    assert!(
        pem.contains("BEGIN PRIVATE KEY"),
        "openssl wrote no PKCS#8 key"
    );
    pem
}

/// `notAfter=...` of the certificate the server on `port` sends in a handshake.
fn served_not_after(port: u16) -> Option<String> {
    let script = format!(
        "openssl s_client -connect 127.0.0.1:{port} -servername localhost </dev/null \
         2>/dev/null | openssl x509 -noout -enddate"
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    text.starts_with("notAfter=").then_some(text)
}

/// The pending kubelet-serving CSRs of user `system:node:NAME`.
fn pending_csrs(kube: &Kube, name: &str) -> Vec<String> {
    let out = kube.kubectl_ok(&["get", "csr", "-o", "json"]);
    let list: Value = serde_json::from_str(&out).unwrap();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|r| {
            r["spec"]["username"] == format!("system:node:{name}")
                && r["spec"]["signerName"] == "kubernetes.io/kubelet-serving"
                && r["status"]["conditions"].is_null()
        })
        .map(|r| r["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_serving_certificate_is_renewed_before_it_expires() {
    const NODE: &str = "tl-kapi-rotate";
    let kube = Kube::shared();
    let c = Containerd::start();
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}).to_string(),
    );
    let id = kube.node_identity(NODE);
    let node = Node::joining(&c, &id);
    let now = SystemTime::now();
    let old = short_lived(
        &node.dir.join("old-pki"),
        NODE,
        &kube.dir().join("pki"),
        now - Duration::from_secs(3600),
        now + Duration::from_secs(300),
    );
    let kept = node.dir.join("state/pki/kubelet-server-current.pem");
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    std::fs::write(&kept, &old).unwrap();
    // A key: the agent refuses one that others may read.
    std::fs::set_permissions(&kept, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let port = free_port();
    node.set_config(
        "apiServer",
        json!({"kubeconfig": id.kubeconfig, "port": port, "serverTLSBootstrap": true}),
    );
    node.start_agent();
    // The kept certificate is served at once, and its successor requested.
    let first = wait_for("the kept certificate to be served", START, || {
        served_not_after(port)
    });
    let expected = sh(&format!(
        "openssl x509 -noout -enddate -in {}",
        node.dir.join("old-pki/old.crt").display()
    ));
    assert_eq!(first, expected.trim());
    let csr = wait_for("the renewal's CSR", START, || {
        pending_csrs(kube, NODE).into_iter().next()
    });
    // Until it is approved the old certificate stays in use.
    assert_eq!(served_not_after(port).as_deref(), Some(first.as_str()));
    kube.kubectl_ok(&["certificate", "approve", &csr]);
    let renewed = wait_for("the renewed certificate to be served", START, || {
        served_not_after(port).filter(|n| *n != first)
    });
    let on_disk = std::fs::read_to_string(&kept).unwrap();
    assert_ne!(on_disk, old, "the renewed certificate is kept for restarts");
    let kept_not_after = sh(&format!(
        "openssl x509 -noout -enddate -in {}",
        kept.display()
    ));
    assert_eq!(renewed, kept_not_after.trim());
    // Signed by the controller-manager for its duration (capped by the test CA's 30
    // days): beyond the old one's five minutes, so the next renewal is days away and
    // no new request follows.
    let later = sh(&format!(
        "openssl x509 -noout -checkend {} -in {} && echo valid",
        24 * 3600,
        kept.display()
    ));
    assert!(later.contains("valid"), "{renewed}");
    assert!(pending_csrs(kube, NODE).is_empty());
    node.assert_agent_alive();
}
