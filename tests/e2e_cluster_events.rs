//! End-to-end test of the pod events a tinylet node sends to the cluster: the real
//! control plane of `tests/harness/kube.sh` and a private containerd of the harness. A
//! crash-looping pod gets one BackOff Event whose count grows (not a new object per
//! restart), and `kubectl describe pod` shows it with the container's other events; a
//! volume that cannot be set up is a FailedMount event, an httpGet probe answered with
//! a redirect a ProbeWarning, repeated once a second: past the pod's burst of 25 events
//! the spam filter holds its count on the API server while the probe goes on; a
//! readiness probe that fails every second is one Unhealthy Event whose count grows
//! to the burst the same way.

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

/// The pod's events with `reason` (all of them for ""), as the Events API lists them.
fn events(kube: &Kube, pod: &str, reason: &str) -> Vec<Value> {
    let mut selector = format!("involvedObject.name={pod}");
    if !reason.is_empty() {
        selector.push_str(&format!(",reason={reason}"));
    }
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

fn count(e: &Value) -> u64 {
    e["count"].as_u64().unwrap_or(0)
}

/// The spam filter's burst of events per pod (client-go's).
const BURST: u64 = 25;

/// The counts of all the pod's events added up: the tokens it spent.
fn total(kube: &Kube, pod: &str) -> u64 {
    events(kube, pod, "").iter().map(count).sum()
}

/// The control plane, a containerd and a node named `node` joined to them, running.
fn cluster(node: &str) -> (Kube, Containerd, Node) {
    let kube = Kube::start();
    let c = Containerd::start();
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}).to_string(),
    );
    let n = Node::joining(&c, &kube.node_identity(node));
    n.start_agent();
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}).to_string(),
    );
    kube.wait_namespace(NS);
    (kube, c, n)
}

/// A pod on `node` with one container `app`, fields of `container` merged in.
fn pod(node: &str, name: &str, image: &str, container: Value, volumes: Value) -> Value {
    let mut c = json!({"name": "app", "image": image, "imagePullPolicy": "IfNotPresent"});
    for (k, v) in container.as_object().cloned().unwrap_or_default() {
        c[k] = v;
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeName": node,
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 2,
            "tolerations": [{"operator": "Exists"}],
            "containers": [c],
            "volumes": volumes,
        },
    })
}

#[test]
fn crash_looping_pod_has_one_backoff_event_with_a_growing_count() {
    let (kube, c, n) = cluster(NODE);
    let command = json!({"command": ["sh", "-c", "sleep 1; exit 3"]});
    let pod = pod(NODE, "crash", c.test_image(), command, json!([]));
    kube.apply(&pod.to_string());

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

    // The image was on the node: kubelet's Pulled without a pull, once per start.
    let pulled = events(&kube, "crash", "Pulled");
    assert_eq!(pulled.len(), 1, "{pulled:#?}");
    let present = format!(
        "Container image \"{}\" already present on machine",
        c.test_image()
    );
    assert_eq!(pulled[0]["message"], present.as_str());
    assert!(count(&pulled[0]) >= 2, "{pulled:#?}");
    // However often it restarts, the pod has one Event object per kind of event.
    let all = events(&kube, "crash", "");
    let mut kinds: Vec<_> = all
        .iter()
        .map(|e| format!("{} {}", e["reason"], e["message"]))
        .collect();
    kinds.sort();
    let n_objects = kinds.len();
    kinds.dedup();
    assert_eq!(
        kinds.len(),
        n_objects,
        "an Event object per restart: {all:#?}"
    );
    assert!(n_objects <= 6, "{kinds:#?}");
    n.assert_agent_alive();
}

