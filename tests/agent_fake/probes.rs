//! Exec probes through ExecSync: a failing liveness probe kills the container and the
//! restart is counted; readiness drives the container's `ready` and the pod's Ready and
//! ContainersReady conditions without restarting anything.

use crate::node::*;
use crate::runtime::{ExecReply, Outcome};
use serde_json::{json, Value};
use std::time::Duration;

fn exec_probe(cmd: &[&str]) -> Value {
    json!({"exec": {"command": cmd}, "periodSeconds": 1, "failureThreshold": 1})
}

#[test]
fn failing_liveness_probe_kills_and_restarts_the_container() {
    let mut n = FakeNode::new("liveness");
    // The first instance's first probe fails; every later one succeeds.
    n.rt.execs(
        "app",
        [ExecReply {
            stdout: "sick".into(),
            ..ExecReply::code(1)
        }],
        ExecReply::code(0),
    );
    n.start_agent();
    let app = container_with(
        "app",
        json!({"livenessProbe": exec_probe(&["/bin/check", "alive"])}),
    );
    n.apply(&pod(
        "live",
        json!({"terminationGracePeriodSeconds": 7, "containers": [app]}),
    ));
    let s = n.wait_status("live", "restarted once and running", |s| {
        restarts(s, "app") == 1 && running(s, "app")
    });
    let first = &n.rt.containers_named("app")[0];
    let last = &cstatus(&s, "app")["lastState"]["terminated"];
    assert_eq!(last["exitCode"], 143, "killed by the stop (SIGTERM): {s}");
    assert_eq!(
        last["containerID"],
        format!("fake-cri://{}", first.id),
        "{s}"
    );
    let execs = n.rt.calls_to("ExecSync");
    assert_eq!(execs[0].id, first.id);
    assert_eq!(execs[0].cmd, ["/bin/check", "alive"]);
    assert_eq!(
        execs[0].timeout, 1,
        "the probe's timeoutSeconds (default 1)"
    );
    // Killed with the pod's grace period, once.
    let stops = n.rt.calls_to("StopContainer");
    assert_eq!(stops.len(), 1, "one kill");
    assert_eq!(
        (stops[0].id.as_str(), stops[0].timeout),
        (first.id.as_str(), 7)
    );
    // The new instance passes its probes: it keeps running, with the count kept.
    n.holds_for(
        Duration::from_millis(2500),
        "healthy instance left alone",
        |n| {
            let s = n.status("live").unwrap_or_default();
            if restarts(&s, "app") != 1 || !running(&s, "app") {
                return Some(format!("status changed: {s}"));
            }
            let stops = n.rt.count("StopContainer");
            (stops != 1).then(|| format!("{stops} StopContainer calls"))
        },
    );
    let probed_second =
        n.rt.calls_to("ExecSync")
            .iter()
            .filter(|c| c.id != first.id)
            .count();
    assert!(
        probed_second >= 2,
        "the new instance is probed every second ({probed_second})"
    );
}

#[test]
fn readiness_probe_drives_the_ready_conditions() {
    let mut n = FakeNode::new("readiness");
    n.rt.execs("app", [], ExecReply::code(1));
    n.start_agent();
    let app = container_with("app", json!({"readinessProbe": exec_probe(&["ready?"])}));
    n.apply(&pod("ready", json!({"containers": [app]})));
    let not_ready = |s: &Value| {
        running(s, "app")
            && cstatus(s, "app")["ready"] == false
            && condition(s, "Ready") == "False"
            && condition(s, "ContainersReady") == "False"
    };
    n.wait_status("ready", "running, not ready", not_ready);
    // Wait for a failed probe to be seen, so that "not ready" is the probe's verdict.
    n.wait("a failed readiness probe", |n| {
        n.rt.calls_to("ExecSync")
            .iter()
            .any(|c| c.outcome == Outcome::Ok)
            .then_some(())
    });
    n.wait_status("ready", "still not ready after a failed probe", not_ready);
    n.rt.execs("app", [], ExecReply::code(0));
    let s = n.wait_status("ready", "Ready", running_ready);
    assert_eq!(cstatus(&s, "app")["ready"], true);
    n.rt.execs("app", [], ExecReply::code(1));
    let s = n.wait_status("ready", "not ready again", not_ready);
    assert_eq!(phase(&s), "Running");
    assert_eq!(restarts(&s, "app"), 0, "readiness never restarts: {s}");
    assert_eq!(n.rt.count("StopContainer"), 0, "readiness never kills");
}
