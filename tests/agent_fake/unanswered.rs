//! On a loaded board the runtime carries calls out after the agent stopped
//! waiting for them. A timed-out RunPodSandbox, CreateContainer or StartContainer is
//! checked with the runtime before it counts as a failure: what it made is adopted (no
//! restart, nothing made twice). And `maxParallelRuntimeOperations` bounds how many
//! heavy calls the runtime is asked for at once.

use crate::node::*;
use crate::runtime::{Fault, Misbehave, Outcome};
use serde_json::{json, Value};
use std::time::Duration;

/// A node whose CRI calls time out after 1 s, where the first `method` call is carried
/// out at once and answered after 3 s; pod `late` applied.
fn late(name: &str, method: &str) -> FakeNode {
    let mut n = FakeNode::with_config(name, |cfg: &mut Value| {
        cfg["runtimeRequestTimeout"] = json!("1s");
    });
    let late = Misbehave::AnswerLate(Duration::from_secs(3));
    n.rt.fault(Fault::on(method, late));
    n.start_agent();
    n.apply(&pod("late", json!({"containers": [container("app")]})));
    n
}

fn gave_up(n: &FakeNode, method: &str) -> bool {
    n.rt.calls_to(method)
        .first()
        .is_some_and(|c| c.outcome == Outcome::ClientGaveUp)
}

#[test]
fn start_that_timed_out_but_succeeded_is_adopted() {
    let mut n = late("late-start", "StartContainer");
    let s = n.wait_status("late", "Running", running_ready);
    assert!(gave_up(&n, "StartContainer"), "the start timed out");
    assert_eq!(restarts(&s, "app"), 0, "{s}");
    let cs = n.rt.containers_named("app");
    assert_eq!(cs.len(), 1, "one app container");
    assert_eq!(container_id(&s, "app"), cs[0].id);
    assert_eq!(n.rt.count("StartContainer"), 1, "not started twice");
    assert!(n.log().contains("StartContainer got no answer in time"));
}

#[test]
fn create_that_timed_out_but_succeeded_is_adopted_at_once() {
    let mut n = late("late-create-adopt", "CreateContainer");
    let s = n.wait_status("late", "Running", running_ready);
    assert!(gave_up(&n, "CreateContainer"), "the create timed out");
    assert_eq!(restarts(&s, "app"), 0, "{s}");
    assert_eq!(n.rt.count("CreateContainer"), 1, "not made twice");
    assert_eq!(n.rt.containers_named("app").len(), 1);
    let log = n.log();
    assert!(
        log.contains("CreateContainer got no answer in time"),
        "{log}"
    );
    assert!(
        !log.contains("CreateContainerError"),
        "never counted as a failure: {log}"
    );
}

#[test]
fn sandbox_that_timed_out_but_was_made_is_used() {
    // RunPodSandbox's deadline is twice runtimeRequestTimeout: 2 s, the answer 3 s.
    let mut n = late("late-sandbox", "RunPodSandbox");
    let s = n.wait_status("late", "Running", running_ready);
    assert!(gave_up(&n, "RunPodSandbox"), "the sandbox call timed out");
    assert_eq!(n.rt.count("RunPodSandbox"), 1, "not made twice");
    assert_eq!(n.rt.sandboxes().len(), 1);
    assert_eq!(restarts(&s, "app"), 0, "{s}");
}

/// Five pods whose every heavy call takes 300 ms, under `bound` (None: the default).
fn five_slow_pods(name: &str, bound: Option<u32>) -> usize {
    let mut n = FakeNode::with_config(name, |cfg: &mut Value| {
        if let Some(b) = bound {
            cfg["maxParallelRuntimeOperations"] = json!(b);
        }
    });
    let slow = Misbehave::AnswerLate(Duration::from_millis(300));
    for m in ["RunPodSandbox", "CreateContainer", "StartContainer"] {
        n.rt.fault(Fault::on(m, slow.clone()).times(100));
    }
    n.start_agent();
    let names: Vec<String> = (0..5).map(|i| format!("p{i}")).collect();
    for p in &names {
        n.apply(&pod(p, json!({"containers": [container("app")]})));
    }
    for p in &names {
        let s = n.wait_status(p, "Running", running_ready);
        assert_eq!(restarts(&s, "app"), 0, "{s}");
    }
    n.rt.heavy_peak()
}

#[test]
fn heavy_calls_stay_within_max_parallel_runtime_operations() {
    assert_eq!(
        five_slow_pods("bound-2", Some(2)),
        2,
        "at most 2, and 2 used"
    );
    assert_eq!(five_slow_pods("bound-1", Some(1)), 1);
    // The bound is what holds them back: without one the five pods overlap.
    assert!(five_slow_pods("unbound", None) > 2);
}
