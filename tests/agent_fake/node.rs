//! A node on the fake runtime: a temp directory with the config, state, pods and log
//! directories, the fake runtime's socket, and `tinylet run` as a child process (the
//! real binary, as a normal user needs it: nothing here mounts or needs root).
//!
//! Tests apply pods with `tinylet apply`, read the agent's status files and the fake's
//! record of calls. Every wait polls with a deadline and fails naming what it waited
//! for, with the last status, the agent's log tail and the runtime's last calls; every
//! "nothing happens" is a bounded observation that names what it watched.

use crate::runtime::{Call, FakeRuntime, Outcome, PAUSE_IMAGE};
use serde_json::{json, Value};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The namespace of every test pod.
pub const NS: &str = "fake";
/// The image every pod runs (present on the fake runtime).
pub const IMAGE: &str = "fake.local/app:1";
/// How long a wait may take before the test fails (generous: 2 shared cores).
pub const WAIT: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(20);

pub struct FakeNode {
    pub dir: PathBuf,
    pub rt: FakeRuntime,
    config: PathBuf,
    agent: Option<Child>,
}

impl FakeNode {
    /// A node with the default test config (agent not started).
    pub fn new(name: &str) -> FakeNode {
        FakeNode::with_config(name, |_| {})
    }

    /// A node whose config `tweak` edits (agent not started).
    pub fn with_config(name: &str, tweak: impl FnOnce(&mut Value)) -> FakeNode {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tl-fake-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("resolv.conf"), "nameserver 192.0.2.53\n").unwrap();
        let rt = FakeRuntime::start(&dir, &[IMAGE]);
        let mut cfg = json!({
            "nodeName": "fake-node",
            "runtimeEndpoint": rt.endpoint(),
            "stateDir": dir.join("state"),
            "manifestDirs": [],
            "podLogsDir": dir.join("logs"),
            "podsDir": dir.join("pods"),
            "resolvConf": dir.join("resolv.conf"),
            "plegPeriod": "100ms",
            "runtimeRequestTimeout": "5s",
            "imagePullTimeout": "5s",
            "sandboxImage": PAUSE_IMAGE,
            "logLevel": "debug",
            // GC would remove dead containers the tests look at; tests that want it
            // set their own period.
            "containerGC": {"period": "1h"},
            "imageGC": {"period": "1h"},
            // The fake runtime makes no cgroups: no pod cgroups on this machine for it.
            "cgroupsPerQOS": false,
        });
        tweak(&mut cfg);
        let config = dir.join("config.json");
        std::fs::write(&config, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
        FakeNode {
            dir,
            rt,
            config,
            agent: None,
        }
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("agent.log")
    }

