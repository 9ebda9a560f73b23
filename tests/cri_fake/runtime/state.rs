//! The fake runtime's memory (the objects of `objects.rs`, the scripts, the record of
//! every call) and the operations on it. Operations follow containerd's rules where
//! the agent can tell: names are reserved per (pod, attempt), stop and remove are
//! idempotent, a stopped sandbox's containers are killed, ids of missing objects are
//! NotFound.
//!
//! Time: timestamps are wall-clock nanoseconds. A scripted exit happens at a real time
//! and is applied by [`State::settle`], which every call runs first, so exits need no
//! timer: the runtime is exactly as up to date as the agent can ask it to be.

use super::objects::{Call, FakeContainer, FakeImage, FakeSandbox, Outcome, PendingExit};
use super::script::{code, ExecReply, Fault, Life, Misbehave, Script, Stop};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tinylet::cri::pb;

/// A gRPC error answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    pub code: i32,
    pub message: String,
}

impl Status {
    pub fn new(code: i32, message: impl Into<String>) -> Status {
        Status {
            code,
            message: message.into(),
        }
    }

    fn not_found(what: &str, id: &str) -> Status {
        Status::new(
            code::NOT_FOUND,
            format!("an error occurred when try to find {what} {id:?}: not found"),
        )
    }
}

/// Wall-clock nanoseconds since the epoch.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn ns(d: Duration) -> i64 {
    d.as_nanos() as i64
}

/// The calls `maxParallelRuntimeOperations` bounds.
const HEAVY: [&str; 4] = [
    "RunPodSandbox",
    "CreateContainer",
    "StartContainer",
    "PullImage",
];

/// Where a call stopped before being carried out.
pub enum Halt {
    Fail(Status),
    Hang,
}

pub struct State {
    /// The image filesystem's mount point (a directory of the test).
    pub imagefs: PathBuf,
    pub sandboxes: BTreeMap<String, FakeSandbox>,
    pub containers: BTreeMap<String, FakeContainer>,
    pub images: Vec<FakeImage>,
    /// The calls so far, oldest first: all of them, or the latest ones when the record
    /// is bounded ([`State::bound_record`]).
    pub calls: Vec<Call>,
    /// Calls dropped from the front of a bounded record.
    dropped: usize,
    /// The most calls a bounded record keeps.
    record_limit: Option<usize>,
    pub faults: Vec<Fault>,
    /// By container name.
    pub lives: HashMap<String, Script<Life>>,
    pub stops: HashMap<String, Stop>,
    pub execs: HashMap<String, Script<ExecReply>>,
    /// Heavy calls (RunPodSandbox, CreateContainer, StartContainer, PullImage) in
    /// flight now, and the most there ever were at once.
    pub heavy_in_flight: usize,
    pub heavy_peak: usize,
    /// Reserved names (containerd's), to the id holding each.
    names: HashMap<String, String>,
    next_id: u64,
    last_created: i64,
}

impl State {
    pub fn new(imagefs: PathBuf) -> State {
        State {
            imagefs,
            sandboxes: BTreeMap::new(),
            containers: BTreeMap::new(),
            images: Vec::new(),
            calls: Vec::new(),
            dropped: 0,
            record_limit: None,
            faults: Vec::new(),
            lives: HashMap::new(),
            stops: HashMap::new(),
            execs: HashMap::new(),
            heavy_in_flight: 0,
            heavy_peak: 0,
            names: HashMap::new(),
            next_id: 0,
            last_created: 0,
        }
    }

    /// Applies the scripted exits due by `now`.
    pub fn settle(&mut self, now: i64) {
        for c in self.containers.values_mut() {
            if let Some(e) = c.exit.filter(|e| e.at <= now) {
                c.finish(e.code, e.reported);
            }
        }
    }

    /// Keeps only about the latest `limit` calls: a runtime serving for hours (a fleet
    /// bench's) would otherwise grow with every relist.
    pub fn bound_record(&mut self, limit: usize) {
        self.record_limit = Some(limit.max(1));
    }

    /// How many calls were ever recorded; the index the next one gets.
    pub fn recorded(&self) -> usize {
        self.dropped + self.calls.len()
    }

    /// Adds `call` to the record, dropping the older half of a full bounded record.
    pub fn record(&mut self, call: Call) {
        self.calls.push(call);
        if let Some(limit) = self.record_limit.filter(|&l| self.calls.len() > l) {
            let old = self.calls.len() - limit / 2;
            self.calls.drain(..old);
            self.dropped += old;
        }
    }

    /// Whether calls of `method` count as heavy.
    pub fn is_heavy(method: &str) -> bool {
        HEAVY.contains(&method)
    }

