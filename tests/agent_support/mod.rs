//! Support for the agent's end-to-end tests: a "node" (a tinylet config and state
//! directory on a private containerd of the harness), the agent `tinylet run` as a child
//! process, the CLI (`apply`, `get pod -o json`, `delete`, `exec`) and a CRI client to
//! look at the runtime directly. Every wait polls with a deadline; a timeout panics with
//! what was last seen and the tail of the agent's log.
//!
//! The agent process is killed when its [`Node`] is dropped, and (PR_SET_PDEATHSIG) when
//! the thread that started it ends, so a failing test never leaves an agent behind.
#![allow(dead_code)]

use crate::common::Containerd;
use serde_json::{json, Value};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tinylet::cri::{pb, Channel, RuntimeClient};

/// The namespace of every test pod.
pub const NS: &str = "e2e";

/// A tinylet node on one containerd: config file, state dirs, the agent process.
pub struct Node {
    pub dir: PathBuf,
    pub config: PathBuf,
    endpoint: String,
    test_image: String,
    agent: Mutex<Option<Child>>,
    /// The port of the agent's local status endpoint, once [`Node::serve_status`] set one.
    status: Mutex<Option<u16>>,
}

/// The node a test binary shares among its tests, made once: `setup` makes it and starts
/// its agent on a thread that lives as long as the process, because the agent dies with
/// the thread that started it (PR_SET_PDEATHSIG). Called from the binary's own
/// `OnceLock`.
pub fn node_for_the_process<T: Sync + 'static>(
    setup: impl FnOnce() -> T + Send + 'static,
) -> &'static T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let node: &'static T = Box::leak(Box::new(setup()));
        let _ = tx.send(node);
        loop {
            std::thread::park();
        }
    });
    rx.recv().expect("starting the shared agent")
}

impl Node {
    /// Writes the config of a node named `name` in the instance directory of `c`
    /// (removed with the instance). The agent is not started.
    pub fn new(c: &Containerd, name: &str) -> Node {
        let dir = c.dir().join(format!("node-{name}"));
        std::fs::create_dir_all(dir.join("host")).unwrap();
        std::fs::create_dir_all(dir.join("host-ro")).unwrap();
        let config = dir.join("config.json");
        // Pod cgroups of this node's own, below a root the harness removes with the
        // instance (tests/harness/containerd.sh drop_cgroups).
        let tag = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
        let cgroup_root = format!(
            "/tinylet-e2e/{}-{}",
            tag(c.dir().parent().unwrap()),
            tag(c.dir())
        );
        let pods_cgroup: String = name
            .chars()
            .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
            .collect();
        let cfg = json!({
            "cgroupRoot": cgroup_root,
            "podsCgroupName": format!("node_{pods_cgroup}"),
            "nodeName": format!("node-{name}"),
            "runtimeEndpoint": c.endpoint(),
            "stateDir": dir.join("state"),
            "manifestDirs": [],
            "podLogsDir": dir.join("logs"),
            "podsDir": dir.join("pods"),
            "plegPeriod": "500ms",
            "runtimeRequestTimeout": "30s",
            "imagePullTimeout": "60s",
            "sandboxImage": c.sandbox_image(),
            // Writable for cluster pods too (a plain path would be read-only for them);
            // `host-ro` read-only for every pod.
            "allowedHostPaths": [
                {"pathPrefix": dir.join("host"), "readOnly": false},
                {"pathPrefix": dir.join("host-ro"), "readOnly": true},
            ],
            "logLevel": "info",
            // Keep dead containers: tests read the attempts' times from the runtime.
            "containerGC": {"minAge": "10m"},
        });
        std::fs::write(&config, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
        Node {
            dir,
            config,
            endpoint: c.endpoint(),
            test_image: c.test_image().to_string(),
            agent: Mutex::new(None),
            status: Mutex::new(None),
        }
    }

    /// Has the agent (from its next start) serve its local status endpoint on a free
    /// loopback port; returns the port.
    pub fn serve_status(&self) -> u16 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        self.set_config("statusAddress", json!(format!("127.0.0.1:{port}")));
        *self.status.lock().unwrap() = Some(port);
        port
    }

