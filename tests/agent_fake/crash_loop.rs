//! Crash-loop back-off as kubelet's: a restart at once after the first exit, then
//! 10 s doubling, counted from each exit, with kubelet's waiting reason and message.
//!
//! The delays are kubelet's fixed numbers, not config. The fake reports some exits
//! earlier than they happened (what the agent sees when it notices an exit late), so
//! each back-off has only `LEFT` to run when the agent sees the exit: the test waits
//! seconds, not minutes, and still sees the agent wait out every delay in full.

use crate::node::*;
use crate::runtime::Life;
use serde_json::{json, Value};
use std::time::{Duration, UNIX_EPOCH};

/// What is left of each back-off when the agent sees the exit.
const LEFT: Duration = Duration::from_secs(2);

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Restart `restart` of `app` is waiting in CrashLoopBackOff with kubelet's message.
fn backing_off(s: &Value, restart: i64, delay: &str, uid: &str) -> bool {
    let message = format!("back-off {delay} restarting failed container=app pod=crash_{NS}({uid})");
    let waiting = &cstatus(s, "app")["state"]["waiting"];
    restarts(s, "app") == restart
        && waiting["reason"] == "CrashLoopBackOff"
        && waiting["message"] == message.as_str()
}

#[test]
fn crash_loop_back_off_grows_as_kubelets() {
    let mut n = FakeNode::new("crash");
    n.rt.lives(
        "app",
        [
            Life::exit(0),
            Life::exit(1).reported_ago(secs(10) - LEFT),
            Life::exit(2).reported_ago(secs(20) - LEFT),
            Life::exit(3).reported_ago(secs(40) - LEFT),
        ],
        Life::exit(4),
    );
    n.start_agent();
    n.apply(&pod("crash", json!({"containers": [container("app")]})));
    n.wait("the pod applied", |n| n.status("crash"));
    let uid = n.uid("crash");
    // Restart 1 came at once; exit 1 leaves LEFT of the 10 s back-off, and so on.
    for (restart, delay, code) in [(1, "10s", 1), (2, "20s", 2), (3, "40s", 3), (4, "1m20s", 4)] {
        let s = n.wait_status("crash", &format!("backing off {delay}"), |s| {
            backing_off(s, restart, delay, &uid)
        });
        let last = &cstatus(&s, "app")["lastState"]["terminated"];
        assert_eq!(last["exitCode"], code, "{s}");
        assert_eq!(last["reason"], "Error", "{s}");
        assert_eq!(phase(&s), "Running", "{s}");
        assert_eq!(condition(&s, "Ready"), "False", "{s}");
    }
    // Each restart came no earlier than the reported exit plus the delay then in force.
    let cs = n.rt.containers_named("app");
    assert_eq!(cs.len(), 5, "one container per start");
    let created: Vec<Duration> = cs
        .iter()
        .map(|c| Duration::from_nanos(c.created_at as u64))
        .collect();
    let finished: Vec<Duration> = cs
        .iter()
        .map(|c| Duration::from_nanos(c.finished_at as u64))
        .collect();
    for (i, delay) in [(1, 10), (2, 20), (3, 40)] {
        let earliest = finished[i] + secs(delay);
        assert!(
            created[i + 1] >= earliest,
            "restart {} made {:?} before its back-off ran out",
            i + 1,
            earliest - created[i + 1]
        );
    }
    assert!(
        created[1] < finished[0] + secs(1),
        "the first restart waits for nothing"
    );
    // The last back-off (80 s) is in force: nothing is made while it lasts.
    n.holds_for(secs(1), "no start during the 80 s back-off", |n| {
        let made = n.rt.count("CreateContainer");
        (made != 5).then(|| format!("{made} containers made, want 5"))
    });
    let now = UNIX_EPOCH.elapsed().unwrap();
    assert!(
        now < finished[4] + secs(80),
        "the observation outlasted the back-off"
    );
}