    /// Records `call`; says whether a scripted fault stops it, or how late to answer.
    pub fn begin(&mut self, call: Call) -> Result<Option<Duration>, Halt> {
        let fault = self.faults.iter_mut().find_map(|f| {
            f.take(&call.method, &call.name)
                .then(|| f.misbehave.clone())
        });
        if Self::is_heavy(&call.method) {
            self.heavy_in_flight += 1;
            self.heavy_peak = self.heavy_peak.max(self.heavy_in_flight);
        }
        self.record(call);
        match fault {
            None => Ok(None),
            Some(Misbehave::AnswerLate(d)) => Ok(Some(d)),
            Some(Misbehave::Hang) => Err(Halt::Hang),
            Some(Misbehave::Fail { code, message }) => Err(Halt::Fail(Status::new(code, message))),
        }
    }

    /// Notes how call `index` (of [`State::recorded`]'s count) ended; `heavy`: it was
    /// counted in flight as a heavy call.
    pub fn answered(&mut self, index: usize, heavy: bool, outcome: Outcome) {
        if heavy {
            self.heavy_in_flight = self.heavy_in_flight.saturating_sub(1);
        }
        let kept = index.checked_sub(self.dropped);
        if let Some(c) = kept.and_then(|i| self.calls.get_mut(i)) {
            c.answered = Some(SystemTime::now());
            c.outcome = outcome;
        }
    }

    fn new_id(&mut self, prefix: char) -> String {
        self.next_id += 1;
        format!("{prefix}{:04}", self.next_id)
    }

    /// A creation time later than every earlier one (the agent orders by it).
    fn creation_time(&mut self) -> i64 {
        self.last_created = now_ns().max(self.last_created + 1);
        self.last_created
    }

    fn reserve(&mut self, kind: &str, name: String, id: &str) -> Result<(), Status> {
        if let Some(holder) = self.names.get(&name) {
            return Err(Status::new(
                code::UNKNOWN,
                format!("failed to reserve {kind} name {name:?}: name {name:?} is reserved for {holder:?}"),
            ));
        }
        self.names.insert(name, id.to_string());
        Ok(())
    }

    fn release(&mut self, id: &str) {
        self.names.retain(|_, holder| holder != id);
    }

    // ---- sandboxes ----

    pub fn run_pod_sandbox(
        &mut self,
        config: pb::PodSandboxConfig,
        handler: String,
    ) -> Result<String, Status> {
        let m = config.metadata.clone().unwrap_or_default();
        let id = self.new_id('s');
        let name = format!("{}_{}_{}_{}", m.name, m.namespace, m.uid, m.attempt);
        self.reserve("sandbox", name, &id)?;
        let n = self.sandboxes.len() + 2;
        let sandbox = FakeSandbox {
            id: id.clone(),
            config,
            runtime_handler: handler,
            ready: true,
            created_at: self.creation_time(),
            ip: format!("10.88.{}.{}", n / 250, n % 250 + 2),
        };
        self.sandboxes.insert(id.clone(), sandbox);
        Ok(id)
    }

    pub fn sandbox(&self, id: &str) -> Result<&FakeSandbox, Status> {
        self.sandboxes
            .get(id)
            .ok_or_else(|| Status::not_found("sandbox", id))
    }

    /// Kills the sandbox's containers and marks it not ready. Idempotent.
    pub fn stop_pod_sandbox(&mut self, id: &str) -> Result<(), Status> {
        self.sandbox(id)?;
        let now = now_ns();
        for c in self.containers.values_mut() {
            if c.sandbox_id == id && c.running() {
                c.finish(137, now);
            }
        }
        if let Some(s) = self.sandboxes.get_mut(id) {
            s.ready = false;
        }
        Ok(())
    }

    /// Removes the sandbox and its containers; a missing one is fine (containerd).
    pub fn remove_pod_sandbox(&mut self, id: &str) {
        let ids: Vec<String> = self
            .containers
            .values()
            .filter(|c| c.sandbox_id == id)
            .map(|c| c.id.clone())
            .collect();
        for c in ids {
            self.remove_container(&c);
        }
        self.sandboxes.remove(id);
        self.release(id);
    }

    // ---- containers ----

    pub fn create_container(
        &mut self,
        sandbox_id: &str,
        config: pb::ContainerConfig,
    ) -> Result<String, Status> {
        let sandbox = self.sandbox(sandbox_id)?.clone();
        let image = config.image.as_ref().map_or("", |i| i.image.as_str());
        let image_ref = self
            .image(image)
            .map(|i| i.id.clone())
            .ok_or_else(|| Status::not_found("image", image))?;
        let m = config.metadata.clone().unwrap_or_default();
        let sm = sandbox.config.metadata.clone().unwrap_or_default();
        let id = self.new_id('c');
        let name = format!(
            "{}_{}_{}_{}_{}",
            m.name, sm.name, sm.namespace, sm.uid, m.attempt
        );
        self.reserve("container", name, &id)?;
        let log_path = if config.log_path.is_empty() {
            String::new()
        } else {
            PathBuf::from(&sandbox.config.log_directory)
                .join(&config.log_path)
                .display()
                .to_string()
        };
        let c = FakeContainer {
            id: id.clone(),
            sandbox_id: sandbox_id.into(),
            config,
            image_ref,
            state: pb::ContainerState::ContainerCreated,
            created_at: self.creation_time(),
            started_at: 0,
            finished_at: 0,
            exit_code: 0,
            reason: String::new(),
            log_path,
            exit: None,
        };
        self.containers.insert(id.clone(), c);
        Ok(id)
    }

