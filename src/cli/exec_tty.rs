//! The local terminal of `tinylet exec -t`: raw mode while the session runs, its size,
//! and putting back what the session changed.
//!
//! [`Restore`] puts the saved terminal attributes and file status flags (async-io sets
//! O_NONBLOCK on stdin, stdout and stderr, which share their open file with the shell's
//! terminal) back when dropped: on a normal end, on an error (`?` unwinds through it)
//! and on the signals the session catches (SIGTERM, SIGHUP, SIGINT, SIGQUIT end the
//! session by returning, so the drop runs). SIGKILL cannot be caught; `reset` fixes
//! the terminal then.

use rustix::fd::BorrowedFd;
use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
use rustix::termios::{isatty, tcgetattr, tcgetwinsize, tcsetattr, OptionalActions, Termios};

/// What to put back on fds 0, 1 and 2 when the session ends.
pub struct Restore {
    termios: Option<Termios>,
    /// The file status flags of stdin, stdout, stderr.
    flags: [Option<OFlags>; 3],
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
            termios: None,
            flags: stdio().map(|fd| fcntl_getfl(fd).ok()),
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
        for (fd, flags) in stdio().into_iter().zip(self.flags) {
            if let Some(f) = flags {
                let _ = fcntl_setfl(fd, f);
            }
        }
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
