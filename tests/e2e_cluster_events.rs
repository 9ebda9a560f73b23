//! End-to-end test of the pod events a tinylet node sends to the cluster: the real
//! control plane of `tests/harness/kube.sh` and a private containerd of the harness. A
//! crash-looping pod gets one BackOff Event whose count grows (not a new object per
//! restart), and `kubectl describe pod` shows it with the container's other events.

mod agent_support;
mod common;

use agent_support::{wait_for, Node};
use common::kube::Kube;
use common::Containerd;
use serde_json::{json, Value};
use std::time::Duration;

const NODE: &str = "tl-events";
const NS: &str = "events";
const START: Duration = Duration::from_secs(90);

/// The pod's events with `reason`, as the Events API lists them.
fn events(kube: &Kube, pod: &str, reason: &str) -> Vec<Value> {
    let selector = format!("involvedObject.name={pod},reason={reason}");
    let out = kube.kubectl_ok(&[
        "get",
        "events",
        "-n",
        NS,
        "--field-selector",
        &selector,
        "-o",
        "json",
    ]);
    let list: Value = serde_json::from_str(&out).unwrap();
    list["items"].as_array().cloned().unwrap_or_default()
}

#[test]
fn crash_looping_pod_has_one_backoff_event_with_a_growing_count() {
    let kube = Kube::start();
    let c = Containerd::start();
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}).to_string(),
    );
    let n = Node::joining(&c, &kube.node_identity(NODE));
    n.start_agent();
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}).to_string(),
    );
    kube.wait_namespace(NS);
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "crash", "namespace": NS},
        "spec": {
            "nodeName": NODE,
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 2,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "app", "image": c.test_image(),
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["sh", "-c", "sleep 1; exit 3"]}],
        },
    });
    kube.apply(&pod.to_string());

    let count = |e: &Value| e["count"].as_u64().unwrap_or(0);
    let first = wait_for("a BackOff event", START, || {
        let evs = events(&kube, "crash", "BackOff");
        assert!(evs.len() <= 1, "more than one BackOff event: {evs:#?}");
        evs.first().map(count).filter(|n| *n >= 1)
    });
    let grown = wait_for("the BackOff event's count to grow", START, || {
        let evs = events(&kube, "crash", "BackOff");
        assert_eq!(evs.len(), 1, "one BackOff event: {evs:#?}");
        let e = &evs[0];
        assert_eq!(e["type"], "Warning");
        assert_eq!(e["involvedObject"]["fieldPath"], "spec.containers{app}");
        assert_eq!(e["source"]["component"], "kubelet");
        Some(count(e)).filter(|n| *n > first)
    });
    assert!(grown > first);
    let started = events(&kube, "crash", "Started");
    assert_eq!(started.len(), 1, "{started:#?}");
    assert!(count(&started[0]) >= 2, "{started:#?}");

    let described = kube.kubectl_ok(&["describe", "pod", "crash", "-n", NS]);
    assert!(
        described.contains("Back-off restarting failed container app"),
        "{described}"
    );
    assert!(described.contains("Started"), "{described}");
    n.assert_agent_alive();
}