    pub fn container(&self, id: &str) -> Result<&FakeContainer, Status> {
        self.containers
            .get(id)
            .ok_or_else(|| Status::not_found("container", id))
    }

    /// Starts a created container; its script says how it lives.
    pub fn start_container(&mut self, id: &str) -> Result<(), Status> {
        let c = self.container(id)?;
        if c.state != pb::ContainerState::ContainerCreated {
            return Err(Status::new(
                code::UNKNOWN,
                format!(
                    "failed to set starting state for container {id:?}: container is in {:?} state",
                    c.state
                ),
            ));
        }
        if !self.sandbox(&c.sandbox_id)?.ready {
            return Err(Status::new(
                code::UNKNOWN,
                format!("sandbox container {:?} is not running", c.sandbox_id),
            ));
        }
        let name = c.name().to_string();
        let life = self.lives.get_mut(&name).map_or(Life::Run, Script::next);
        let now = now_ns();
        let c = self.containers.get_mut(id).expect("checked above");
        c.state = pb::ContainerState::ContainerRunning;
        c.started_at = now;
        if let Life::Exit {
            code,
            after,
            backdate,
        } = life
        {
            let at = now + ns(after);
            c.exit = Some(PendingExit {
                at,
                code,
                reported: at - ns(backdate),
            });
            self.settle(now);
        }
        Ok(())
    }

    /// Stops a running container as its [`Stop`] script says; returns how long the
    /// answer takes (the grace period, for one that ignores SIGTERM). Idempotent; a
    /// container that is not running is left alone (containerd).
    pub fn stop_container(&mut self, id: &str, timeout: i64) -> Result<Duration, Status> {
        let c = self.container(id)?;
        if !c.running() {
            return Ok(Duration::ZERO);
        }
        let stop = self
            .stops
            .get(c.name())
            .copied()
            .unwrap_or(Stop::OnTerm(143));
        let now = now_ns();
        let c = self.containers.get_mut(id).expect("checked above");
        match stop {
            Stop::OnTerm(code) => {
                c.finish(code, now);
                Ok(Duration::ZERO)
            }
            Stop::IgnoresTerm => {
                let grace = Duration::from_secs(timeout.max(0) as u64);
                let at = now + ns(grace);
                c.exit = Some(PendingExit {
                    at,
                    code: 137,
                    reported: at,
                });
                Ok(grace)
            }
        }
    }

    /// Removes a container (killing it first); a missing one is fine.
    pub fn remove_container(&mut self, id: &str) {
        self.containers.remove(id);
        self.release(id);
    }

    /// Makes a running container exit now with `code`, as if its process ended.
    pub fn exit(&mut self, id: &str, exit_code: i32) {
        if let Some(c) = self.containers.get_mut(id).filter(|c| c.running()) {
            c.finish(exit_code, now_ns());
        }
    }

    /// The ExecSync reply for `id`: what its script says, or an error when it does not
    /// run.
    pub fn exec(&mut self, id: &str) -> Result<ExecReply, Status> {
        let c = self.container(id)?;
        if !c.running() {
            return Err(Status::new(
                code::UNKNOWN,
                format!("container {id:?} is in {:?} state, not running", c.state),
            ));
        }
        let name = c.name().to_string();
        Ok(self
            .execs
            .get_mut(&name)
            .map_or(ExecReply::code(0), Script::next))
    }

    // ---- images ----

    /// The image with this id, tag or digest.
    pub fn image(&self, name: &str) -> Option<&FakeImage> {
        self.images
            .iter()
            .find(|i| i.id == name || i.tags.iter().any(|t| t == name))
    }

    /// Adds (or returns) the image tagged `name`; its id is derived from the name.
    pub fn add_image(&mut self, name: &str) -> String {
        if let Some(i) = self.image(name) {
            return i.id.clone();
        }
        let mut h: u64 = 0xcbf29ce484222325;
        for b in name.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
        }
        let id = format!("sha256:{h:016x}{h:016x}{h:016x}{h:016x}");
        self.images.push(FakeImage {
            id: id.clone(),
            tags: vec![name.to_string()],
            size: 1 << 20,
        });
        id
    }

    pub fn remove_image(&mut self, name: &str) {
        let id = self.image(name).map(|i| i.id.clone());
        self.images.retain(|i| Some(&i.id) != id.as_ref());
    }
}
