//! What containerd cannot be made to do on demand: a create that times out on the
//! client and did succeed on the runtime, a sandbox that fails to start, a runtime that
//! goes away for a while (and one that comes up after the agent).

use crate::node::*;
use crate::runtime::{code, Fault, Misbehave, Outcome};
use serde_json::{json, Value};
use std::time::Duration;

/// A node whose CRI calls time out after 1 s, running pod `late` whose first
/// CreateContainer is carried out at once and answered after 3 s; returns once the
/// agent has given up on that call.
fn late_create() -> FakeNode {
    let mut n = FakeNode::with_config("late-create", |cfg: &mut Value| {
        cfg["runtimeRequestTimeout"] = json!("1s");
    });
    let late = Misbehave::AnswerLate(Duration::from_secs(3));
    n.rt.fault(Fault::on("CreateContainer", late).about("app"));
    n.start_agent();
    n.apply(&pod("late", json!({"containers": [container("app")]})));
    n.wait("the agent to give up on the create", |n| {
        let c = n.rt.calls_to("CreateContainer");
        c.first()
            .is_some_and(|c| c.outcome == Outcome::ClientGaveUp)
            .then_some(())
    });
    n
}

#[test]
fn create_that_timed_out_but_succeeded_is_not_made_twice() {
    let mut n = late_create();
    // The runtime holds the container the agent does not know the id of; a second
    // create would leave two (containerd refuses the same name and attempt, so a
    // second one would be a new attempt: a restart that never was).
    n.holds_for(
        Duration::from_secs(3),
        "one app container after the timeout",
        |n| {
            let made = n.rt.containers_named("app").len();
            (made != 1).then(|| format!("{made} app containers"))
        },
    );
    let s = n.status("late").unwrap();
    assert_eq!(
        restarts(&s, "app"),
        0,
        "nothing ran, nothing restarted: {s}"
    );
}

/// A timed-out create is checked with the runtime, and the
/// container it made is started, as it is (it never ran: restart count 0), not left
/// unstarted beside a second one.
#[test]
fn create_that_timed_out_but_succeeded_is_started() {
    let mut n = late_create();
    let s = n.wait_status("late", "Running", running_ready);
    assert_eq!(restarts(&s, "app"), 0, "{s}");
    let cs = n.rt.containers_named("app");
    assert_eq!(cs.len(), 1, "one app container");
    assert_eq!(container_id(&s, "app"), cs[0].id);
}

/// A create that got no answer made a container of a spec that has changed since: that
/// container is removed before a new one is made (kubelet's numbering: the next
/// attempt), never left beside it.
#[test]
fn create_that_timed_out_for_an_older_spec_is_removed_and_replaced() {
    let mut n = FakeNode::with_config("late-create-changed", |cfg: &mut Value| {
        cfg["runtimeRequestTimeout"] = json!("2s");
    });
    let late = Misbehave::AnswerLate(Duration::from_secs(4));
    n.rt.fault(Fault::on("CreateContainer", late).about("app"));
    n.start_agent();
    n.apply(&pod("late", json!({"containers": [container("app")]})));
    let first = n.wait("the first create, carried out at once", |n| {
        n.rt.containers_named("app").first().map(|c| c.id.clone())
    });
    // The spec changes while the create waits for its answer.
    let env = json!({"env": [{"name": "VERSION", "value": "2"}]});
    n.apply(&pod(
        "late",
        json!({"containers": [container_with("app", env)]}),
    ));
    let s = n.wait_status("late", "Running", running_ready);
    let cs = n.rt.containers_named("app");
    assert_eq!(cs.len(), 1, "the first one removed");
    assert_ne!(cs[0].id, first);
    assert_eq!(container_id(&s, "app"), cs[0].id);
    assert!(
        cs[0]
            .config
            .envs
            .iter()
            .any(|e| e.key == "VERSION" && e.value == "2"),
        "the new spec runs"
    );
    assert_eq!(restarts(&s, "app"), 1, "{s}");
    let calls = n.rt.calls();
    let at = |f: &dyn Fn(&crate::runtime::Call) -> bool| calls.iter().position(f);
    let removed = at(&|c| c.method == "RemoveContainer" && c.id == first);
    let second = at(&|c| c.method == "CreateContainer" && c.outcome == Outcome::Ok);
    assert!(
        removed.is_some() && removed < second,
        "removed ({removed:?}) before the second create ({second:?})"
    );
}

