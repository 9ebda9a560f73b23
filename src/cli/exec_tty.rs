//! The local terminal of `tinylet exec -t`: raw mode while the session runs, its size,
//! and putting back what the session changed.
//!
//! [`Restore`] puts the saved terminal attributes and file status flags (async-io sets
//! O_NONBLOCK on stdin, stdout and stderr, which share their open file with the shell's
//! terminal) back when dropped: on a normal end, on an error (`?` unwinds through it)
//! and on the signals the session catches (SIGTERM, SIGHUP, SIGINT, SIGQUIT end the
//! session by returning, so the drop runs); SIGTSTP (Ctrl-Z without `-t`) stops the
//! session with them put back until it is continued ([`Restore::stop_here`]). SIGKILL
//! cannot be caught; `reset` fixes the terminal then.

use rustix::fd::BorrowedFd;
use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
use rustix::process::Signal;
use rustix::termios::{isatty, tcgetattr, tcgetwinsize, tcsetattr, OptionalActions, Termios};

/// The modes of fds 0, 1 and 2 the session changes: the terminal attributes of stdin
/// (when it is a terminal put in raw mode) and the file status flags of all three.
struct Modes {
    termios: Option<Termios>,
    flags: [Option<OFlags>; 3],
}

impl Modes {
    /// The modes now (the terminal's attributes only `with_termios`).
    fn now(with_termios: bool) -> Modes {
        Modes {
            termios: with_termios.then(|| tcgetattr(stdin()).ok()).flatten(),
            flags: stdio().map(|fd| fcntl_getfl(fd).ok()),
        }
    }

    /// Sets them (best effort: nothing else can be done about a terminal gone away).
    fn apply(&self) {
        if let Some(t) = &self.termios {
            let _ = tcsetattr(stdin(), OptionalActions::Now, t);
        }
        for (fd, flags) in stdio().into_iter().zip(self.flags) {
            if let Some(f) = flags {
                let _ = fcntl_setfl(fd, f);
            }
        }
    }
}

/// What to put back on fds 0, 1 and 2 when the session ends.
pub struct Restore {
    saved: Modes,
}

fn stdin() -> BorrowedFd<'static> {
    rustix::stdio::stdin()
}

fn stdout() -> BorrowedFd<'static> {
    rustix::stdio::stdout()
}

fn stdio() -> [BorrowedFd<'static>; 3] {
    [stdin(), stdout(), rustix::stdio::stderr()]
}

impl Restore {
    /// Saves the flags of stdin, stdout and stderr; with `raw`, puts the terminal on stdin (if
    /// it is one) in raw mode: keys go to the remote terminal as typed (Ctrl-C included),
    /// its echo is the only one.
    pub fn save(raw: bool) -> std::io::Result<Restore> {
        let mut r = Restore {
            saved: Modes::now(false),
        };
        if raw && isatty(stdin()) {
            let saved = tcgetattr(stdin())?;
            let mut t = saved.clone();
            t.make_raw();
            r.saved.termios = Some(saved);
            tcsetattr(stdin(), OptionalActions::Now, &t)?;
        }
        Ok(r)
    }

    /// Stops the process as SIGTSTP (Ctrl-Z) would, with the shell's terminal as it was
    /// (blocking, cooked) while stopped, then sets the session's modes again once
    /// continued (`fg`, `bg`). The session catches SIGTSTP for this: left to its default,
    /// the stop would hand the shell its terminal non-blocking (async-io's O_NONBLOCK
    /// is on the open file the shell shares: its reads fail with EAGAIN, which some
    /// shells take for the end of input) or raw.
    ///
    /// As the kernel does with SIGTSTP in an orphaned process group, nothing happens
    /// when no job control shell could continue the process (see [`shell_can_resume`]).
    pub fn stop_here(&self) {
        if !shell_can_resume() {
            return;
        }
        let running = Modes::now(self.saved.termios.is_some());
        self.saved.apply();
        // SIGSTOP cannot be caught: the process stops here until SIGCONT.
        let _ = rustix::process::kill_process(rustix::process::getpid(), Signal::STOP);
        running.apply();
    }
}

/// Whether a job control shell is there to continue this process once stopped: the
/// parent is in the same session and another process group (the process group is not
/// orphaned, judged by the parent alone). Not so when tinylet leads its session (e.g.
/// `ssh -t HOST tinylet exec -i ...`): stopping would then hang it for good.
fn shell_can_resume() -> bool {
    use rustix::process::{getpgid, getpgrp, getppid, getsid};
    let Some(parent) = getppid() else {
        return false;
    };
    let same_session = matches!((getsid(Some(parent)), getsid(None)), (Ok(a), Ok(b)) if a == b);
    same_session && getpgid(Some(parent)).is_ok_and(|g| g != getpgrp())
}

impl Drop for Restore {
    fn drop(&mut self) {
        self.saved.apply();
    }
}

/// The size of the terminal on stdout (else stdin) as (columns, rows), if either is a
/// terminal that knows its size.
pub fn window_size() -> Option<(u16, u16)> {
    [stdout(), stdin()].into_iter().find_map(|fd| {
        let w = tcgetwinsize(fd).ok()?;
        (w.ws_col > 0 && w.ws_row > 0).then_some((w.ws_col, w.ws_row))
    })
}
