//! The cluster's view of the bench pods, as fast as the API server tells it: a watch of
//! one namespace's pods (curl with the admin identity, newline-delimited events) on a
//! thread of its own, each pod's latest object and the time its events arrived. Waits
//! wake on every event, so a time read here is the API's, give or take a millisecond,
//! not a polling period. The watch is made again if the API server ends it.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A pod as last seen in the API.
#[derive(Clone, Debug)]
pub struct Seen {
    pub pod: Value,
    /// When its first event (ADDED) arrived: the API has stored the pod.
    pub added: Instant,
    /// When its latest event arrived.
    pub at: Instant,
}

/// Pods by name.
pub type Pods = BTreeMap<String, Seen>;

/// How to reach the API server as admin.
#[derive(Clone)]
pub struct Admin {
    pub url: String,
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Admin {
    /// curl for `path` as admin (stdout piped).
    fn curl(&self, path: &str) -> Command {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "-N", "--cacert"])
            .arg(&self.ca)
            .arg("--cert")
            .arg(&self.cert)
            .arg("--key")
            .arg(&self.key)
            .arg(format!("{}{path}", self.url))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }
}

#[derive(Default)]
struct State {
    pods: Pods,
    /// Why the last watch ended, for error messages.
    ended: Option<String>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
    curl: Mutex<Option<Child>>,
}

pub struct PodWatch {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl PodWatch {
    /// Watches the pods of namespace `ns`.
    pub fn start(admin: Admin, ns: &str) -> PodWatch {
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let path = format!("/api/v1/namespaces/{ns}/pods?watch=1");
        let thread = std::thread::spawn(move || {
            while !s.stop.load(Ordering::SeqCst) {
                let why = follow(&s, &admin, &path);
                s.state.lock().unwrap().ended = Some(why);
                if !s.stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        });
        PodWatch {
            shared,
            thread: Some(thread),
        }
    }

    /// Waits until `f` gives a value on the pods seen (checked on every event); the
    /// error names `what` and how the watch last ended.
    pub fn wait<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut(&Pods) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.state.lock().unwrap();
        loop {
            if let Some(v) = f(&state.pods) {
                return Ok(v);
            }
            let now = Instant::now();
            if now >= deadline {
                let ended = state.ended.as_deref().unwrap_or("the watch is live");
                return Err(format!(
                    "not within {timeout:?} in the API: {what} ({ended})"
                ));
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap()
                .0;
        }
    }

    /// A copy of what is seen now.
    pub fn pods(&self) -> Pods {
        self.shared.state.lock().unwrap().pods.clone()
    }
}

/// One watch request: every event into the state until the stream ends; returns why.
fn follow(s: &Shared, admin: &Admin, path: &str) -> String {
    let mut child = match admin.curl(path).spawn() {
        Ok(c) => c,
        Err(e) => return format!("cannot run curl: {e}"),
    };
    let Some(out) = child.stdout.take() else {
        return "curl without stdout".into();
    };
    {
        // Under the lock: Drop sets `stop` first, then kills what it finds here.
        let mut slot = s.curl.lock().unwrap();
        if s.stop.load(Ordering::SeqCst) {
            let _ = child.kill();
        }
        *slot = Some(child);
    }
    for line in std::io::BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        let at = Instant::now();
        let Ok(ev) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(name) = ev["object"]["metadata"]["name"].as_str() else {
            continue;
        };
        let mut st = s.state.lock().unwrap();
        match ev["type"].as_str() {
            Some("ADDED" | "MODIFIED") => {
                let added = st.pods.get(name).map_or(at, |p| p.added);
                let pod = ev["object"].clone();
                st.pods.insert(name.to_string(), Seen { pod, added, at });
            }
            Some("DELETED") => {
                st.pods.remove(name);
            }
            _ => {}
        }
        s.changed.notify_all();
    }
    let child = s.curl.lock().unwrap().take();
    match child.map(|c| c.wait_with_output()) {
        Some(Ok(o)) => format!(
            "watch ended: curl {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        _ => "watch ended".into(),
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(c) = self.shared.curl.lock().unwrap().as_mut() {
            let _ = c.kill();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Running with every container running and the Ready condition True.
pub fn running_ready(pod: &Value) -> bool {
    let st = &pod["status"];
    let ready = st["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .is_some_and(|c| c["status"] == "True");
    st["phase"] == "Running"
        && ready
        && st["containerStatuses"].as_array().is_some_and(|cs| {
            !cs.is_empty() && cs.iter().all(|c| c["state"]["running"].is_object())
        })
}

/// The first container's `containerID` without its `containerd://` scheme.
pub fn container_id(status: &Value) -> Option<String> {
    let id = status["containerStatuses"][0]["containerID"].as_str()?;
    Some(id.rsplit("://").next().unwrap_or(id).to_string())
}

/// The first container's restartCount.
pub fn restart_count(pod: &Value) -> u64 {
    pod["status"]["containerStatuses"][0]["restartCount"]
        .as_u64()
        .unwrap_or(0)
}