#[test]
fn failed_sandbox_is_retried() {
    let mut n = FakeNode::new("sandbox-fails");
    let fail = Misbehave::Fail {
        code: code::UNKNOWN,
        message: "failed to setup network for sandbox: plugin type=\"bridge\" failed".into(),
    };
    n.rt.fault(Fault::on("RunPodSandbox", fail).times(2));
    n.start_agent();
    n.apply(&pod("net", json!({"containers": [container("app")]})));
    n.wait("the first RunPodSandbox", |n| {
        (n.rt.count("RunPodSandbox") == 1).then_some(())
    });
    // A configMap change wakes every pod's worker: the back-off must still hold.
    n.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "wake", "namespace": NS}, "data": {"a": "b"}}));
    let s = n.wait_status("net", "waiting for its sandbox", |s| {
        let w = &cstatus(s, "app")["state"]["waiting"];
        waiting_reason(s, "app") == "ContainerCreating"
            && w["message"]
                .as_str()
                .is_some_and(|m| m.contains("failed to create pod sandbox") && m.contains("bridge"))
    });
    assert_eq!(phase(&s), "Pending");
    n.wait_status("net", "Running after the retries", running_ready);
    let runs = n.rt.calls_to("RunPodSandbox");
    assert_eq!(runs.len(), 3, "two failures, one success");
    // The sandbox back-off: 1 s, then 2 s between attempts.
    let gap = |a: usize, b: usize| runs[b].at.duration_since(runs[a].at).unwrap();
    assert!(gap(0, 1) >= Duration::from_secs(1), "{:?}", gap(0, 1));
    assert!(gap(1, 2) >= Duration::from_secs(2), "{:?}", gap(1, 2));
    assert_eq!(n.rt.sandboxes().len(), 1);
}

#[test]
fn agent_rides_out_a_runtime_outage() {
    let mut n = FakeNode::new("outage");
    n.start_agent();
    n.apply(&pod("web", json!({"containers": [container("app")]})));
    let before = n.wait_status("web", "Running", running_ready);
    let first = container_id(&before, "app");
    n.rt.down();
    n.wait("the agent to notice the outage", |n| {
        n.log().contains("relist failed").then_some(())
    });
    // While the runtime is away its container dies, and a pod is added.
    n.rt.exit(&first, 137);
    n.apply(&pod("added", json!({"containers": [container("app")]})));
    n.holds_for(
        Duration::from_secs(2),
        "the agent waits out the outage",
        |n| {
            let s = n.status("web").unwrap_or_default();
            (container_id(&s, "app") != first)
                .then(|| format!("status changed during the outage: {s}"))
        },
    );
    n.rt.up();
    let s = n.wait_status("web", "restarted after the outage", |s| {
        running_ready(s) && restarts(s, "app") == 1
    });
    assert_eq!(
        cstatus(&s, "app")["lastState"]["terminated"]["exitCode"],
        137,
        "{s}"
    );
    assert_ne!(container_id(&s, "app"), first);
    n.wait_status("added", "Running", running_ready);
    assert!(
        n.log().contains("relist works again"),
        "the recovery is logged"
    );
}

#[test]
fn agent_waits_for_a_runtime_that_starts_late() {
    let mut n = FakeNode::new("late-runtime");
    n.rt.down();
    n.start_agent();
    n.apply(&pod("web", json!({"containers": [container("app")]})));
    n.wait("the agent to wait for the runtime", |n| {
        n.log().contains("waiting for the runtime").then_some(())
    });
    n.rt.up();
    let s = n.wait_status("web", "Running", running_ready);
    // The runtime's name comes from the Version call the agent waited for.
    let id = cstatus(&s, "app")["containerID"]
        .as_str()
        .unwrap_or_default();
    assert!(id.starts_with("fake-cri://"), "{s}");
}

#[test]
fn container_killed_on_the_runtime_is_restarted() {
    let mut n = FakeNode::new("killed");
    n.start_agent();
    n.apply(&pod("web", json!({"containers": [container("app")]})));
    let s = n.wait_status("web", "Running", running_ready);
    let first = container_id(&s, "app");
    n.rt.exit(&first, 137);
    let s = n.wait_status("web", "restarted", |s| {
        running_ready(s) && restarts(s, "app") == 1
    });
    assert_eq!(
        cstatus(&s, "app")["lastState"]["terminated"]["exitCode"],
        137
    );
}
