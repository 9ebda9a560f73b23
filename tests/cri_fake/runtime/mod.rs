//! An in-memory CRI runtime for driving the agent without root or containerd: enough of
//! `runtime.v1` RuntimeService and ImageService for everything `tinylet run` calls,
//! served over real gRPC/h2 with the project's prost types on a Unix socket.
//!
//! Sandboxes and containers live in memory with their configs, labels, annotations,
//! state, timestamps and exit codes. The test scripts what the runtime cannot decide by
//! itself: how each container lives once started ([`Life`]) and stops ([`Stop`]), what
//! ExecSync answers ([`ExecReply`]), and faults ([`Fault`]: a call fails with a gRPC
//! code, hangs, or is carried out and answered too late for the client). Every call is
//! recorded ([`Call`]) for assertions. [`FakeRuntime::down`] and [`FakeRuntime::up`]
//! take the socket away and bring it back with the state kept, as a runtime restart.
//! [`serve_many`] runs hundreds of runtimes on one thread, each keeping only its latest
//! calls: the nodes of a fleet bench (`benches/fleet.rs`), whose pods "run" without any
//! process.
#![allow(dead_code)]

pub mod objects;
pub mod script;
mod serve;
mod service;
pub mod state;

pub use objects::{Call, FakeContainer, FakeSandbox, Outcome};
pub use script::{code, ExecReply, Fault, Life, Misbehave, Script, Stop};
pub use state::State;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The sandbox image every fake runtime holds.
pub const PAUSE_IMAGE: &str = "fake.local/pause:3.9";

/// Calls a runtime of [`serve_many`] keeps in its record: enough to look at when
/// something goes wrong, nothing that grows over a long run.
const FLEET_RECORD: usize = 64;

/// Serves a runtime in each of `dirs` (socket `DIR/cri.sock`, holding the sandbox image
/// and `images`; containers run until stopped and exit 143 on SIGTERM, pulls add the
/// image) on the calling thread, until `until` ends.
pub fn serve_many(dirs: &[PathBuf], images: &[&str], until: impl std::future::Future<Output = ()>) {
    let runtimes = dirs
        .iter()
        .map(|dir| {
            let mut state = State::new(dir.clone());
            state.bound_record(FLEET_RECORD);
            state.add_image(PAUSE_IMAGE);
            for i in images {
                state.add_image(i);
            }
            (dir.join("cri.sock"), Arc::new(Mutex::new(state)))
        })
        .collect();
    serve::serve_here(runtimes, until);
}

/// A running fake runtime; dropping it stops serving.
pub struct FakeRuntime {
    socket: PathBuf,
    state: Arc<Mutex<State>>,
    server: Option<serve::Server>,
}

impl FakeRuntime {
    /// Serves on `dir/cri.sock`, holding the sandbox image and `images`.
    pub fn start(dir: &Path, images: &[&str]) -> FakeRuntime {
        let mut state = State::new(dir.to_path_buf());
        state.add_image(PAUSE_IMAGE);
        for i in images {
            state.add_image(i);
        }
        let state = Arc::new(Mutex::new(state));
        let socket = dir.join("cri.sock");
        let server = serve::Server::start(&socket, state.clone());
        FakeRuntime {
            socket,
            state,
            server: Some(server),
        }
    }

    /// `unix://` endpoint for a config or a client.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Stops serving: socket removed, connections closed, calls in flight abandoned.
    /// What it holds stays (a runtime restart keeps its containers).
    pub fn down(&mut self) {
        self.server = None;
    }

    /// Serves again after [`FakeRuntime::down`].
    pub fn up(&mut self) {
        if self.server.is_none() {
            self.server = Some(serve::Server::start(&self.socket, self.state.clone()));
        }
    }

    /// Runs `f` on the state, brought up to date first.
    pub fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut st = self.state.lock().unwrap();
        st.settle(state::now_ns());
        f(&mut st)
    }

    // ---- scripts ----

    /// Containers named `name` live as `first` says, one per start, then as `then`.
    pub fn lives(&self, name: &str, first: impl IntoIterator<Item = Life>, then: Life) {
        self.with(|s| s.lives.insert(name.into(), Script::new(first, then)));
    }

    /// How containers named `name` stop.
    pub fn stops(&self, name: &str, stop: Stop) {
        self.with(|s| s.stops.insert(name.into(), stop));
    }

    /// What ExecSync in containers named `name` answers: `first` one per call, then
    /// `then` (replacing an earlier script).
    pub fn execs(&self, name: &str, first: impl IntoIterator<Item = ExecReply>, then: ExecReply) {
        self.with(|s| s.execs.insert(name.into(), Script::new(first, then)));
    }

    pub fn fault(&self, f: Fault) {
        self.with(|s| s.faults.push(f));
    }

    /// The running container `id` exits now with `code`.
    pub fn exit(&self, id: &str, code: i32) {
        self.with(|s| s.exit(id, code));
    }

    // ---- views ----

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.with(|s| s.calls.clone())
    }

    /// The calls of `method` so far.
    pub fn calls_to(&self, method: &str) -> Vec<Call> {
        self.with(|s| {
            s.calls
                .iter()
                .filter(|c| c.method == method)
                .cloned()
                .collect()
        })
    }

    /// How many calls of `method` so far.
    pub fn count(&self, method: &str) -> usize {
        self.with(|s| s.calls.iter().filter(|c| c.method == method).count())
    }

    /// The most heavy calls (RunPodSandbox, CreateContainer, StartContainer, PullImage)
    /// that were ever in flight at once.
    pub fn heavy_peak(&self) -> usize {
        self.with(|s| s.heavy_peak)
    }

    /// Every container, oldest first.
    pub fn containers(&self) -> Vec<FakeContainer> {
        let mut v = self.with(|s| s.containers.values().cloned().collect::<Vec<_>>());
        v.sort_by_key(|c| c.created_at);
        v
    }

    /// The containers named `name`, oldest first.
    pub fn containers_named(&self, name: &str) -> Vec<FakeContainer> {
        let mut v = self.containers();
        v.retain(|c| c.name() == name);
        v
    }

    /// Every sandbox, oldest first.
    pub fn sandboxes(&self) -> Vec<FakeSandbox> {
        let mut v = self.with(|s| s.sandboxes.values().cloned().collect::<Vec<_>>());
        v.sort_by_key(|s| s.created_at);
        v
    }
}
