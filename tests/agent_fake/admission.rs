//! Admission in the sync loop's plan, on the fake runtime: a pod being deleted keeps its
//! slot of `maxPods` until its containers are gone; a changed spec is admitted again in
//! place of the old one (not counted twice), a change of labels alone is not judged, and
//! a refused change stops the pod (Failed, nothing left on the runtime).

use crate::node::*;
use crate::runtime::Stop;
use serde_json::{json, Value};
use std::time::Duration;

/// Thresholds the test host's own full disk cannot meet: a shared machine's disk under
/// pressure would refuse new pods (`Evicted`) and hide what is tested here.
fn no_disk_pressure() -> Value {
    json!({"memory.available": "1Mi"})
}

/// The pod's sandboxes on the runtime.
fn sandboxes_of(n: &FakeNode, name: &str) -> usize {
    n.rt.sandboxes()
        .iter()
        .filter(|s| s.pod_name() == name)
        .count()
}

#[test]
fn a_pod_being_deleted_holds_its_slot_until_it_is_gone() {
    let mut n = FakeNode::with_config("held-slot", |c| {
        c["maxPods"] = json!(1);
        c["evictionHard"] = no_disk_pressure();
    });
    // `stubborn` ignores SIGTERM: its pod stops only when the grace period ends.
    n.rt.stops("stubborn", Stop::IgnoresTerm);
    n.start_agent();
    n.apply(&pod(
        "old",
        json!({"terminationGracePeriodSeconds": 10, "containers": [container("stubborn")]}),
    ));
    n.wait_status("old", "Running", running_ready);
    n.delete_pod("old");
    n.wait("the old pod's stop begun", |n| {
        (n.rt.count("StopContainer") > 0).then_some(())
    });
    n.apply(&pod("new", json!({"containers": [container("app")]})));
    let s = n.wait_status("new", "refused", |s| phase(s) == "Failed");
    assert_eq!(s["reason"], "OutOfpods", "{s}");
    let stops = n.rt.calls_to("StopContainer");
    assert!(
        stops.iter().all(|c| c.answered.is_none()),
        "the old pod still stops while the new one is judged"
    );
    assert_eq!(
        sandboxes_of(&n, "new"),
        0,
        "nothing of the refused pod made"
    );
    n.wait("the old pod removed", |n| {
        (sandboxes_of(n, "old") == 0).then_some(())
    });
    // The refusal holds until the spec changes; changed, the pod now fits.
    let env = json!({"env": [{"name": "TRY", "value": "2"}]});
    n.apply(&pod(
        "new",
        json!({"containers": [container_with("app", env)]}),
    ));
    n.wait_status("new", "Running", running_ready);
}

/// `web` with container `app` given `extra`, and `spec` merged into the pod's spec.
fn web(extra: Value, spec: Value) -> Value {
    let mut p = pod("web", json!({"containers": [container_with("app", extra)]}));
    if let (Some(base), Value::Object(more)) = (p["spec"].as_object_mut(), spec) {
        base.extend(more);
    }
    p
}

#[test]
fn a_changed_spec_is_admitted_again_and_a_refused_one_stops_the_pod() {
    let mut n = FakeNode::with_config("readmit", |c| {
        c["maxPods"] = json!(1);
        c["podPolicy"] = json!({"local": "baseline"});
        c["evictionHard"] = no_disk_pressure();
    });
    n.start_agent();
    n.apply(&web(json!({}), json!({})));
    let first = container_id(&n.wait_status("web", "Running", running_ready), "app");
    // A spec change on a full node: judged without its own old self, admitted.
    let env = json!({"env": [{"name": "V", "value": "2"}]});
    n.apply(&web(env.clone(), json!({})));
    let s = n.wait_status("web", "running its new spec", |s| {
        running_ready(s) && container_id(s, "app") != first
    });
    let second = container_id(&s, "app");
    // Labels alone: not judged, nothing made again.
    let creates = n.rt.count("CreateContainer");
    let mut labelled = web(env.clone(), json!({}));
    labelled["metadata"]["labels"] = json!({"tier": "front"});
    n.apply(&labelled);
    n.holds_for(Duration::from_secs(1), "a label change", |n| {
        let s = n.status("web")?;
        (n.rt.count("CreateContainer") != creates || container_id(&s, "app") != second)
            .then(|| format!("the pod was touched: {s}"))
    });
    // hostPID is past the local policy: the pod stops, Failed, with its reason.
    n.apply(&web(env, json!({"hostPID": true})));
    let s = n.wait_status("web", "refused", |s| phase(s) == "Failed");
    assert_eq!(s["reason"], "PodSecurity", "{s}");
    let message = s["message"].as_str().unwrap_or("");
    assert!(message.contains("spec.hostPID"), "{message}");
    n.wait("the pod removed from the runtime", |n| {
        (n.rt.sandboxes().is_empty() && n.rt.containers().is_empty()).then_some(())
    });
    let describe = n.tinylet(&["describe", "pod", &format!("{NS}/web")]);
    assert!(describe.contains("PodSecurity"), "no event: {describe}");
    let runs = n.rt.count("RunPodSandbox");
    n.holds_for(Duration::from_secs(1), "a refused pod", |n| {
        let s = n.status("web")?;
        let made = n.rt.count("RunPodSandbox") != runs || !n.rt.sandboxes().is_empty();
        (made || phase(&s) != "Failed").then(|| format!("it runs again: {s}"))
    });
}
