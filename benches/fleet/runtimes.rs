//! The fleet's container runtimes: the in-memory CRI runtime of the agent tests
//! (`tests/cri_fake/runtime/`, real gRPC on a Unix socket) once per tinylet node, all of
//! them served by one thread of one process, this bench's binary started again in the
//! runtime host's role. Its own process, so what the runtimes cost is measured apart
//! from the agents. It ends when its stdin closes (the bench is done or gone) or, with
//! PR_SET_PDEATHSIG, when the bench dies.

use crate::agents::with_parent_death_signal;
use crate::procfs::{cpu_time, vm_kib};
use crate::runtime::serve_many;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// The bench's binary serves the runtimes instead of benching when this names their
/// directory.
const HOST_DIR: &str = "TINYLET_FLEET_RUNTIMES";
const HOST_COUNT: &str = "TINYLET_FLEET_RUNTIME_COUNT";

/// The images every runtime holds: the pods' and the DaemonSet's first one (the
/// rollout's second image is pulled).
pub const IMAGES: [&str; 2] = ["fake.local/app:1", "fake.local/ds:1"];

/// Runtime `i`'s directory under `dir`.
fn runtime_dir(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("{i:04}"))
}

/// In the host's role (the environment says so): serves the runtimes until stdin
/// closes and returns true; else false at once.
pub fn serve_if_asked() -> bool {
    let Some(dir) = std::env::var_os(HOST_DIR).map(PathBuf::from) else {
        return false;
    };
    let count: usize = std::env::var(HOST_COUNT)
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let dirs: Vec<PathBuf> = (0..count).map(|i| runtime_dir(&dir, i)).collect();
    for d in &dirs {
        if let Err(e) = std::fs::create_dir_all(d) {
            eprintln!("fleet runtimes: {}: {e}", d.display());
            std::process::exit(1);
        }
    }
    serve_many(&dirs, &IMAGES, async {
        smol::unblock(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        })
        .await
    });
    true
}

/// The runtime host process.
pub struct RuntimeHost {
    dir: PathBuf,
    child: Child,
    /// Closed on drop: the host's cue to end.
    stdin: Option<ChildStdin>,
}

impl RuntimeHost {
    /// Starts `count` runtimes under `dir`; returns once every socket is there.
    pub fn start(dir: &Path, count: usize) -> Result<RuntimeHost, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let exe = std::env::current_exe().map_err(|e| format!("the bench's binary: {e}"))?;
        let log = std::fs::File::create(dir.join("host.log")).map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(exe);
        cmd.arg("--bench")
            .env(HOST_DIR, dir)
            .env(HOST_COUNT, count.to_string())
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(err);
        with_parent_death_signal(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| format!("the runtime host: {e}"))?;
        let stdin = child.stdin.take();
        let host = RuntimeHost {
            dir: dir.to_path_buf(),
            child,
            stdin,
        };
        host.wait_sockets(count)?;
        Ok(host)
    }

    fn wait_sockets(&self, count: usize) -> Result<(), String> {
        let until = Instant::now() + Duration::from_secs(60);
        let last = runtime_dir(&self.dir, count.saturating_sub(1)).join("cri.sock");
        while !last.exists() {
            if Instant::now() > until {
                return Err(format!(
                    "the runtime host made no {} in 60 s",
                    last.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Runtime `i`'s CRI endpoint.
    pub fn endpoint(&self, i: usize) -> String {
        format!(
            "unix://{}",
            runtime_dir(&self.dir, i).join("cri.sock").display()
        )
    }

    /// The host's CPU time since its start and its VmRSS (KiB).
    pub fn usage(&self) -> (Duration, u64) {
        let pid = self.child.id();
        (
            cpu_time(pid).unwrap_or_default(),
            vm_kib(pid, "VmRSS:").unwrap_or(0),
        )
    }
}

impl Drop for RuntimeHost {
    fn drop(&mut self) {
        self.stdin = None;
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
