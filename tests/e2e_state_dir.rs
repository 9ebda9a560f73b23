//! End-to-end tests of the agent's state directory under faults, each on its own
//! private containerd (they start second agents, restart the agent, or tune container
//! GC): one agent per state directory, status files
//! repaired when someone else changes them, a damaged desired pod file never stopping
//! its pod, and a pod uid with `_` keeping its log directory across GC passes.

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const START: Duration = Duration::from_secs(60);
/// The nodes' plegPeriod (agent_support's config).
const PLEG: Duration = Duration::from_millis(500);

fn sleeper(n: &Node, name: &str) -> Value {
    pod(
        name,
        json!({"containers": [sh("app", n.image(), "exec sleep 3600")]}),
    )
}

fn state(n: &Node) -> PathBuf {
    n.dir.join("state")
}

/// How many times the agent's log says `text`.
fn log_count(n: &Node, text: &str) -> usize {
    std::fs::read_to_string(n.agent_log_path())
        .unwrap_or_default()
        .matches(text)
        .count()
}

/// The files in `dir` whose names contain `part`.
fn files_with(dir: &Path, part: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().unwrap().to_string_lossy().contains(part))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Writes `bytes` over the start of `path` in place (no rename, no truncation), as a
/// bit flip on flash or a stray writer would.
fn overwrite_in_place(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// The state directory is locked: one agent per state directory.
#[test]
fn a_second_agent_on_the_same_state_dir_exits_and_the_first_keeps_its_pods() {
    let c = Containerd::start();
    let n = Node::new(&c, "lock");
    n.start_agent();
    n.apply(&sleeper(&n, "first"));
    let id = container_id(&n.wait_running("first", START), "app");
    let pid = n.agent_pid().unwrap();

    let mut second = Command::new(env!("CARGO_BIN_EXE_tinylet"))
        .arg("run")
        .arg("--config")
        .arg(&n.config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while second.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = second.kill();
            let out = second.wait_with_output().unwrap();
            panic!(
                "a second agent on the same state directory kept running:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = second.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let expected = format!(
        "state directory {} is in use by pid {pid} (tinylet)",
        state(&n).display()
    );
    assert!(err.contains(&expected), "wanted {expected:?} in: {err}");

    // The operator's commands work beside the agent.
    n.apply(&sleeper(&n, "beside"));
    n.wait_running("beside", START);
    let table = n.tinylet_ok(&["get", "pods", "-n", NS]);
    assert!(
        table.contains("beside") && table.contains("first"),
        "{table}"
    );
    let beside = n.uid("beside");
    n.delete_pod("beside");
    let cri = n.cri();
    wait_for("the deleted pod removed", START, || {
        (cri.containers(&beside).is_empty() && cri.sandboxes(&beside).is_empty()).then_some(())
    });
    // The first agent kept its pod.
    let p = n.wait_running("first", START);
    assert_eq!(container_id(&p, "app"), id);
    assert_eq!(restarts(&p, "app"), 0);
    n.assert_agent_alive();

    // Killed, the agent leaves no lock behind: the next one starts and adopts the pod.
    n.kill_agent();
    n.start_agent();
    wait_for("the restarted agent's first relist", START, || {
        (log_count(&n, "first relist done") >= 2).then_some(())
    });
    n.assert_agent_alive();
    let p = n.wait_running("first", START);
    assert_eq!(container_id(&p, "app"), id, "adopted, not restarted");
}

/// Waits until `path` holds `good` again; returns how long that took.
fn wait_repaired(n: &Node, path: &Path, good: &[u8], what: &str) -> Duration {
    let t0 = Instant::now();
    loop {
        if std::fs::read(path).ok().as_deref() == Some(good) {
            return t0.elapsed();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "status file not repaired after {what}:\n{}",
            n.agent_log_tail()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Status files are the agent's: changed by someone else, they are repaired.
#[test]
fn status_files_changed_by_others_are_rewritten_within_a_period() {
    let c = Containerd::start();
    let n = Node::new(&c, "status");
    n.serve_status();
    n.start_agent();
    n.apply(&sleeper(&n, "web"));
    n.wait_running("web", START);
    let file = state(&n).join(format!("status/{NS}_web.json"));
    let good = std::fs::read(&file).unwrap();

    // Garbage written in place, the writer keeping the file open (no close event).
    let mut open = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    open.write_all(b"garbage, not a pod status").unwrap();
    let garbled = wait_repaired(&n, &file, &good, "garbage written in place");
    drop(open);
    // Truncated.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&file)
        .unwrap();
    let truncated = wait_repaired(&n, &file, &good, "truncation");
    // Removed.
    std::fs::remove_file(&file).unwrap();
    let removed = wait_repaired(&n, &file, &good, "removal");
    eprintln!(
        "status file of {} bytes repaired after: garbage {garbled:?}, truncation {truncated:?}, removal {removed:?}",
        good.len()
    );
    let said = |what: &str| log_count(&n, &format!("{NS}_web.json: {what}; rewritten"));
    assert!(
        said("changed by someone else") >= 2 && said("removed by someone else") >= 1,
        "{}",
        n.agent_log_tail()
    );
    // Within one plegPeriod, with slack for a loaded machine.
    for t in [garbled, truncated, removed] {
        assert!(t < PLEG * 4, "repair took {t:?}");
    }
    let table = n.tinylet_ok(&["get", "pods", "-n", NS]);
    let row = table.lines().find(|l| l.starts_with("web ")).unwrap();
    assert!(row.contains("1/1") && row.contains("Running"), "{table}");

    // A healthy steady state writes nothing (the repairs' own events included).
    let stamp = || {
        let m = std::fs::metadata(&file).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let before = stamp();
    n.wait_relists(6);
    assert_eq!(stamp(), before, "status file rewritten with no change");
    n.assert_agent_alive();
}

/// A damaged desired file of a running pod (bit flip, torn write).
#[test]
fn a_damaged_desired_file_keeps_its_pod_running_until_deleted() {
    let c = Containerd::start();
    let n = Node::new(&c, "damaged");
    n.start_agent();
    n.apply(&sleeper(&n, "keep"));
    let id = container_id(&n.wait_running("keep", START), "app");
    let uid = n.uid("keep");
    let file = state(&n).join(format!("desired/pods/{NS}_keep.json"));
    let quarantine = state(&n).join("quarantine");
    let good = std::fs::read(&file).unwrap();
    let suffix = format!("-pods-{NS}_keep.json");

    // A bit flip: a ':' past the middle becomes a control character.
    let mut flipped = good.clone();
    let at = good.len() / 2
        + good[good.len() / 2..]
            .iter()
            .position(|b| *b == b':')
            .unwrap();
    flipped[at] ^= 0x20;
    // A torn write: the second half gone.
    let torn = good[..good.len() / 2].to_vec();
    for (i, (what, bad)) in [("bit flip", &flipped), ("torn write", &torn)]
        .into_iter()
        .enumerate()
    {
        if bad.len() == good.len() {
            overwrite_in_place(&file, bad);
        } else {
            std::fs::write(&file, bad).unwrap();
        }
        let copies = wait_for(
            &format!("{what}: the damaged copy quarantined"),
            START,
            || {
                let q = files_with(&quarantine, &suffix);
                (q.len() == i + 1 && std::fs::read(&file).ok().as_deref() == Some(&good[..]))
                    .then_some(q)
            },
        );
        assert!(
            copies.iter().any(|q| std::fs::read(q).unwrap() == *bad),
            "{what}: quarantine holds the bad copy"
        );
        let p = n.wait_pod("keep", "marked DesiredFileQuarantined", START, |p| {
            p["status"]["reason"] == "DesiredFileQuarantined"
        });
        let msg = p["status"]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains(&file.display().to_string()) && msg.contains("quarantine"),
            "{what}: {msg}"
        );
        assert!(is_running_ready(&p), "{what}: {}", p["status"]);
        assert_eq!(container_id(&p, "app"), id, "{what}: same container");
        assert_eq!(restarts(&p, "app"), 0, "{what}");
        let cs = n.cri().containers(&uid);
        assert_eq!(cs.len(), 1, "{what}: {cs:?}");
        assert!(container_running(&cs[0]), "{what}");
    }
    n.assert_agent_alive();

    // An explicit delete still removes it.
    n.delete_pod("keep");
    let cri = n.cri();
    wait_for("the pod removed after delete", START, || {
        (cri.containers(&uid).is_empty() && cri.sandboxes(&uid).is_empty()).then_some(())
    });
    assert!(n.pod("keep").is_none());
}

/// The agent starts with a pod's desired file already damaged, so it
/// holds no spec for it: the pod's containers are not removed as orphans; the file
/// stays where it is, and deleting it removes the pod.
#[test]
fn an_agent_starting_on_a_damaged_desired_file_keeps_the_pods_containers() {
    let c = Containerd::start();
    let n = Node::new(&c, "held");
    n.serve_status();
    n.start_agent();
    n.apply(&sleeper(&n, "held"));
    n.apply(&sleeper(&n, "other"));
    let held_id = container_id(&n.wait_running("held", START), "app");
    let other_id = container_id(&n.wait_running("other", START), "app");
    let uid = n.uid("held");
    n.kill_agent();
    let file = state(&n).join(format!("desired/pods/{NS}_held.json"));
    let good = std::fs::read(&file).unwrap();
    let torn = &good[..good.len() / 3];
    std::fs::write(&file, torn).unwrap();

    n.start_agent();
    wait_for("the restarted agent's first relist", START, || {
        (log_count(&n, "first relist done") >= 2).then_some(())
    });
    // Orphans go in the first relist after it: watch a few.
    n.wait_relists(6);
    n.assert_agent_alive();
    assert_eq!(
        log_count(&n, &format!("pod uid {uid} is not desired")),
        0,
        "taken for an orphan:\n{}",
        n.agent_log_tail()
    );
    let cri = n.cri();
    let cs = cri.containers(&uid);
    assert_eq!(cs.len(), 1, "{cs:?}\n{}", n.agent_log_tail());
    assert_eq!(cs[0].id, held_id);
    assert!(container_running(&cs[0]));
    assert!(cri.sandboxes(&uid).iter().any(sandbox_ready));
    assert!(
        log_count(&n, &format!("no good copy of pod {NS}/held")) >= 1,
        "{}",
        n.agent_log_tail()
    );
    assert_eq!(std::fs::read(&file).unwrap(), torn, "left in place");
    let other = n.wait_running("other", START);
    assert_eq!(container_id(&other, "app"), other_id);

    // Deleting the file removes the pod.
    n.delete_pod("held");
    wait_for("the held pod removed after delete", START, || {
        (cri.containers(&uid).is_empty() && cri.sandboxes(&uid).is_empty()).then_some(())
    });
    n.assert_agent_alive();
}

/// A uid with `_` (log directory `NS_NAME_my_pod-1`) keeps its log
/// directory across container GC passes; a second pod cannot take the uid.
#[test]
fn a_pod_uid_with_underscores_keeps_its_logs_across_gc_passes() {
    let c = Containerd::start();
    let n = Node::new(&c, "gcuid");
    n.set_config("containerGC", json!({"period": "1s", "minAge": "10m"}));
    n.start_agent();
    let mut m = sleeper(&n, "gcuid");
    m["metadata"]["uid"] = json!("my_pod-1");
    n.apply(&m);
    n.wait_running("gcuid", START);
    assert_eq!(n.uid("gcuid"), "my_pod-1");
    let logs = n.dir.join("logs");
    let live_log = logs.join(format!("{NS}_gcuid_my_pod-1/app/0.log"));
    assert!(live_log.exists(), "{}", live_log.display());
    let pod_dir = n.dir.join("pods/my_pod-1");
    assert!(pod_dir.exists());
    // A leftover directory of a gone pod: each pass removes it, so its removal shows a
    // pass ran.
    for pass in 0..3 {
        let canary = logs.join(format!("{NS}_gone_canary-{pass}/app"));
        std::fs::create_dir_all(&canary).unwrap();
        wait_for("a container GC pass", START, || {
            (!canary.parent().unwrap().exists()).then_some(())
        });
        assert!(
            live_log.exists(),
            "pass {pass}: the live pod's log was swept"
        );
        assert!(pod_dir.exists());
    }
    let p = n.wait_running("gcuid", START);
    assert_eq!(restarts(&p, "app"), 0);

    let mut twin = sleeper(&n, "twin");
    twin["metadata"]["uid"] = json!("my_pod-1");
    let path = write_file(&n.dir, "twin.json", &twin.to_string());
    let out = n.tinylet(&["apply", "-f", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("already the uid of pod e2e/gcuid") && err.contains("my_pod-1"),
        "{err}"
    );
    assert!(n.pod("twin").is_none());
}

/// A finished pod keeps its last dead container per container name (and so its logs)
/// across container GC passes until it is deleted, as kubelet's container GC does;
/// older instances of the same container go.
#[test]
fn a_finished_pod_keeps_its_last_container_and_logs_across_gc_passes() {
    let c = Containerd::start();
    let n = Node::new(&c, "gcdone");
    n.set_config("containerGC", json!({"period": "1s"}));
    n.start_agent();
    // Fails once, then succeeds: two dead instances of one container.
    let script = "if [ -f /data/once ]; then echo second run; exit 0; fi; \
                  touch /data/once; echo first run; exit 1";
    let mut app = sh("app", n.image(), script);
    app["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}]);
    let m = pod(
        "done",
        json!({"containers": [app], "restartPolicy": "OnFailure",
               "volumes": [{"name": "data", "emptyDir": {}}]}),
    );
    n.apply(&m);
    n.wait_pod("done", "Succeeded", START, |p| phase(p) == "Succeeded");
    let uid = n.uid("done");
    let cri = n.cri();
    // The GC removes the first instance: then only the last one is left.
    let last = wait_for("the older instance collected", START, || {
        let cs = cri.containers(&uid);
        (cs.len() == 1).then(|| cs[0].clone())
    });
    assert_eq!(last.metadata.as_ref().map(|m| m.attempt), Some(1));
    let target = format!("{NS}/done");
    let logs = n.tinylet_ok(&["logs", &target, "-c", "app"]);
    assert_eq!(logs.trim(), "second run");
    let gone_logs = n.dir.join("logs");
    for pass in 0..3 {
        let canary = gone_logs.join(format!("{NS}_gone_canary-{pass}/app"));
        std::fs::create_dir_all(&canary).unwrap();
        wait_for("a container GC pass", START, || {
            (!canary.parent().unwrap().exists()).then_some(())
        });
        let ids: Vec<_> = cri.containers(&uid).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, std::slice::from_ref(&last.id), "pass {pass}");
        let logs = n.tinylet_ok(&["logs", &target, "-c", "app"]);
        assert_eq!(logs.trim(), "second run", "pass {pass}");
    }
    n.delete_pod("done");
    wait_for(
        "the finished pod's containers removed on delete",
        START,
        || cri.containers(&uid).is_empty().then_some(()),
    );
    n.assert_agent_alive();
}
