//! One tinylet node of the fleet: its config (the fleet's fake runtime, its own state
//! directories, kubelet API port and serving certificate, the uplink through its relay,
//! label `fleet=tinylet`) and `tinylet run` started on it.

use crate::agents::Agents;
use crate::runtime::PAUSE_IMAGE;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where and how one node runs.
pub struct NodeSetup<'a> {
    pub name: &'a str,
    pub dir: &'a Path,
    pub runtime_endpoint: String,
    pub kubeconfig: &'a Path,
    pub port: u16,
    /// Serving key and certificate of the kubelet API.
    pub serving: (PathBuf, PathBuf),
}

/// Writes node `s`'s config and starts its agent `bin`.
pub fn start(agents: &mut Agents, bin: &Path, s: &NodeSetup) -> Result<(), String> {
    let io = |e: std::io::Error| format!("{}: {e}", s.dir.display());
    std::fs::create_dir_all(s.dir).map_err(io)?;
    std::fs::write(s.dir.join("resolv.conf"), "nameserver 192.0.2.53\n").map_err(io)?;
    let cfg = json!({
        "nodeName": s.name,
        "runtimeEndpoint": s.runtime_endpoint,
        "stateDir": s.dir.join("state"),
        "manifestDirs": [],
        "podLogsDir": s.dir.join("logs"),
        "podsDir": s.dir.join("pods"),
        "resolvConf": s.dir.join("resolv.conf"),
        "sandboxImage": PAUSE_IMAGE,
        "logLevel": "info",
        // The fake runtime makes no cgroups: none on this machine for its pods.
        "cgroupsPerQOS": false,
        "apiServer": {
            "kubeconfig": s.kubeconfig,
            "nodeLabels": {"fleet": "tinylet"},
            "port": s.port,
            "tlsPrivateKeyFile": s.serving.0,
            "tlsCertFile": s.serving.1,
        },
    });
    let config = s.dir.join("config.json");
    std::fs::write(&config, cfg.to_string()).map_err(io)?;
    let mut cmd = Command::new(bin);
    cmd.arg("run").arg("--config").arg(&config);
    agents.spawn(s.name, &s.dir.join("agent.log"), cmd)
}
