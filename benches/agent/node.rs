//! The node under bench: a tinylet config and state directory inside a private
//! containerd instance, a release binary's `tinylet run` as a child process (replaced by
//! another binary's when the bench compares builds: the new agent adopts the running
//! pods), and the CLI (`tinylet apply`) as the operator would use it.

use serde_json::{json, Value};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Namespace of every bench pod.
pub const NS: &str = "bench";

pub struct Node {
    /// The binary whose CLI (`apply`) the bench uses.
    pub bin: PathBuf,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub state_dir: PathBuf,
    pub image: String,
    /// The agent's local status endpoint (`statusAddress`, on loopback): the bench runs
    /// with every feature on.
    pub status: std::net::SocketAddr,
    agent: Option<Child>,
}

impl Node {
    /// Writes the config (plegPeriod 1s) under `dir`; the agent is not started.
    pub fn new(
        bin: PathBuf,
        dir: PathBuf,
        endpoint: &str,
        sandbox_image: &str,
        image: &str,
    ) -> Result<Node, String> {
        let io = |e: std::io::Error| format!("{}: {e}", dir.display());
        std::fs::create_dir_all(dir.join("manifests")).map_err(io)?;
        let state_dir = dir.join("state");
        let status = free_loopback_port().map_err(io)?;
        let cfg = json!({
            "nodeName": "bench-node",
            "runtimeEndpoint": endpoint,
            "stateDir": state_dir,
            "manifestDirs": [],
            "podLogsDir": dir.join("logs"),
            "podsDir": dir.join("pods"),
            "plegPeriod": "1s",
            "runtimeRequestTimeout": "30s",
            "imagePullTimeout": "60s",
            "sandboxImage": sandbox_image,
            "logLevel": "info",
            "statusAddress": status.to_string(),
        });
        let config = dir.join("config.json");
        std::fs::write(&config, cfg.to_string()).map_err(io)?;
        Ok(Node {
            bin,
            dir,
            config,
            state_dir,
            image: image.to_string(),
            status,
            agent: None,
        })
    }

    fn agent_log(&self) -> PathBuf {
        self.dir.join("agent.log")
    }

    /// Starts `bin run` (stopping the agent running, if any), its log in agent.log;
    /// the kernel kills it if we die.
    pub fn start_agent(&mut self, bin: &Path) -> Result<u32, String> {
        self.start_agent_via(&[], bin)
    }

    /// As [`Node::start_agent`], with `bin` run by the command `prefix` (a profiler).
    pub fn start_agent_via(&mut self, prefix: &[String], bin: &Path) -> Result<u32, String> {
        self.stop_agent();
        let log = std::fs::File::create(self.agent_log()).map_err(|e| e.to_string())?;
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.args(["run", "--config"])
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SAFETY: only an async-signal-safe prctl between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        let child = cmd.spawn().map_err(|e| format!("{}: {e}", bin.display()))?;
        let pid = child.id();
        self.agent = Some(child);
        Ok(pid)
    }

    /// Kills the running agent (SIGKILL: the agent is built to be killed any time).
    pub fn stop_agent(&mut self) {
        if let Some(mut c) = self.agent.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Waits for the agent's "first relist done" log line.
    pub fn wait_ready(&self, timeout: Duration) -> Result<(), String> {
        let until = Instant::now() + timeout;
        while Instant::now() < until {
            let log = std::fs::read_to_string(self.agent_log()).unwrap_or_default();
            if log.contains("first relist done") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "agent not ready after {timeout:?}:\n{}",
            self.log_tail()
        ))
    }

    /// The last lines of the agent's log, for error messages.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.agent_log()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Writes the manifest of pod `name` running `command` to `dir` (not applied).
    pub fn write_pod(&self, dir: &Path, name: &str, command: &[&str]) -> Result<PathBuf, String> {
        let path = dir.join(format!("{name}.json"));
        let pod = pod_manifest(name, &self.image, command);
        std::fs::write(&path, pod.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }

    /// `tinylet apply -f PATH` (a file or a directory).
    pub fn apply(&self, path: &Path) -> Result<(), String> {
        let out = Command::new(&self.bin)
            .args(["apply", "--config"])
            .arg(&self.config)
            .arg("-f")
            .arg(path)
            .output()
            .map_err(|e| format!("{}: {e}", self.bin.display()))?;
        if !out.status.success() {
            return Err(format!(
                "tinylet apply -f {}: {}: {}",
                path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    fn status_path(&self, name: &str) -> PathBuf {
        self.state_dir
            .join("status")
            .join(format!("{NS}_{name}.json"))
    }

    /// Whether pod `name`'s status file says Running with a running container.
    pub fn is_running(&self, name: &str) -> bool {
        let Ok(bytes) = std::fs::read(self.status_path(name)) else {
            return false;
        };
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
            return false;
        };
        v["phase"] == "Running"
            && v["containerStatuses"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["state"]["running"].is_object()))
    }

    /// Polls the status files of `names` every `every` until all are Running.
    pub fn wait_running(&self, names: &[String], every: Duration) -> Result<(), String> {
        let until = Instant::now() + Duration::from_secs(60);
        let mut left: Vec<&String> = names.iter().collect();
        while !left.is_empty() {
            if Instant::now() > until {
                return Err(format!(
                    "pods not Running after 60 s: {left:?}\n{}",
                    self.log_tail()
                ));
            }
            left.retain(|n| !self.is_running(n));
            if !left.is_empty() {
                std::thread::sleep(every);
            }
        }
        Ok(())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop_agent();
    }
}

/// A host-network busybox pod with one container `app` running `command`.
pub fn pod_manifest(name: &str, image: &str, command: &[&str]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "hostNetwork": true,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "app",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": command,
            }],
        },
    })
}

/// A loopback address with a port free now (the kernel's pick, released again).
fn free_loopback_port() -> std::io::Result<std::net::SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()
}

/// GET `path` over HTTP/1.1 with `Connection: close`; the body's length on a 200.
pub fn http_get(addr: std::net::SocketAddr, path: &str) -> Result<usize, String> {
    http_get_body(addr, path).map(|b| b.len())
}

/// GET `path` over HTTP/1.1 with `Connection: close`; the body on a 200.
pub fn http_get_body(addr: std::net::SocketAddr, path: &str) -> Result<String, String> {
    use std::io::{Read as _, Write as _};
    let err = |e: std::io::Error| format!("GET {path} from {addr}: {e}");
    let mut c = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(err)?;
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(err)?;
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
    )
    .map_err(err)?;
    let mut answer = Vec::new();
    c.read_to_end(&mut answer).map_err(err)?;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!(
            "GET {path} from {addr}: {}",
            head.lines().next().unwrap_or("")
        ));
    }
    Ok(body.to_string())
}

/// Waits until the agent whose status endpoint is `addr` has trimmed its code pages
/// `n` times (its `tinylet_code_page_trims_total`): its idle memory from then on.
pub fn wait_trims(addr: std::net::SocketAddr, n: u64, timeout: Duration) -> Result<(), String> {
    let until = Instant::now() + timeout;
    loop {
        let body = http_get_body(addr, "/metrics").unwrap_or_default();
        let trims = body
            .lines()
            .find_map(|l| l.strip_prefix("tinylet_code_page_trims_total "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        if trims >= n {
            return Ok(());
        }
        if Instant::now() >= until {
            return Err(format!(
                "{trims} code page trims after {timeout:?}, waited for {n}"
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
