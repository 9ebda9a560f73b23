//! The kubelet API's exec streams in the uplink bench: the node serves its
//! kubelet API with a certificate the cluster CA signed, and the bench holds `kubectl
//! exec -i POD -- cat` sessions open through the API server, each seen echoing.

use crate::common::kube::Kube;
use crate::node::NS;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The kubelet API's serving key and certificate (`dir/serving.{key,crt}`) for node
/// `name`, signed by the cluster CA for loopback and the machine's addresses (the
/// API server dials the node's InternalIP).
pub fn serving_cert(kube: &Kube, dir: &Path, name: &str) -> Result<(PathBuf, PathBuf), String> {
    let ips = Command::new("hostname")
        .arg("-I")
        .output()
        .map_err(|e| format!("hostname -I: {e}"))?;
    let mut sans = vec![format!("DNS:{name}"), "IP:127.0.0.1".to_string()];
    sans.extend(
        String::from_utf8_lossy(&ips.stdout)
            .split_whitespace()
            .filter(|a| a.parse::<std::net::Ipv4Addr>().is_ok())
            .map(|ip| format!("IP:{ip}")),
    );
    let ext = dir.join("serving.ext");
    let text = format!(
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
         extendedKeyUsage=serverAuth\nsubjectAltName={}\n",
        sans.join(",")
    );
    std::fs::write(&ext, text).map_err(|e| format!("{}: {e}", ext.display()))?;
    let (key, crt) = (dir.join("serving.key"), dir.join("serving.crt"));
    let script = format!(
        "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
         -keyout {k} -out {d}/serving.csr -subj '/CN=system:node:{name}/O=system:nodes' \
         2>/dev/null && openssl x509 -req -in {d}/serving.csr -CA {ca}/ca.crt \
         -CAkey {ca}/ca.key -set_serial 0x1001 -days 2 -extfile {e} -out {c} 2>/dev/null \
         && chmod 600 {k}",
        k = key.display(),
        c = crt.display(),
        d = dir.display(),
        e = ext.display(),
        ca = kube.dir().join("pki").display(),
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .output()
        .map_err(|e| format!("openssl: {e}"))?;
    if !out.status.success() {
        return Err(format!("openssl: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok((key, crt))
}

/// Open `kubectl exec -i POD -- cat` sessions.
pub struct Execs(Vec<(Child, ChildStdin, BufReader<ChildStdout>)>);

impl Execs {
    /// Opens `n` sessions to `pod`, each answered before the next (an exec is retried
    /// while the node's kubelet API is not up yet).
    pub fn open(kube: &Kube, pod: &str, n: usize, wait: Duration) -> Result<Execs, String> {
        let mut open = Vec::new();
        let until = Instant::now() + wait;
        while open.len() < n {
            let mut child = Command::new(kube.kubectl_path())
                .arg("--kubeconfig")
                .arg(kube.kubeconfig_admin())
                .args(["-n", NS, "exec", "-i", pod, "--", "cat"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("kubectl exec: {e}"))?;
            let mut stdin = child.stdin.take().ok_or("no stdin")?;
            let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
            let mut echo = String::new();
            let sent = stdin.write_all(b"ping\n");
            let read = sent.and_then(|()| out.read_line(&mut echo));
            if matches!(read, Ok(5)) && echo == "ping\n" {
                open.push((child, stdin, out));
                continue;
            }
            let _ = child.kill();
            let failed = child.wait_with_output().map_err(|e| e.to_string())?;
            if Instant::now() > until {
                return Err(format!(
                    "kubectl exec -i {pod} -- cat: no echo within {wait:?}: {}",
                    String::from_utf8_lossy(&failed.stderr)
                ));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Ok(Execs(open))
    }

    /// Ends every session (stdin closed: cat and kubectl exit).
    pub fn close(self) {
        for (mut child, stdin, _) in self.0 {
            drop(stdin);
            let _ = child.wait();
        }
    }
}
