//! `tinylet exec -i/-t` on the harness's real containerd: CRI Exec, the runtime's own
//! streaming server, the WebSocket channel protocol. One agent for the binary, one
//! busybox pod shared by the tests.
//!
//! Covered: piped stdin reaches the command (also more than one frame's worth), stdout
//! and stderr stay apart, the exit code comes back; a scripted terminal session (python3
//! `pty`): a prompt, `echo $((6*7))` gives 42, `tty` names a /dev/pts, the window size
//! set before and changed during the session reaches the remote terminal, `exit 5`
//! gives 5 and the local terminal is out of raw mode afterwards, two threads during it;
//! Ctrl-Z on `exec -i` stops it with the terminal blocking again; a container that is not
//! running; a missing pod.

mod agent_support;
mod common;

use agent_support::*;
use common::pty::{job_session, session, Step};
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

/// `tinylet exec --config C ARGS...`.
fn tinylet_exec(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tinylet"));
    cmd.arg("exec")
        .arg("--config")
        .arg(&node().config)
        .args(args);
    cmd
}

/// [`tinylet_exec`] with `input` piped to its stdin.
fn exec_piped(args: &[&str], input: &[u8]) -> Output {
    let mut child = tinylet_exec(args)
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

/// The scripted terminal session: tinylet on a pty (`common::pty`), typed into.
#[test]
fn tty_session_scripted() {
    let shell = format!("{NS}/shell");
    let cmd = tinylet_exec(&[&shell, "-it", "--", "sh"]);
    let steps = [
        Step::Until("# "),
        Step::Threads,
        Step::Type("echo $((6*7))"),
        Step::Until("\r\n42\r\n"),
        Step::Type("tty"),
        Step::Until("/dev/pts/"),
        Step::Type("stty size"),
        Step::Until("33 111"),
        Step::Size(40, 120),
        Step::Type("stty size"),
        Step::Until("40 120"),
        Step::Type("exit 5"),
    ];
    let s = session(&cmd, 33, 111, &steps, 30).unwrap_or_else(|e| panic!("{e}"));
    // Two threads, as the agent: the executor's and async-io's helper (no signal thread).
    assert_eq!(
        (s.exit, s.cooked, s.threads.as_slice()),
        (5, true, &[2][..])
    );
}

/// Ctrl-Z on `exec -i` without `-t` (the local terminal keeps its job control): the
/// session stops with the terminal blocking again, as the shell expects it back, and
/// goes on once continued.
#[test]
fn ctrl_z_stops_with_the_terminal_blocking() {
    let shell = format!("{NS}/shell");
    let cmd = tinylet_exec(&[&shell, "-i", "--", "sh", "-c", "echo ready; head -n 1"]);
    let steps = [
        Step::Until("ready"),
        Step::Keys("\x1a"),
        Step::Until("[stopped, stdin blocking]"),
        Step::Type("fg"),
        Step::Until("[continued]"),
        Step::Type("hello"),
        Step::Until("hello"),
    ];
    let s = job_session(&cmd, 24, 80, &steps, 30).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.exit, 0, "{s:?}");
}
