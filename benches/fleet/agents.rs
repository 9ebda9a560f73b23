//! The node agents of a fleet as child processes: each started with its output in its
//! own log file and PR_SET_PDEATHSIG, so none outlives the bench (also when it is
//! killed); stopped together; their CPU time and memory read from /proc.

use crate::procfs::{cpu_time, vm_kib};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Agent {
    pub name: String,
    pub log: PathBuf,
    child: Child,
}

/// What the agents use at one moment.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    /// User + system CPU time of all of them, since their start.
    pub cpu: Duration,
    /// VmRSS of each, KiB.
    pub rss: Vec<u64>,
}

#[derive(Default)]
pub struct Agents {
    agents: Vec<Agent>,
}

impl Agents {
    /// Starts `cmd` as agent `name`, stdout and stderr appended to `log`.
    pub fn spawn(&mut self, name: &str, log: &Path, mut cmd: Command) -> Result<(), String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        cmd.stdin(Stdio::null()).stdout(file).stderr(err);
        with_parent_death_signal(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| format!("starting agent {name}: {e}"))?;
        self.agents.push(Agent {
            name: name.to_string(),
            log: log.to_path_buf(),
            child,
        });
        Ok(())
    }

    /// Fails naming the first agent that exited (none must, until stopped), with the
    /// end of its log.
    pub fn check_alive(&mut self) -> Result<(), String> {
        for a in &mut self.agents {
            if let Ok(Some(st)) = a.child.try_wait() {
                return Err(format!(
                    "agent {} exited ({st}); end of {}:\n{}",
                    a.name,
                    a.log.display(),
                    log_tail(&a.log, 30)
                ));
            }
        }
        Ok(())
    }

    /// CPU time and memory of every agent now (one that vanished counts nothing).
    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        for a in &self.agents {
            u.cpu += cpu_time(a.child.id()).unwrap_or_default();
            u.rss.push(vm_kib(a.child.id(), "VmRSS:").unwrap_or(0));
        }
        u
    }

    /// SIGTERM to every agent, SIGKILL to those still there after `grace`; all reaped.
    pub fn stop(&mut self, grace: Duration) {
        for a in &self.agents {
            signal(a.child.id(), rustix::process::Signal::TERM);
        }
        let until = Instant::now() + grace;
        for a in &mut self.agents {
            while Instant::now() < until && matches!(a.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = a.child.kill();
            let _ = a.child.wait();
        }
        self.agents.clear();
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}

/// The child dies with the thread that started it (the bench's main thread).
pub fn with_parent_death_signal(cmd: &mut Command) {
    // SAFETY: only an async-signal-safe prctl between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
}

fn signal(pid: u32, sig: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// The last `n` lines of a log file.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
