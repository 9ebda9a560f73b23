//! The local terminal of `tinylet exec -t`: raw mode while the session runs, its size,
//! and putting back what the session changed.
//!
//! [`Restore`] puts the saved terminal attributes and file status flags (async-io sets
//! O_NONBLOCK on stdin and stdout, which share their open file with the shell's
//! terminal) back when dropped: on a normal end, on an error (`?` unwinds through it)
//! and on the signals the session catches (SIGTERM, SIGHUP, SIGINT, SIGQUIT end the
//! session by returning, so the drop runs). SIGKILL cannot be caught; `reset` fixes
//! the terminal then.

use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
use rustix::termios::{isatty, tcgetattr, tcgetwinsize, tcsetattr, OptionalActions, Termios};

/// What to put back on fds 0 and 1 when the session ends.
pub struct Restore {
    termios: Option<Termios>,
    stdin_flags: Option<OFlags>,
    stdout_flags: Option<OFlags>,
}

fn stdin() -> BorrowedFd<'static> {
    rustix::stdio::stdin()
}

fn stdout() -> BorrowedFd<'static> {
    rustix::stdio::stdout()
}

impl Restore {
    /// Saves the flags of stdin and stdout; with `raw`, puts the terminal on stdin (if
    /// it is one) in raw mode: keys go to the remote terminal as typed (Ctrl-C included),
    /// its echo is the only one.
    pub fn save(raw: bool) -> std::io::Result<Restore> {
        let mut r = Restore {
            termios: None,
            stdin_flags: fcntl_getfl(stdin()).ok(),
            stdout_flags: fcntl_getfl(stdout()).ok(),
        };
        if raw && isatty(stdin()) {
            let saved = tcgetattr(stdin())?;
            let mut t = saved.clone();
            t.make_raw();
            r.termios = Some(saved);
            tcsetattr(stdin(), OptionalActions::Now, &t)?;
        }
        Ok(r)
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        // Best effort: nothing else can be done about a terminal gone away.
        if let Some(t) = &self.termios {
            let _ = tcsetattr(stdin(), OptionalActions::Now, t);
        }
        for (fd, flags) in [(stdin(), self.stdin_flags), (stdout(), self.stdout_flags)] {
            if let Some(f) = flags {
                let _ = fcntl_setfl(fd, f);
            }
        }
    }
}

/// Whether `fd` is a terminal.
pub fn is_terminal(fd: impl AsFd) -> bool {
    isatty(fd)
}

/// The size of the terminal on stdout (else stdin) as (columns, rows), if either is a
/// terminal that knows its size.
pub fn window_size() -> Option<(u16, u16)> {
    [stdout(), stdin()].into_iter().find_map(|fd| {
        let w = tcgetwinsize(fd).ok()?;
        (w.ws_col > 0 && w.ws_row > 0).then_some((w.ws_col, w.ws_row))
    })
}
