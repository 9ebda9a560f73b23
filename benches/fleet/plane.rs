//! The control plane the fleets join (the harness's v1.20.2: etcd, kube-apiserver,
//! controller-manager, scheduler), seen from outside: its processes' CPU time and
//! memory from /proc, the API server's and etcd's /metrics.

use crate::common::kube::Kube;
use crate::procfs::{cpu_time, vm_kib};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The components, by their pid files in the instance directory.
pub const COMPONENTS: [&str; 4] = [
    "kube-apiserver",
    "etcd",
    "kube-controller-manager",
    "kube-scheduler",
];

/// CPU time since its start and VmRSS (KiB) of one component.
#[derive(Clone, Copy, Debug, Default)]
pub struct Proc {
    pub cpu: Duration,
    pub rss: u64,
}

/// The pid of component `name` (after a restart: the new one).
pub fn pid(kube: &Kube, name: &str) -> Result<u32, String> {
    let file = kube.dir().join(format!("{name}.pid"));
    std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| format!("no pid in {}", file.display()))
}

/// What component `name` uses now.
pub fn usage(kube: &Kube, name: &str) -> Result<Proc, String> {
    let pid = pid(kube, name)?;
    Ok(Proc {
        cpu: cpu_time(pid)?,
        rss: vm_kib(pid, "VmRSS:")?,
    })
}

/// The API server's /metrics as admin.
pub fn apiserver_metrics(kube: &Kube) -> Result<String, String> {
    let pki = kube.dir().join("pki");
    let mut cmd = Command::new("curl");
    cmd.args(["-sSf", "--max-time", "30", "--cacert"])
        .arg(kube.ca_file())
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"))
        .arg(format!("{}/metrics", kube.api_url()));
    curl(cmd)
}

/// etcd's /metrics (plain HTTP on loopback).
pub fn etcd_metrics(kube: &Kube) -> Result<String, String> {
    let env = std::fs::read_to_string(kube.dir().join("env")).map_err(|e| e.to_string())?;
    let url = env
        .lines()
        .find_map(|l| l.strip_prefix("KUBE_ETCD_URL="))
        .ok_or("no KUBE_ETCD_URL in the instance's env")?;
    let mut cmd = Command::new("curl");
    cmd.args(["-sSf", "--max-time", "30"])
        .arg(format!("{url}/metrics"));
    curl(cmd)
}

fn curl(mut cmd: Command) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "curl {:?}: {}",
            cmd.get_args().last(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
