//! A changed spec is admitted again (issue 37), on this binary's own private containerd
//! with one agent whose `podPolicy.local` is `baseline`: a local pod that runs, applied
//! again with `privileged: true` and `hostPID: true`, is stopped (its containers and
//! sandbox removed, nothing of the new spec ever made), `Failed` with reason
//! `PodSecurity` naming both fields, with an event; applied once more as it was, it runs
//! again. Every wait is "eventually, within a generous deadline".

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::time::Duration;

const START: Duration = Duration::from_secs(60);

/// The pod: a root busybox that sleeps, with `security` as its container's context and
/// `spec` merged into the pod's spec.
fn turned(image: &str, security: Value, spec: Value) -> Value {
    let mut c = sh("app", image, "exec sleep 3600");
    if !security.is_null() {
        c["securityContext"] = security;
    }
    let mut p = pod("turned", json!({"containers": [c]}));
    if let (Some(base), Value::Object(more)) = (p["spec"].as_object_mut(), spec) {
        base.extend(more);
    }
    p
}

#[test]
fn a_local_pod_changed_past_the_policy_is_stopped_and_failed() {
    let n = Node::new(Containerd::shared(), "readmission");
    n.set_config("podPolicy", json!({"local": "baseline"}));
    // A shared test host's full disk must not refuse the pod (DiskPressure) instead.
    n.set_config("evictionHard", json!({"memory.available": "1Mi"}));
    n.start_agent();
    let image = n.image().to_string();
    n.apply(&turned(&image, Value::Null, Value::Null));
    n.wait_running("turned", START);
    let uid = n.uid("turned");
    let cri = n.cri();
    assert!(cri.containers(&uid).iter().any(container_running));

    let privileged = json!({"privileged": true});
    n.apply(&turned(&image, privileged, json!({"hostPID": true})));
    assert_eq!(n.uid("turned"), uid, "the same pod, changed");
    let p = n.wait_pod("turned", "Failed PodSecurity", START, |p| {
        phase(p) == "Failed" && p["status"]["reason"] == "PodSecurity"
    });
    let message = p["status"]["message"].as_str().unwrap_or("");
    for field in ["spec.hostPID", "privileged"] {
        assert!(message.contains(field), "{field} not named: {message}");
    }
    wait_for("the pod's containers and sandbox removed", START, || {
        (cri.containers(&uid).is_empty() && cri.sandboxes(&uid).is_empty()).then_some(())
    });
    let describe = n.tinylet_ok(&["describe", "pod", &format!("{NS}/turned")]);
    assert!(describe.contains("PodSecurity"), "no event: {describe}");
    holds_for(
        "the refused spec never runs",
        Duration::from_secs(3),
        || {
            let running: Vec<_> = cri.containers(&uid);
            let p = n.pod("turned")?;
            (!running.is_empty() || !cri.sandboxes(&uid).is_empty() || phase(&p) != "Failed")
                .then(|| format!("{} containers, phase {}", running.len(), phase(&p)))
        },
    );

    // As it was: admitted afresh, it runs again.
    n.apply(&turned(&image, Value::Null, Value::Null));
    n.wait_running("turned", START);
    n.assert_agent_alive();
}
