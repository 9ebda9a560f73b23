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

    /// Fails naming the first agent that exited (none must, until stopped), with where
    /// its log's first error is and the end of it. The whole log is copied out of the
    /// run's directory (which goes when the bench ends): a Go crash says why at its
    /// head, above thousands of lines of goroutine stacks.
    pub fn check_alive(&mut self) -> Result<(), String> {
        for a in &mut self.agents {
            if let Ok(Some(st)) = a.child.try_wait() {
                let kept = std::env::temp_dir().join(format!(
                    "bench-fleet-{}-{}.log",
                    a.name,
                    std::process::id()
                ));
                let kept = match std::fs::copy(&a.log, &kept) {
                    Ok(_) => kept.display().to_string(),
                    Err(e) => format!("not kept ({e})"),
                };
                return Err(format!(
                    "agent {} exited ({st}); its log: {kept}\nfirst error:\n{}\nend:\n{}",
                    a.name,
                    first_error(&a.log, 12),
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

/// `n` lines from the first that says why a program died (a Go `fatal error:` or
/// `panic:`, a Rust `panicked at`), or "none found".
pub fn first_error(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let marks = [
        "fatal error:",
        "panic:",
        "panicked at",
        "SIGSEGV",
        "out of memory",
    ];
    let lines: Vec<&str> = text.lines().collect();
    match lines
        .iter()
        .position(|l| marks.iter().any(|m| l.contains(m)))
    {
        Some(i) => lines[i..(i + n).min(lines.len())].join("\n"),
        None => "none found".to_string(),
    }
}
