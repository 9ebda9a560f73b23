//! systemd's readiness protocol (`sd_notify`), written by hand: one datagram of
//! newline-separated `KEY=VALUE` lines sent to the Unix socket named by `$NOTIFY_SOCKET`.
//! A crate (or libsystemd) would cost flash for a dozen lines of socket code.
//!
//! When `$NOTIFY_SOCKET` is unset (procd, a shell, a test) every call is a no-op, so the
//! agent calls these unconditionally.
//!
//! How the agent uses it (`packaging/systemd/tinylet.service` is `Type=notify`):
//! - `notify("READY=1")` once, after its first successful relist of the runtime: only
//!   then is "tinylet started" true in the sense units ordered after it care about
//!   (pods known, adoption done). Until then systemd shows the unit as "activating".
//! - `notify("STATUS=...")` for the one-line status `systemctl status` shows, e.g.
//!   `STATUS=waiting for runtime at unix:///run/containerd/containerd.sock`.
//! - `notify("STOPPING=1")` when it starts shutting down on SIGTERM.
//! - `notify("WATCHDOG=1")` every [`watchdog_interval`]` / 2` when the unit sets
//!   `WatchdogSec=` (it does not by default).
//!
//! The socket is non-blocking: a send never stalls the agent's single thread; if
//! systemd's queue is full the datagram is dropped and an error returned for logging.
//! Addresses are filesystem paths (`/run/systemd/notify`) or, with a leading `@`, names
//! in Linux's abstract socket namespace.

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// Sends `state` (e.g. `"READY=1"` or `"STATUS=relisting\nREADY=1"`) to the service
/// manager named by `$NOTIFY_SOCKET`; does nothing when the variable is unset or empty.
pub fn notify(state: &str) -> io::Result<()> {
    notify_var(std::env::var_os("NOTIFY_SOCKET").as_deref(), state)
}

/// [`notify`] on the variable's value (`None` when unset), testable without `set_var`.
fn notify_var(socket: Option<&OsStr>, state: &str) -> io::Result<()> {
    match socket {
        Some(socket) if !socket.is_empty() => notify_to(socket, state),
        _ => Ok(()),
    }
}

/// Sends `state` to the notify socket `socket` (a path, or `@name` for an abstract one).
pub fn notify_to(socket: &OsStr, state: &str) -> io::Result<()> {
    let addr = socket_addr(socket)?;
    let sock = UnixDatagram::unbound()?;
    sock.set_nonblocking(true)?;
    let sent = sock.send_to_addr(state.as_bytes(), &addr)?;
    if sent != state.len() {
        return Err(io::Error::other(format!(
            "notify socket took {sent} of {} bytes",
            state.len()
        )));
    }
    Ok(())
}

/// Parses `$NOTIFY_SOCKET`'s value into a socket address.
fn socket_addr(socket: &OsStr) -> io::Result<SocketAddr> {
    let bytes = socket.as_bytes();
    match bytes.first() {
        Some(b'@') => SocketAddr::from_abstract_name(&bytes[1..]),
        Some(b'/') => SocketAddr::from_pathname(socket),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "NOTIFY_SOCKET: expected an absolute path or @name, got {:?}",
                socket
            ),
        )),
    }
}

/// How often systemd expects `WATCHDOG=1` (`$WATCHDOG_USEC`), when the watchdog is on and
/// meant for this process (`$WATCHDOG_PID` unset or ours). Ping at half this interval.
pub fn watchdog_interval() -> Option<Duration> {
    let usec = std::env::var("WATCHDOG_USEC").ok();
    let pid = std::env::var("WATCHDOG_PID").ok();
    watchdog_from(usec.as_deref(), pid.as_deref(), std::process::id())
}

/// [`watchdog_interval`] on explicit values, so it can be tested without the environment.
fn watchdog_from(usec: Option<&str>, pid: Option<&str>, my_pid: u32) -> Option<Duration> {
    if let Some(pid) = pid {
        if pid.trim().parse::<u32>().ok()? != my_pid {
            return None;
        }
    }
    let usec: u64 = usec?.trim().parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    /// Receives one datagram from `rx`, waiting at most a second.
    fn recv(rx: &UnixDatagram) -> String {
        rx.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut buf = [0u8; 256];
        let n = rx.recv(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn sends_to_a_filesystem_socket() {
        let dir = std::env::temp_dir().join(format!("tinylet-sdnotify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        notify_to(path.as_os_str(), "READY=1").unwrap();
        assert_eq!(recv(&rx), "READY=1");
        notify_to(path.as_os_str(), "STATUS=relisting\nWATCHDOG=1").unwrap();
        assert_eq!(recv(&rx), "STATUS=relisting\nWATCHDOG=1");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sends_to_an_abstract_socket() {
        let name = format!("tinylet-sdnotify-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx = UnixDatagram::bind_addr(&addr).unwrap();
        let var = OsString::from(format!("@{name}"));
        notify_to(&var, "STOPPING=1").unwrap();
        assert_eq!(recv(&rx), "STOPPING=1");
    }

    #[test]
    fn unset_or_empty_variable_is_a_no_op() {
        assert!(notify_var(None, "READY=1").is_ok());
        assert!(notify_var(Some(OsStr::new("")), "READY=1").is_ok());
        // Set, it really sends: a bad value is reported.
        assert!(notify_var(Some(OsStr::new("nowhere")), "READY=1").is_err());
    }

    #[test]
    fn bad_or_absent_sockets() {
        let e = notify_to(OsStr::new("relative.sock"), "READY=1").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("NOTIFY_SOCKET"), "{e}");
        // Nobody listening: an error to log, not a hang or a panic.
        let gone = std::env::temp_dir().join("tinylet-sdnotify-nobody-listens.sock");
        assert!(notify_to(gone.as_os_str(), "READY=1").is_err());
    }

    #[test]
    fn watchdog_interval_from_environment_values() {
        assert_eq!(
            watchdog_from(Some("30000000"), None, 7),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            watchdog_from(Some("500000"), Some("7"), 7),
            Some(Duration::from_millis(500))
        );
        assert_eq!(watchdog_from(Some("500000"), Some("8"), 7), None);
        assert_eq!(watchdog_from(None, None, 7), None);
        assert_eq!(watchdog_from(Some("0"), None, 7), None);
        assert_eq!(watchdog_from(Some("soon"), None, 7), None);
    }
}