    /// Starts `tinylet run` (stderr appended to agent.log).
    pub fn start_agent(&mut self) {
        assert!(self.agent.is_none(), "the agent already runs");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tinylet"));
        cmd.arg("run")
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "tinylet=debug")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
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
        self.agent = Some(cmd.spawn().expect("spawning tinylet run"));
    }

    /// SIGKILLs the agent (a crash or power cut) and reaps it.
    pub fn kill_agent(&mut self) {
        if let Some(mut child) = self.agent.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Panics when the agent exited (it must never exit on its own).
    pub fn assert_agent_alive(&mut self) {
        if let Some(child) = self.agent.as_mut() {
            if let Ok(Some(st)) = child.try_wait() {
                panic!("the agent exited ({st}):\n{}", self.log_tail(60));
            }
        }
    }

    /// The last `n` lines of the agent's log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// The agent's whole log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Runs `tinylet CMD --config CONFIG ARGS...`, panicking unless it exits 0.
    pub fn tinylet(&self, args: &[&str]) -> String {
        let (cmd, rest) = args.split_first().expect("a subcommand");
        let out = Command::new(env!("CARGO_BIN_EXE_tinylet"))
            .arg(cmd)
            .arg("--config")
            .arg(&self.config)
            .args(rest)
            .output()
            .expect("running tinylet");
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
        let file = self.dir.join(format!("manifest-{name}.json"));
        std::fs::write(&file, serde_json::to_vec_pretty(object).unwrap()).unwrap();
        self.tinylet(&["apply", "-f", file.to_str().unwrap()]);
    }

    /// `tinylet delete pod NS/NAME`.
    pub fn delete_pod(&self, name: &str) {
        self.tinylet(&["delete", "pod", &format!("{NS}/{name}")]);
    }

    fn status_file(&self, name: &str) -> PathBuf {
        self.dir
            .join("state/status")
            .join(format!("{NS}_{name}.json"))
    }

    /// The pod's status file as the agent last wrote it.
    pub fn status(&self, name: &str) -> Option<Value> {
        let text = std::fs::read(self.status_file(name)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Removes the pod's status file (so only a fresh write brings it back).
    pub fn remove_status(&self, name: &str) {
        std::fs::remove_file(self.status_file(name)).unwrap();
    }

    /// The pod's uid (given by the store on apply).
    pub fn uid(&self, name: &str) -> String {
        let file = self
            .dir
            .join("state/desired/pods")
            .join(format!("{NS}_{name}.json"));
        let pod: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        pod["metadata"]["uid"].as_str().unwrap().to_string()
    }

    /// Waits until `f` gives a value; panics naming `what` on timeout.
    pub fn wait<T>(&mut self, what: &str, mut f: impl FnMut(&FakeNode) -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(v) = f(self) {
                return v;
            }
            self.assert_agent_alive();
            if Instant::now() > deadline {
                panic!("{}", self.report(&format!("not {what} within {WAIT:?}")));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until pod `name`'s status satisfies `pred`; returns it.
    pub fn wait_status(&mut self, name: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut last = Value::Null;
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(s) = self.status(name) {
                if pred(&s) {
                    return s;
                }
                last = s;
            }
            self.assert_agent_alive();
            if Instant::now() > deadline {
                let head = format!(
                    "pod {name}: not {what} within {WAIT:?}; last status:\n{}",
                    serde_json::to_string_pretty(&last).unwrap()
                );
                panic!("{}", self.report(&head));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Watches for `window`: `f` must find nothing wrong (None) every time it looks;
    /// panics with what it found otherwise. `what` says what was watched.
    pub fn holds_for(
        &mut self,
        window: Duration,
        what: &str,
        mut f: impl FnMut(&FakeNode) -> Option<String>,
    ) {
        let end = Instant::now() + window;
        let mut looks = 0;
        while Instant::now() < end || looks < 2 {
            if let Some(wrong) = f(self) {
                panic!("{}", self.report(&format!("{what}: {wrong}")));
            }
            self.assert_agent_alive();
            looks += 1;
            std::thread::sleep(POLL);
        }
    }

    /// A failure message with the runtime's last calls and the agent's log tail.
    pub fn report(&self, head: &str) -> String {
        let calls = self.rt.calls();
        let tail: Vec<String> = calls[calls.len().saturating_sub(40)..]
            .iter()
            .map(show_call)
            .collect();
        format!(
            "{head}\nlast runtime calls:\n{}\nagent log:\n{}\n(node dir {})",
            tail.join("\n"),
            self.log_tail(50),
            self.dir.display()
        )
    }
}

impl Drop for FakeNode {
    fn drop(&mut self) {
        self.kill_agent();
        if std::thread::panicking() {
            eprintln!(
                "kept the failed test's node directory {}",
                self.dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// One call on a line, for failure messages.
pub fn show_call(c: &Call) -> String {
    let outcome = match &c.outcome {
        Outcome::Ok => "ok".to_string(),
        Outcome::Pending => "pending".to_string(),
        Outcome::ClientGaveUp => "client gave up".to_string(),
        Outcome::Err(code) => format!("error {code}"),
    };
    format!("  {} {} {} -> {outcome}", c.method, c.name, c.id)
}

/// A pod manifest in [`NS`]: `spec` merged over restartPolicy Always and a 1 s grace.
pub fn pod(name: &str, spec: Value) -> Value {
    let mut full = json!({"restartPolicy": "Always", "terminationGracePeriodSeconds": 1});
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

/// A container of [`IMAGE`] named `name`.
pub fn container(name: &str) -> Value {
    json!({"name": name, "image": IMAGE, "imagePullPolicy": "IfNotPresent"})
}

/// Container `name` with `extra` fields merged in.
pub fn container_with(name: &str, extra: Value) -> Value {
    let mut c = container(name);
    if let (Some(base), Value::Object(extra)) = (c.as_object_mut(), extra) {
        base.extend(extra);
    }
    c
}

pub fn phase(s: &Value) -> &str {
    s["phase"].as_str().unwrap_or("")
}

/// The status of container `name` (app or init).
pub fn cstatus<'a>(s: &'a Value, name: &str) -> &'a Value {
    for list in ["containerStatuses", "initContainerStatuses"] {
        if let Some(c) = s[list]
            .as_array()
            .and_then(|l| l.iter().find(|c| c["name"] == name))
        {
            return c;
        }
    }
    &Value::Null
}

/// A condition's status ("True"/"False"), "" when absent.
pub fn condition<'a>(s: &'a Value, kind: &str) -> &'a str {
    s["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
}

pub fn restarts(s: &Value, name: &str) -> i64 {
    cstatus(s, name)["restartCount"].as_i64().unwrap_or(-1)
}

pub fn running(s: &Value, name: &str) -> bool {
    cstatus(s, name)["state"]["running"].is_object()
}

/// Running, Ready and every app container running.
pub fn running_ready(s: &Value) -> bool {
    let all = s["containerStatuses"]
        .as_array()
        .is_some_and(|cs| !cs.is_empty() && cs.iter().all(|c| c["state"]["running"].is_object()));
    phase(s) == "Running" && condition(s, "Ready") == "True" && all
}

/// The waiting reason of container `name` ("" when not waiting).
pub fn waiting_reason<'a>(s: &'a Value, name: &str) -> &'a str {
    cstatus(s, name)["state"]["waiting"]["reason"]
        .as_str()
        .unwrap_or("")
}

/// The container id in `name`'s status, without the runtime's prefix.
pub fn container_id(s: &Value, name: &str) -> String {
    let id = cstatus(s, name)["containerID"].as_str().unwrap_or("");
    id.rsplit("://").next().unwrap_or("").to_string()
}

/// The calls that change the runtime (what adoption must not make).
pub const MUTATING: [&str; 7] = [
    "RunPodSandbox",
    "CreateContainer",
    "StartContainer",
    "StopContainer",
    "StopPodSandbox",
    "RemoveContainer",
    "RemovePodSandbox",
];

/// Calls of `calls` after index `from` whose method is in `methods`, shown.
pub fn calls_since(calls: &[Call], from: usize, methods: &[&str]) -> Vec<String> {
    calls
        .iter()
        .skip(from)
        .filter(|c| methods.contains(&c.method.as_str()))
        .map(show_call)
        .collect()
}
