//! `tinylet exec -i/-t` on the harness's real containerd: CRI Exec, the runtime's own
//! streaming server, the WebSocket channel protocol. One agent for the binary, one
//! busybox pod shared by the tests.
//!
//! Covered: piped stdin reaches the command (also more than one frame's worth), stdout
//! and stderr stay apart, the exit code comes back; a scripted terminal session (python3
//! `pty`): a prompt, `echo $((6*7))` gives 42, `tty` names a /dev/pts, the window size
//! set before and changed during the session reaches the remote terminal, `exit 5`
//! gives 5 and the local terminal is out of raw mode afterwards, two threads during it; a container that is not
//! running; a missing pod.

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::json;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

fn node() -> &'static Node {
    static NODE: OnceLock<&'static Node> = OnceLock::new();
    NODE.get_or_init(|| {
        agent_support::node_for_the_process(|| {
            let node = Node::new(Containerd::shared(), "exec-stream");
            node.start_agent();
            node.apply(&pod(
                "shell",
                json!({"containers": [sh("main", node.image(), "exec sleep 3600")]}),
            ));
            node.wait_running("shell", Duration::from_secs(60));
            node
        })
    })
}

/// `tinylet exec --config C ARGS...` with `input` piped to its stdin.
fn exec_piped(args: &[&str], input: &[u8]) -> Output {
    let n = node();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tinylet"))
        .arg("exec")
        .arg("--config")
        .arg(&n.config)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running tinylet");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A thread writes so a large input cannot deadlock against unread output.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("waiting for tinylet");
    writer.join().unwrap().expect("writing stdin");
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn stdin_piped_stdout_stderr_apart_and_exit_code() {
    let target = format!("{NS}/shell");
    let script = "head -n 2; echo to-stderr >&2; exit 3";
    let out = exec_piped(
        &[&target, "-i", "--", "sh", "-c", script],
        b"one\ntwo\nthree\n",
    );
    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "one\ntwo\n");
    let err = text(&out.stderr);
    assert!(err.starts_with("to-stderr\n"), "stderr: {err}");
    assert!(!text(&out.stdout).contains("to-stderr"));
}

#[test]
fn large_stdin_arrives_whole() {
    let target = format!("{NS}/shell");
    let input: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let out = exec_piped(
        &[
            &target,
            "-c",
            "main",
            "--stdin",
            "--",
            "sh",
            "-c",
            "head -c 300000 | md5sum",
        ],
        &input,
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let want = Command::new("md5sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(&input)?;
            c.wait_with_output()
        })
        .unwrap();
    let hash = |o: &[u8]| text(o).split_whitespace().next().unwrap_or("").to_string();
    assert_eq!(hash(&out.stdout), hash(&want.stdout));
}

#[test]
fn stopped_container_is_said() {
    let n = node();
    n.apply(&pod(
        "done",
        json!({"restartPolicy": "Never", "containers": [sh("main", n.image(), "true")]}),
    ));
    n.wait_pod("done", "Succeeded", Duration::from_secs(60), |p| {
        phase(p) == "Succeeded"
    });
    let out = exec_piped(&[&format!("{NS}/done"), "-i", "--", "cat"], b"");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("container main of pod e2e/done is not running"),
        "{err}"
    );
}

#[test]
fn missing_pod_is_not_found() {
    node();
    let out = exec_piped(&[&format!("{NS}/nope"), "-it", "--", "sh"], b"");
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("not found"),
        "{}",
        text(&out.stderr)
    );
}

/// The scripted terminal session: python3 gives tinylet a pty and types into it.
const PTY_SCRIPT: &str = r##"
import fcntl, os, pty, select, struct, sys, termios, time
argv = sys.argv[1:]
def size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
pid, fd = pty.fork()
if pid == 0:
    size(0, 33, 111)
    os.execv(argv[0], argv)
seen = b""
def until(pat, timeout=30):
    global seen
    end = time.time() + timeout
    while pat not in seen:
        left = end - time.time()
        if left <= 0:
            sys.stdout.write("TIMEOUT waiting for %r; seen %r\n" % (pat, seen))
            sys.exit(99)
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                sys.stdout.write("EOF waiting for %r; seen %r\n" % (pat, seen))
                sys.exit(98)
            seen += chunk
    at = seen.index(pat) + len(pat)
    seen = seen[at:]
def typed(line):
    os.write(fd, line.encode() + b"\r")
until(b"# ")
status_lines = open("/proc/%d/status" % pid).read().splitlines()
threads = [l.split()[1] for l in status_lines if l.startswith("Threads:")][0]
typed("echo $((6*7))")
until(b"\r\n42\r\n")
typed("tty")
until(b"/dev/pts/")
typed("stty size")
until(b"33 111")
size(fd, 40, 120)
typed("stty size")
until(b"40 120")
typed("exit 5")
_, status = os.waitpid(pid, 0)
attrs = termios.tcgetattr(fd)
cooked = bool(attrs[3] & termios.ECHO) and bool(attrs[3] & termios.ICANON)
print("exit=%d cooked=%s threads=%s" % (os.waitstatus_to_exitcode(status), cooked, threads))
"##;

#[test]
fn tty_session_scripted() {
    let n = node();
    let target = format!("{NS}/shell");
    let out = Command::new("python3")
        .args(["-c", PTY_SCRIPT, env!("CARGO_BIN_EXE_tinylet"), "exec"])
        .arg("--config")
        .arg(&n.config)
        .args([target.as_str(), "-it", "--", "sh"])
        .output()
        .expect("running python3");
    let report = text(&out.stdout);
    assert!(
        out.status.success(),
        "python3: {}{report}{}",
        out.status,
        text(&out.stderr)
    );
    // Two threads, as the agent: the executor's and async-io's helper (no signal thread).
    assert_eq!(
        report.trim(),
        "exit=5 cooked=True threads=2",
        "{}",
        text(&out.stderr)
    );
}
