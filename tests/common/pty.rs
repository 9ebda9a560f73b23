//! A scripted terminal session: python3 runs a command on a new pty (its own session,
//! the pty its controlling terminal, as for a user's shell) and plays [`Step`]s on the
//! pty's other side: wait for output, type a line, change the window size. For
//! `tinylet exec -it` and `kubectl exec -it` / `attach -it`.

use serde_json::{json, Value};
use std::process::Command;

/// One step of a session.
pub enum Step<'a> {
    /// Wait until the output shows this text (what was seen before it is dropped).
    Until(&'a str),
    /// Type a line (ended by Enter: a carriage return, as a terminal sends it).
    Type(&'a str),
    /// Type a line again every 2 s until the output shows the text (for what reaches
    /// the remote side by another path than the typed keys, e.g. a window size).
    Retype(&'a str, &'a str),
    /// Set the window size: rows, columns (the command gets SIGWINCH).
    Size(u16, u16),
    /// Note how many threads the command has now.
    Threads,
    /// Send the command SIGTERM (a session the command would not end by itself).
    Term,
    /// Send these bytes as they are (a control key: "\x1a" is Ctrl-Z).
    Keys(&'a str),
}

/// How a session ended.
#[derive(Debug)]
pub struct Session {
    /// The command's exit code (negative: the signal that ended it).
    pub exit: i32,
    /// The terminal was back in cooked mode (echo, line editing) afterwards.
    pub cooked: bool,
    /// The thread counts noted by [`Step::Threads`].
    pub threads: Vec<u32>,
}

const DRIVER: &str = r##"
import fcntl, json, os, pty, select, signal, struct, sys, termios, time
steps = json.loads(sys.argv[1])
rows, cols, timeout = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
job = sys.argv[5] == "job"
argv = sys.argv[6:]
def size(fd, r, c):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", r, c, 0, 0))
def job_shell():
    # A job control shell in miniature: the command in its own foreground process
    # group. When it stops, the terminal comes back here; this says whether stdin (the
    # open file the command shares with it) was left non-blocking, and continues the
    # command once "fg" is typed.
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)
        os.tcsetpgrp(0, os.getpid())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        os.execv(argv[0], argv)
    while True:
        _, st = os.waitpid(child, os.WUNTRACED)
        if not os.WIFSTOPPED(st):
            os._exit(os.waitstatus_to_exitcode(st) & 0xFF)
        os.tcsetpgrp(0, os.getpgrp())
        nonblocking = fcntl.fcntl(0, fcntl.F_GETFL) & os.O_NONBLOCK
        os.write(1, b"[stopped, stdin %s]\r\n" % (b"non-blocking" if nonblocking else b"blocking"))
        typed = b""
        while b"fg" not in typed:
            select.select([0], [], [])
            try:
                typed += os.read(0, 100)
            except BlockingIOError:
                pass
        os.tcsetpgrp(0, child)
        os.kill(-child, signal.SIGCONT)
        os.write(1, b"[continued]\r\n")
pid, fd = pty.fork()
if pid == 0:
    size(0, rows, cols)
    if job:
        job_shell()
    os.execv(argv[0], argv)
seen = b""
def fail(why):
    sys.stdout.write(json.dumps({"error": why, "seen": seen.decode("utf-8", "replace")}) + "\n")
    os.kill(pid, signal.SIGKILL)
    sys.exit(0)
def until(pat, limit):
    global seen
    end = time.time() + limit
    while pat not in seen:
        left = end - time.time()
        if left <= 0:
            return False
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                fail("output ended waiting for %r" % pat)
            seen += chunk
    seen = seen[seen.index(pat) + len(pat):]
    return True
def typed(line):
    os.write(fd, line.encode() + b"\r")
threads = []
for step in steps:
    kind = step[0]
    if kind == "until":
        if not until(step[1].encode(), timeout):
            fail("timeout waiting for %r" % step[1])
    elif kind == "type":
        typed(step[1])
    elif kind == "retype":
        end = time.time() + timeout
        while True:
            typed(step[1])
            if until(step[2].encode(), 2):
                break
            if time.time() > end:
                fail("timeout waiting for %r after typing %r" % (step[2], step[1]))
    elif kind == "size":
        size(fd, step[1], step[2])
    elif kind == "threads":
        lines = open("/proc/%d/status" % pid).read().splitlines()
        threads.append(int([l.split()[1] for l in lines if l.startswith("Threads:")][0]))
    elif kind == "term":
        os.kill(pid, signal.SIGTERM)
    elif kind == "keys":
        os.write(fd, step[1].encode())
# Drain the output until the command ends, so it never blocks writing to the pty.
end = time.time() + timeout
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.time() > end:
        fail("the command did not end")
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            seen += os.read(fd, 4096)
        except OSError:
            pass
attrs = termios.tcgetattr(fd)
cooked = bool(attrs[3] & termios.ECHO) and bool(attrs[3] & termios.ICANON)
print(json.dumps({"exit": os.waitstatus_to_exitcode(status), "cooked": cooked,
                  "threads": threads}))
"##;

/// Runs `cmd` (its program and arguments: the driver starts it, so an environment or
/// directory set on `cmd` is refused) on a pty of `rows` x `cols` and plays `steps`,
/// each wait at most `timeout_s` seconds; then waits for the command to end. An error
/// says which step failed and the output seen since the last match.
pub fn session(
    cmd: &Command,
    rows: u16,
    cols: u16,
    steps: &[Step],
    timeout_s: u32,
) -> Result<Session, String> {
    run(false, cmd, rows, cols, steps, timeout_s)
}

/// [`session`] with `cmd` run as a job of a job control shell: Ctrl-Z stops it; the
/// shell then prints `[stopped, stdin blocking]` (or `non-blocking`: how the command
/// left the terminal's open file), and typing `fg` continues it (`[continued]`).
pub fn job_session(
    cmd: &Command,
    rows: u16,
    cols: u16,
    steps: &[Step],
    timeout_s: u32,
) -> Result<Session, String> {
    run(true, cmd, rows, cols, steps, timeout_s)
}

fn run(
    job: bool,
    cmd: &Command,
    rows: u16,
    cols: u16,
    steps: &[Step],
    timeout_s: u32,
) -> Result<Session, String> {
    let steps: Vec<Value> = steps
        .iter()
        .map(|s| match s {
            Step::Until(t) => json!(["until", t]),
            Step::Type(t) => json!(["type", t]),
            Step::Retype(t, want) => json!(["retype", t, want]),
            Step::Size(r, c) => json!(["size", r, c]),
            Step::Threads => json!(["threads"]),
            Step::Term => json!(["term"]),
            Step::Keys(k) => json!(["keys", k]),
        })
        .collect();
    assert!(
        cmd.get_envs().next().is_none() && cmd.get_current_dir().is_none(),
        "a pty session runs only the program and arguments of {cmd:?}"
    );
    let out = Command::new("python3")
        .args(["-c", DRIVER, &Value::from(steps).to_string()])
        .args([rows.to_string(), cols.to_string(), timeout_s.to_string()])
        .arg(if job { "job" } else { "plain" })
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .output()
        .map_err(|e| format!("running python3: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or("");
    let v: Value = serde_json::from_str(last).map_err(|_| {
        let err = String::from_utf8_lossy(&out.stderr);
        format!("pty driver: {}: {text}{err}", out.status)
    })?;
    if let Some(e) = v["error"].as_str() {
        return Err(format!(
            "{e}; seen since: {:?}",
            v["seen"].as_str().unwrap_or("")
        ));
    }
    Ok(Session {
        exit: v["exit"].as_i64().unwrap_or(i64::MIN) as i32,
        cooked: v["cooked"].as_bool().unwrap_or(false),
        threads: v["threads"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_u64())
                    .map(|n| n as u32)
                    .collect()
            })
            .unwrap_or_default(),
    })
}
