//! `tinylet logs` as an operator uses it: the built binary on a scratch state directory
//! holding a pod, with CRI log files laid out as the runtime and log rotation leave them.

mod cli_support;

use cli_support::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tinylet::model::Object;
use tinylet::store::{Kind, Store};

/// A scratch state directory holding pod default/web, and where its logs go.
struct PodLogs {
    _dir: Scratch,
    config: String,
    pod_dir: PathBuf,
}

const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default"},
  "spec":{"initContainers":[{"name":"setup","image":"busybox"}],
          "containers":[{"name":"app","image":"busybox"},{"name":"side","image":"busybox"}]}}"#;

/// A state dir with pod default/web stored, a config naming it, and the pod's log dir.
fn scratch(tag: &str) -> PodLogs {
    let dir = Scratch::new(&format!("logs-{tag}"));
    let (state, logs) = (dir.0.join("state"), dir.0.join("logs"));
    let config = dir.0.join("config.json");
    let cfg = format!(
        r#"{{"stateDir":{:?},"podLogsDir":{:?},"manifestDirs":[]}}"#,
        state.display().to_string(),
        logs.display().to_string()
    );
    std::fs::write(&config, cfg).unwrap();
    let mut store = Store::open_at(&state, &[]).unwrap();
    let obj = tinylet::model::parse_object("pod.json", POD.as_bytes()).unwrap();
    store.apply(obj).unwrap();
    let uid = match store
        .get(Kind::Pod, "default", "web")
        .unwrap()
        .unwrap()
        .object
    {
        Object::Pod(p) => p.metadata.uid,
        _ => unreachable!(),
    };
    assert!(!uid.is_empty());
    let pod_dir = logs.join(format!("default_web_{uid}"));
    PodLogs {
        config: config.display().to_string(),
        _dir: dir,
        pod_dir,
    }
}

fn rec(i: u32, stream: &str, tag: &str, msg: &str) -> String {
    format!(
        "2024-05-01T10:00:{:02}.{i:09}Z {stream} {tag} {msg}\n",
        i % 60
    )
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn logs(s: &PodLogs, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["logs"];
    all.extend(args);
    all.extend(["--config", &s.config]);
    let out = run(&all, "");
    (out.code, out.stdout, out.stderr)
}

/// Instance 0 (dead) and instance 1 (rotated once, a partial line across the rotation).
fn lay_out(s: &PodLogs) {
    let app = s.pod_dir.join("app");
    write(
        &app.join("0.log"),
        &(rec(1, "stdout", "F", "first run") + &rec(2, "stderr", "F", "crashed")),
    );
    write(
        &app.join("1.log.20240501-100005"),
        &(rec(3, "stdout", "F", "one")
            + &rec(4, "stdout", "F", "two")
            + &rec(5, "stdout", "P", "thr")),
    );
    write(
        &app.join("1.log"),
        &(rec(6, "stdout", "F", "ee") + "not a CRI line\n" + &rec(7, "stderr", "F", "four")),
    );
}

#[test]
fn reads_latest_previous_tail_and_timestamps() {
    let s = scratch("read");
    lay_out(&s);
    let (code, out, err) = logs(&s, &["default/web", "-c", "app"]);
    assert_eq!(
        (code, out.as_str()),
        (0, "one\ntwo\nthree\nfour\n"),
        "{err}"
    );
    let (code, out, _) = logs(&s, &["web", "-c", "app", "--previous"]);
    assert_eq!((code, out.as_str()), (0, "first run\ncrashed\n"));
    let (code, out, _) = logs(
        &s,
        &["default/web", "-c", "app", "--tail", "2", "--timestamps"],
    );
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "2024-05-01T10:00:05.000000005Z three\n2024-05-01T10:00:07.000000007Z four\n"
    );
}

#[test]
fn container_choice_and_errors() {
    let s = scratch("errors");
    lay_out(&s);
    let (code, _, err) = logs(&s, &["default/web"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("[app side]") && err.contains("init containers: [setup]"),
        "{err}"
    );
    let (code, _, err) = logs(&s, &["default/web", "-c", "nope"]);
    assert_eq!(code, 3, "{err}");
    let (code, _, err) = logs(&s, &["default/missing"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("default/missing"), "{err}");
    let (code, _, err) = logs(&s, &["default/web", "-c", "side"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no logs yet"), "{err}");
    let (code, _, err) = logs(&s, &["default/web", "-c", "side", "--previous"]);
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = logs(&s, &["default/web", "-c", "app", "--tail", "x"]);
    assert_eq!(code, 2, "{err}");
}

/// The lines a child prints, as they come (read on a thread of their own).
struct Lines {
    rx: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    fn of(out: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines {
            rx,
            seen: Vec::new(),
        }
    }

    /// Waits (at most 10 s) until the child has printed `want`, in order, as its next
    /// lines.
    fn expect(&mut self, want: &[&str]) {
        for w in want {
            match self.rx.recv_timeout(Duration::from_secs(10)) {
                Ok(line) => {
                    assert_eq!(line, *w, "after {:?}", self.seen);
                    self.seen.push(line);
                }
                Err(e) => panic!(
                    "no line {w:?} within 10 s ({e}); printed so far: {:?}",
                    self.seen
                ),
            }
        }
    }

    /// Everything printed after the expected lines, once the child closed its output.
    fn rest(self) -> Vec<String> {
        self.rx.iter().collect()
    }
}

/// Each write happens only once the follower has printed everything before it, so a
/// follower that started late (and read the files whole) could not pass: it would
/// never print the first line the test waits for.
#[test]
fn follow_sees_new_lines_and_rotation_and_ends_on_restart() {
    let s = scratch("follow");
    lay_out(&s);
    let mut child = command()
        .args([
            "logs",
            "default/web",
            "-c",
            "app",
            "-f",
            "--config",
            &s.config,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = Lines::of(child.stdout.take().unwrap());
    let app = s.pod_dir.join("app");
    let append = |p: &Path, t: String| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(p)
            .unwrap();
        f.write_all(t.as_bytes()).unwrap();
    };
    lines.expect(&["one", "two", "three", "four"]);
    append(&app.join("1.log"), rec(8, "stdout", "F", "five"));
    lines.expect(&["five"]);
    // Rotation: rename, a late line in the old file, then the runtime's new file.
    std::fs::rename(app.join("1.log"), app.join("1.log.20240501-100010")).unwrap();
    append(
        &app.join("1.log.20240501-100010"),
        rec(9, "stdout", "F", "six"),
    );
    lines.expect(&["six"]);
    append(&app.join("1.log"), rec(10, "stdout", "F", "seven"));
    lines.expect(&["seven"]);
    // The container restarts: following ends.
    write(&app.join("2.log"), &rec(11, "stdout", "F", "next run"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "logs -f did not end after the restart"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        lines.rest(),
        Vec::<String>::new(),
        "nothing after \"seven\""
    );
}
