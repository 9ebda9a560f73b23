//! `tinylet get pods -w`: the table, then a row for each pod whose row changed (a pod
//! applied, a status file the agent rewrote, a pod deleted), from inotify: between
//! changes the process sleeps and uses no CPU.

mod cli_support;

use cli_support::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};
use tinylet::model::PodStatus;
use tinylet::store::Store;

fn pod(name: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},"spec":{{"containers":[{{"name":"c","image":"busybox"}}]}}}}"#
    )
}

/// `tinylet get pods -w` on the scratch store, its stdout lines sent to the receiver.
fn watch(s: &Scratch, extra: &[&str]) -> (Child, Receiver<String>) {
    let (state, config) = (s.state(), s.path("config.json"));
    let mut child = command()
        .args([
            "get",
            "pods",
            "-w",
            "--state-dir",
            &state,
            "--config",
            &config,
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// The next line within 10 s.
fn next(rx: &Receiver<String>) -> String {
    rx.recv_timeout(Duration::from_secs(10))
        .expect("a line from the watch")
}

/// CPU time (user + system, in clock ticks) the process has used.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn watch_prints_each_changed_row_and_sleeps_between_changes() {
    let s = Scratch::with_config("watch");
    assert_eq!(tl_in(&s, &["apply", "-f", "-"], &pod("one")).code, 0);
    let (mut child, rx) = watch(&s, &[]);
    assert!(next(&rx).starts_with("NAME "), "the header first");
    assert!(next(&rx).starts_with("one "));
    // A new pod: its row.
    assert_eq!(tl_in(&s, &["apply", "-f", "-"], &pod("two")).code, 0);
    let row = next(&rx);
    assert!(row.starts_with("two ") && row.contains("Pending"), "{row}");
    // The agent writes a status: the row again, with it.
    let mut store = Store::open_at(Path::new(&s.state()), &[]).unwrap();
    let status: PodStatus = serde_json::from_str(
        r#"{"phase":"Running","containerStatuses":[{"name":"c","ready":true,"restartCount":0,"state":{"running":{}}}]}"#,
    )
    .unwrap();
    store.write_status("default", "one", &status).unwrap();
    let row = next(&rx);
    assert!(
        row.starts_with("one ") && row.contains("1/1") && row.contains("Running"),
        "{row}"
    );
    // Idle: asleep in the kernel, no CPU used over two seconds, nothing printed.
    let before = cpu_ticks(child.id());
    let t0 = Instant::now();
    assert!(
        rx.recv_timeout(Duration::from_secs(2)).is_err(),
        "nothing changed"
    );
    assert!(t0.elapsed() >= Duration::from_secs(2));
    assert!(cpu_ticks(child.id()) - before <= 1, "CPU used while idle");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn watch_is_for_pods_as_a_table() {
    let s = Scratch::with_config("watch-usage");
    for args in [
        &["get", "configmaps", "-w"][..],
        &["get", "pods", "-w", "-o", "json"],
    ] {
        let o = tl(&s, args);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(o.stderr.contains("get -w"), "{}", o.stderr);
    }
}
