//! One kubemark hollow node (v1.20.2's `kubemark --morph=kubelet`: kubelet's own code
//! on a fake runtime, stub cgroups, fake mounts): its kubeconfig through its relay, its
//! kubelet port, label `fleet=kubemark`. The hollow kubelet puts its fake runtime's
//! socket at a fixed `/tmp/kubelet_remote.sock` and its root directory below /tmp, so
//! each runs in a mount namespace of its own with its directory bound on /tmp: no two
//! share a runtime, and nothing is left on the machine's /tmp.

use crate::agents::Agents;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The kubemark binary, built from the control plane's source tree when missing
/// (tests/harness/kubemark-build.sh, cached in /var/cache/tinylet).
pub fn binary() -> Result<PathBuf, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/harness/kubemark-build.sh");
    let out = Command::new(&script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed ({})", script.display(), out.status));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Starts hollow node `name` in `dir` with `kubeconfig`, kubelet port `port`.
pub fn start(
    agents: &mut Agents,
    kubemark: &Path,
    name: &str,
    dir: &Path,
    kubeconfig: &Path,
    port: u16,
) -> Result<(), String> {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "--", "sh", "-c"])
        .arg(r#"d=$1; shift; mount --bind "$d" /tmp && exec "$@""#)
        .arg("sh")
        .arg(&tmp)
        .arg(kubemark)
        .arg("--morph=kubelet")
        .arg(format!("--name={name}"))
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!("--kubelet-port={port}"))
        .arg("--kubelet-read-only-port=0")
        .arg("--node-labels=fleet=kubemark");
    agents.spawn(name, &dir.join("agent.log"), cmd)
}
