//! `get pods` after `delete` on a real containerd: the pod is listed as `Terminating`
//! while its containers are still being stopped (a container that ignores SIGTERM holds
//! it for the grace period), and `get pod -o json` shows its deletionTimestamp, until
//! the runtime holds nothing of it. Also: the agent's log lines start with an RFC 3339
//! UTC time with milliseconds.

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::json;
use std::time::Duration;

/// The row of pod `name` in `get pods` (or `-o wide`), split into columns.
fn row(n: &Node, name: &str, wide: bool) -> Option<Vec<String>> {
    let mut args = vec!["get", "pods", "-n", NS];
    if wide {
        args.extend(["-o", "wide"]);
    }
    let out = n.tinylet(&args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .find(|cols| cols.first().map(String::as_str) == Some(name))
}

#[test]
fn deleted_pod_is_terminating_until_its_containers_are_gone() {
    let n = Node::new(Containerd::shared(), "terminating");
    n.start_agent();
    let stubborn = sh(
        "stubborn",
        n.image(),
        "trap '' TERM; while true; do sleep 0.2; done",
    );
    n.apply(&pod(
        "ending",
        json!({"terminationGracePeriodSeconds": 5, "containers": [stubborn]}),
    ));
    n.wait_running("ending", Duration::from_secs(40));
    let uid = n.uid("ending");
    let running = row(&n, "ending", true).expect("listed while running");
    assert_eq!(running[2], "Running", "{running:?}");
    // NODE: the name the agent uses (a local pod has no spec.nodeName).
    let node = n.tinylet_ok(&["get", "node", "-o", "json"]);
    let node: serde_json::Value = serde_json::from_str(&node).unwrap();
    assert_eq!(running[6], node["name"].as_str().unwrap(), "{running:?}");

    let cri = n.cri();
    n.delete_pod("ending");
    // The container ignores TERM: it runs for the 5 s grace period, and meanwhile the
    // pod is listed as Terminating.
    let seen = row(&n, "ending", false).expect("listed right after delete");
    assert_eq!(seen[2], "Terminating", "{seen:?}");
    assert!(!cri.containers(&uid).is_empty(), "containers already gone");
    // `get pod -o json` shows it as kubectl shows a pod being deleted, spec included:
    // the agent records the deletion (deletionTimestamp: the end of the grace period)
    // as it begins stopping the pod.
    let name = format!("{NS}/ending");
    let v = wait_for(
        "deletionTimestamp in get pod -o json",
        Duration::from_secs(10),
        || {
            let out = n.tinylet(&["get", "pod", &name, "-o", "json"]);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
            (!v["metadata"]["deletionTimestamp"].is_null()).then_some(v)
        },
    );
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 5, "{v}");
    assert_eq!(v["metadata"]["uid"], uid.as_str(), "{v}");
    assert_eq!(v["spec"]["containers"][0]["name"], "stubborn", "{v}");
    assert!(!cri.containers(&uid).is_empty(), "containers already gone");
    wait_for("the pod leaves get pods", Duration::from_secs(40), || {
        row(&n, "ending", false).is_none().then_some(())
    });
    assert!(
        cri.containers(&uid).is_empty() && cri.sandboxes(&uid).is_empty(),
        "get pods dropped the pod while the runtime still holds it"
    );
    let gone = n.tinylet(&["get", "pod", &name, "-o", "json"]);
    assert_eq!(gone.status.code(), Some(3), "{gone:?}");

    let log = std::fs::read_to_string(n.agent_log_path()).unwrap();
    let first = log.lines().next().expect("the agent logged");
    let ts = first.strip_prefix('[').and_then(|l| l.split(' ').next());
    let ts = ts.unwrap_or_else(|| panic!("no timestamp: {first}"));
    // 2026-12-01T23:59:59.123Z
    assert_eq!(ts.len(), 24, "{first}");
    assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.', "{first}");
    assert!(tinylet::model::time::parse_rfc3339(ts).is_ok(), "{first}");
}