#[test]
fn failed_mount_and_probe_warnings_held_by_the_spam_filter() {
    let node = "tl-events-2";
    let (kube, c, n) = cluster(node);
    let volumes = json!([{"name": "cfg", "configMap": {"name": "missing"}}]);
    let mount = json!({"command": ["sleep", "3600"],
                       "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]});
    kube.apply(&pod(node, "nomount", c.test_image(), mount, volumes).to_string());
    // A CGI that counts its hits and answers with a redirect to another host.
    let script = "mkdir -p /www/cgi-bin && \
        printf '#!/bin/sh\\necho hit >> /tmp/hits\\nprintf \"HTTP/1.1 302 Found\\\\r\\\\nLocation: http://elsewhere.invalid/\\\\r\\\\nContent-Length: 0\\\\r\\\\n\\\\r\\\\n\"\\n' \
        > /www/cgi-bin/go && chmod +x /www/cgi-bin/go && exec httpd -f -p 8080 -h /www";
    let web = json!({
        "command": ["sh", "-c", script],
        "readinessProbe": {"httpGet": {"path": "/cgi-bin/go", "port": 8080},
                           "periodSeconds": 1, "timeoutSeconds": 5},
    });
    kube.apply(&pod(node, "redirect", c.test_image(), web, json!([])).to_string());
    // A readiness probe that fails every second, always with the same output.
    let sick = json!({
        "command": ["sleep", "3600"],
        "readinessProbe": {"exec": {"command": ["sh", "-c", "echo not ready; exit 1"]},
                           "periodSeconds": 1},
    });
    kube.apply(&pod(node, "notready", c.test_image(), sick, json!([])).to_string());

    let failed = wait_for("a FailedMount event", START, || {
        events(&kube, "nomount", "FailedMount").into_iter().next()
    });
    assert_eq!(failed["type"], "Warning");
    assert_eq!(
        failed["message"],
        "MountVolume.SetUp failed for volume \"cfg\" : configmap \"missing\" not found"
    );

    // A redirect is success (the pod gets ready) with a warning at every attempt.
    let warning = wait_for("a ProbeWarning event", START, || {
        events(&kube, "redirect", "ProbeWarning").into_iter().next()
    });
    assert_eq!(warning["type"], "Warning");
    assert_eq!(
        warning["involvedObject"]["fieldPath"],
        "spec.containers{app}"
    );
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Readiness probe warning: Probe terminated redirects"),
        "{message}"
    );
    let ready = || {
        let out = kube.kubectl_ok(&["get", "pod", "redirect", "-n", NS, "-o", "json"]);
        let p: Value = serde_json::from_str(&out).unwrap();
        p["status"]["containerStatuses"][0]["ready"] == true
    };
    wait_for("the redirected pod to be ready", START, || {
        ready().then_some(())
    });
    // The pod's 25 tokens: Pulled, Created, Started, an Unhealthy event for each attempt
    // before httpd listened (every failed attempt is one, as kubelet's), then warnings;
    // the rest wait (5 minutes per token) while the probe goes on every second.
    let warned = wait_for("the pod's events to reach the burst", START, || {
        let total = total(&kube, "redirect");
        assert!(total <= BURST, "past the burst: {total}");
        let evs = events(&kube, "redirect", "ProbeWarning");
        assert_eq!(evs.len(), 1, "{evs:#?}");
        (total == BURST).then(|| count(&evs[0]))
    });
    let target = format!("{NS}/redirect");
    let hits = || {
        let out = n.tinylet_ok(&["exec", &target, "-c", "app", "--", "cat", "/tmp/hits"]);
        out.lines().count() as u64
    };
    wait_for("ten probes past the burst", START, || {
        (hits() >= warned + 10).then_some(())
    });
    let evs = events(&kube, "redirect", "ProbeWarning");
    assert_eq!(count(&evs[0]), warned, "held by the spam filter: {evs:#?}");
    assert_eq!(total(&kube, "redirect"), BURST);

    // A readiness probe failing every second: an Unhealthy event per attempt, one Event
    // object whose count grows to the burst (after Pulled, Created, Started) and is held.
    let mut last = 0;
    wait_for("the Unhealthy count to reach the burst", START, || {
        let evs = events(&kube, "notready", "Unhealthy");
        assert!(evs.len() <= 1, "one Unhealthy event: {evs:#?}");
        let e = evs.first()?;
        assert_eq!(e["type"], "Warning");
        assert_eq!(e["message"], "Readiness probe failed: not ready");
        assert_eq!(e["involvedObject"]["fieldPath"], "spec.containers{app}");
        let n = count(e);
        assert!(n >= last && n <= BURST - 3, "{evs:#?}");
        last = n;
        (n == BURST - 3).then_some(())
    });
    // Held there while the probe goes on failing (it has run as long as the redirect
    // pod's, which went ten attempts past its burst above).
    assert_eq!(total(&kube, "notready"), BURST);
    let unhealthy = events(&kube, "notready", "Unhealthy");
    assert_eq!(unhealthy.len(), 1, "{unhealthy:#?}");
    assert_eq!(count(&unhealthy[0]), BURST - 3, "held: {unhealthy:#?}");
    n.assert_agent_alive();
}