    /// A sample of the agent's `/metrics` without labels (a counter, a histogram's
    /// `_count`); `None` while the endpoint does not answer.
    pub fn metric(&self, name: &str) -> Option<u64> {
        let port = self.status.lock().unwrap().expect("serve_status first");
        let out = Command::new("curl")
            .args(["-sS", "--fail", "--max-time", "5"])
            .arg(format!("http://127.0.0.1:{port}/metrics"))
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))?
            .trim()
            .parse()
            .ok()
    }

    /// Waits until the agent (maybe just started) has relisted the runtime `more`
    /// times: how a test lets the agent act on what it has seen, without a fixed sleep.
    pub fn wait_relists(&self, more: u64) {
        const RELISTS: &str = "kubelet_pleg_relist_duration_seconds_count";
        let start = wait_for(
            "the agent's status endpoint",
            Duration::from_secs(60),
            || self.metric(RELISTS),
        );
        wait_for("relists of the runtime", Duration::from_secs(60), || {
            (self.metric(RELISTS)? >= start + more).then_some(())
        });
    }

    /// A node on `c` named `id.name`, configured to join a cluster with the identity `id`
    /// (`nodeName` and `apiServer.kubeconfig`); the agent is not started.
    pub fn joining(c: &Containerd, id: &crate::common::kube::NodeIdentity) -> Node {
        let n = Node::new(c, &id.name);
        n.set_config("nodeName", json!(id.name));
        n.set_config("apiServer", json!({"kubeconfig": id.kubeconfig}));
        n
    }

    /// The busybox image of the instance.
    pub fn image(&self) -> &str {
        &self.test_image
    }

    /// The directory hostPath volumes may use.
    pub fn host_dir(&self) -> PathBuf {
        self.dir.join("host")
    }

    pub fn agent_log_path(&self) -> PathBuf {
        self.dir.join("agent.log")
    }

    /// Starts `tinylet run` (its stderr appended to agent.log). Panics if one runs.
    pub fn start_agent(&self) {
        self.start_agent_umask(None)
    }

    /// [`Node::start_agent`] with the agent's umask set to `umask` (else inherited).
    pub fn start_agent_umask(&self, umask: Option<u32>) {
        let mut slot = self.agent.lock().unwrap();
        assert!(slot.is_none(), "the agent already runs");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.agent_log_path())
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tinylet"));
        cmd.arg("run")
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "tinylet=debug")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        // SAFETY: only async-signal-safe syscalls (umask, prctl) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(mask) = umask {
                    rustix::process::umask(rustix::fs::Mode::from_raw_mode(mask));
                }
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        *slot = Some(cmd.spawn().expect("spawning tinylet run"));
    }

    /// SIGKILLs the agent (as a crash or power cut would) and reaps it.
    pub fn kill_agent(&self) {
        if let Some(mut child) = self.agent.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The running agent's pid.
    pub fn agent_pid(&self) -> Option<u32> {
        self.agent.lock().unwrap().as_ref().map(Child::id)
    }

    /// Sets `key` (a top-level config field) to `value` in the node's config file; for
    /// the agent's next start.
    pub fn set_config(&self, key: &str, value: Value) {
        let mut cfg: Value = serde_json::from_slice(&std::fs::read(&self.config).unwrap()).unwrap();
        cfg[key] = value;
        std::fs::write(&self.config, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
    }

    /// Asserts the agent is still running (it must never exit on its own).
    pub fn assert_agent_alive(&self) {
        let mut slot = self.agent.lock().unwrap();
        if let Some(child) = slot.as_mut() {
            if let Ok(Some(st)) = child.try_wait() {
                panic!("the agent exited ({st}):\n{}", self.agent_log_tail());
            }
        }
    }

    /// The last 60 lines of the agent's log.
    pub fn agent_log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.agent_log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }

    /// Runs `tinylet CMD --config CONFIG ARGS...` (the option before the arguments: after
    /// `--` it would belong to the command `exec` runs).
    pub fn tinylet(&self, args: &[&str]) -> Output {
        let (cmd, rest) = args.split_first().expect("a tinylet subcommand");
        Command::new(env!("CARGO_BIN_EXE_tinylet"))
            .arg(cmd)
            .arg("--config")
            .arg(&self.config)
            .args(rest)
            .output()
            .expect("running tinylet")
    }

    /// Same, panicking with stderr unless it exits 0; returns stdout.
    pub fn tinylet_ok(&self, args: &[&str]) -> String {
        let out = self.tinylet(args);
        assert!(
            out.status.success(),
            "tinylet {args:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `tinylet apply -f` of one object.
    pub fn apply(&self, object: &Value) {
        let name = object["metadata"]["name"].as_str().unwrap_or("obj");
        let kind = object["kind"].as_str().unwrap_or("Obj");
        let dir = self.dir.join("manifests");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("{kind}-{name}.json"));
        std::fs::write(&file, serde_json::to_vec_pretty(object).unwrap()).unwrap();
        self.tinylet_ok(&["apply", "-f", file.to_str().unwrap()]);
    }

    /// `tinylet delete pod NS/NAME`.
    pub fn delete_pod(&self, name: &str) {
        self.tinylet_ok(&["delete", "pod", &format!("{NS}/{name}")]);
    }

    /// `tinylet get pod NS/NAME -o json`; None when it does not exist.
    pub fn pod(&self, name: &str) -> Option<Value> {
        let out = self.tinylet(&["get", "pod", &format!("{NS}/{name}"), "-o", "json"]);
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }

    /// The pod's uid (assigned by the store on apply).
    pub fn uid(&self, name: &str) -> String {
        let pod = self
            .pod(name)
            .unwrap_or_else(|| panic!("pod {name} not in the store"));
        pod["metadata"]["uid"].as_str().unwrap().to_string()
    }

    /// Polls the pod until `pred` holds on it (with its status); returns it.
    pub fn wait_pod(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        let mut last = Value::Null;
        loop {
            if let Some(p) = self.pod(name) {
                if pred(&p) {
                    return p;
                }
                last = p;
            }
            if Instant::now() > deadline {
                panic!(
                    "pod {name}: not {what} within {timeout:?}; last seen status:\n{}\n\
                     agent log:\n{}",
                    serde_json::to_string_pretty(&last["status"]).unwrap(),
                    self.agent_log_tail()
                );
            }
            self.assert_agent_alive();
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until the pod is Running with every container running and Ready True.
    pub fn wait_running(&self, name: &str, timeout: Duration) -> Value {
        self.wait_pod(name, "Running and Ready", timeout, is_running_ready)
    }

    /// `tinylet exec NS/NAME -c C -- CMD...`: (exit code, stdout, stderr).
    pub fn exec(&self, name: &str, container: &str, cmd: &[&str]) -> (i32, String, String) {
        let target = format!("{NS}/{name}");
        let mut args = vec!["exec", target.as_str(), "-c", container, "--"];
        args.extend_from_slice(cmd);
        let out = self.tinylet(&args);
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs `cmd` in the container until its stdout satisfies `pred`; returns stdout.
    pub fn wait_exec(
        &self,
        name: &str,
        container: &str,
        cmd: &[&str],
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let (code, out, err) = self.exec(name, container, cmd);
            if code == 0 && pred(&out) {
                return out;
            }
            if Instant::now() > deadline {
                panic!(
                    "exec {cmd:?} in {name}/{container}: exit {code}, stdout {out:?}, \
                     stderr {err:?} (not as expected within {timeout:?})\nagent log:\n{}",
                    self.agent_log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// A CRI client on this node's runtime.
    pub fn cri(&self) -> Cri {
        Cri {
            rc: RuntimeClient::new(
                Channel::new(&self.endpoint).unwrap(),
                Duration::from_secs(30),
            ),
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill_agent();
    }
}

/// The runtime seen directly through tinylet's CRI client.
pub struct Cri {
    rc: RuntimeClient,
}

impl Cri {
    /// The sandboxes of pod `uid` (any state).
    pub fn sandboxes(&self, uid: &str) -> Vec<pb::PodSandbox> {
        let filter = pb::PodSandboxFilter {
            label_selector: [("io.kubernetes.pod.uid".to_string(), uid.to_string())].into(),
            ..Default::default()
        };
        tinylet::rt::block_on(self.rc.list_pod_sandbox(Some(filter))).expect("ListPodSandbox")
    }

    /// The containers of pod `uid` (any state).
    pub fn containers(&self, uid: &str) -> Vec<pb::Container> {
        let filter = pb::ContainerFilter {
            label_selector: [("io.kubernetes.pod.uid".to_string(), uid.to_string())].into(),
            ..Default::default()
        };
        tinylet::rt::block_on(self.rc.list_containers(Some(filter))).expect("ListContainers")
    }

    /// One container's status (finished_at, exit code, ...).
    pub fn container_status(&self, id: &str) -> pb::ContainerStatus {
        tinylet::rt::block_on(self.rc.container_status(id)).expect("ContainerStatus")
    }

    /// Every container on the runtime (any state).
    pub fn containers_all(&self) -> Vec<pb::Container> {
        tinylet::rt::block_on(self.rc.list_containers(None)).expect("ListContainers")
    }

    /// Every sandbox on the runtime.
    pub fn all_sandboxes(&self) -> Vec<pb::PodSandbox> {
        tinylet::rt::block_on(self.rc.list_pod_sandbox(None)).expect("ListPodSandbox")
    }

    /// Runs pod `uid` as another CRI client (a kubelet) would: a host-network sandbox
    /// and one container running `sleep`, both with kubelet's pod labels, the sandbox with
    /// `annotations`. Returns the sandbox's and the container's ids.
    pub fn run_as_another_client(
        &self,
        uid: &str,
        image: &str,
        annotations: std::collections::BTreeMap<String, String>,
    ) -> (String, String) {
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("io.kubernetes.pod.uid".to_string(), uid.to_string());
        labels.insert("io.kubernetes.pod.name".to_string(), uid.to_string());
        labels.insert(
            "io.kubernetes.pod.namespace".to_string(),
            "other".to_string(),
        );
        let sb = pb::PodSandboxConfig {
            metadata: Some(pb::PodSandboxMetadata {
                name: uid.into(),
                uid: uid.into(),
                namespace: "other".into(),
                attempt: 0,
            }),
            labels: labels.clone(),
            annotations,
            linux: Some(pb::LinuxPodSandboxConfig {
                security_context: Some(pb::LinuxSandboxSecurityContext {
                    namespace_options: Some(pb::NamespaceOption {
                        network: pb::NamespaceMode::Node as i32,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        labels.insert(
            "io.kubernetes.container.name".to_string(),
            "app".to_string(),
        );
        let c = pb::ContainerConfig {
            metadata: Some(pb::ContainerMetadata {
                name: "app".into(),
                attempt: 0,
            }),
            image: Some(pb::ImageSpec {
                image: image.into(),
                ..Default::default()
            }),
            command: vec!["sleep".into(), "3600".into()],
            labels,
            ..Default::default()
        };
        tinylet::rt::block_on(async {
            let sid = self
                .rc
                .run_pod_sandbox(sb.clone(), "")
                .await
                .expect("RunPodSandbox");
            let cid = self
                .rc
                .create_container(&sid, c, sb)
                .await
                .expect("CreateContainer");
            self.rc.start_container(&cid).await.expect("StartContainer");
            (sid, cid)
        })
    }
}

/// Is the sandbox READY?
pub fn sandbox_ready(s: &pb::PodSandbox) -> bool {
    s.state == pb::PodSandboxState::SandboxReady as i32
}

/// Is the container RUNNING?
pub fn container_running(c: &pb::Container) -> bool {
    c.state == pb::ContainerState::ContainerRunning as i32
}

/// A pod manifest in namespace [`NS`] with `spec` merged over restartPolicy Always and
/// a 2 s grace period (tests stay quick; the grace test sets its own).
pub fn pod(name: &str, spec: Value) -> Value {
    let mut full = json!({
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 2,
    });
    if let (Some(base), Value::Object(extra)) = (full.as_object_mut(), spec) {
        base.extend(extra);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": full,
    })
}

/// A busybox container running `sh -c SCRIPT`.
pub fn sh(name: &str, image: &str, script: &str) -> Value {
    json!({
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", script],
    })
}

/// The pod's phase.
pub fn phase(p: &Value) -> &str {
    p["status"]["phase"].as_str().unwrap_or("")
}

/// The status of container `name` (app or init).
pub fn cstatus<'a>(p: &'a Value, name: &str) -> &'a Value {
    for list in ["containerStatuses", "initContainerStatuses"] {
        if let Some(items) = p["status"][list].as_array() {
            if let Some(c) = items.iter().find(|c| c["name"] == name) {
                return c;
            }
        }
    }
    &Value::Null
}

/// A condition's status ("True"/"False"), "" when absent.
pub fn condition<'a>(p: &'a Value, kind: &str) -> &'a str {
    p["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
}

/// Running phase, Ready True and every app container running.
pub fn is_running_ready(p: &Value) -> bool {
    let all_running = p["status"]["containerStatuses"]
        .as_array()
        .is_some_and(|cs| !cs.is_empty() && cs.iter().all(|c| c["state"]["running"].is_object()));
    phase(p) == "Running" && condition(p, "Ready") == "True" && all_running
}

/// The restart count of container `name`.
pub fn restarts(p: &Value, name: &str) -> i64 {
    cstatus(p, name)["restartCount"].as_i64().unwrap_or(-1)
}

/// The container id (without the runtime prefix) in container `name`'s status.
pub fn container_id(p: &Value, name: &str) -> String {
    let id = cstatus(p, name)["containerID"].as_str().unwrap_or("");
    id.rsplit("://").next().unwrap_or("").to_string()
}

/// Waits until `f` returns Some, polling every 200 ms; panics with `what` on timeout.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Watches for `window` that nothing goes wrong: `check` looks every 200 ms (at least
/// twice) and returns what it found wrong; the first finding fails the test, naming
/// what was watched. In place of a fixed sleep and one look at the end, so a change
/// that comes and goes within the window is seen too.
pub fn holds_for(what: &str, window: Duration, mut check: impl FnMut() -> Option<String>) {
    let end = Instant::now() + window;
    let mut looks = 0;
    loop {
        if let Some(wrong) = check() {
            panic!("{what}: {wrong} (after {looks} good looks over {window:?})");
        }
        looks += 1;
        if looks >= 2 && Instant::now() >= end {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A file the test may share between runs of a node: `dir/name` with `text`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}
