//! The node follows its own Node's labels, on the real control plane of
//! `tests/harness/kube.sh` and a private containerd (issue 37 items 0 and 3):
//! - an admin's `kubectl label node` counts for the next pod within seconds; a pod
//!   refused before the label stays `Failed` (kubelet never revives a failed pod: its
//!   controller makes a new one, which the new label admits); a local pod refused
//!   for its placement is judged again and runs;
//! - the labels are kept on flash, so an agent restarted without the API server keeps
//!   the pod the label placed running (never `Failed NodeAffinity`);
//! - placement is ignored during execution: a label removed while the pod runs, then an
//!   agent restart, leaves the pod running.

mod agent_support;
mod cluster_support;
mod common;

use agent_support::{sandbox_ready, wait_for, Node};
use cluster_support::*;
use common::kube::Kube;
use common::Containerd;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A busybox pod of `node` in `ns` that sleeps, placed by the label `site: hall-3`.
fn hall3_pod(c: &Containerd, node: &str, ns: &str, name: &str) -> Value {
    let main = json!({"name": "main", "image": c.test_image(), "imagePullPolicy": "IfNotPresent",
                      "command": ["sh", "-c", "exec sleep 3600"]});
    kpod(
        node,
        ns,
        name,
        json!({"containers": [main], "nodeSelector": {"site": "hall-3"}}),
    )
}

/// The node's copy of its labels on flash, when there is one.
fn kept_labels(n: &Node, node: &str) -> Option<Value> {
    let path = n.dir.join(format!("state/cluster/node/{node}_labels.json"));
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Waits until the node's copy of its labels says `site` is `value` (`None`: absent),
/// i.e. the agent has seen the change from its watch.
fn wait_site(n: &Node, node: &str, value: Option<&str>) {
    wait_for("the node's labels on flash", START, || {
        let kept = kept_labels(n, node)?;
        (kept["labels"]["site"].as_str() == value).then_some(())
    });
}

/// The pod's phase as the node itself has it (`tinylet get`).
fn local_phase(n: &Node, ns: &str, name: &str) -> String {
    local_view(n, ns, name)
        .map(|p| {
            p["status"]["phase"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_default()
}

/// The uid's pod has a ready sandbox on the runtime.
fn runs(n: &Node, uid: &str) -> bool {
    n.cri().sandboxes(uid).iter().any(sandbox_ready)
}

#[test]
fn a_label_set_on_the_node_admits_the_next_pod() {
    const NODE: &str = "tl-relabel";
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = join(kube, &c, NODE);
    n.start_agent();
    let ns = "relabel";
    namespace(kube, ns);

    kube.apply(&hall3_pod(&c, NODE, ns, "early").to_string());
    let early = wait_api(kube, &n, ns, "early", "Failed (NodeAffinity)", START, |p| {
        p["status"]["phase"] == "Failed" && p["status"]["reason"] == "NodeAffinity"
    });
    let early_uid = early["metadata"]["uid"].as_str().unwrap().to_string();

    // A local pod (the owner's) placed the same way: no controller makes it anew, so
    // the node judges it again when its labels change.
    let local = agent_support::pod(
        "local-hall3",
        json!({"containers": [agent_support::sh("main", n.image(), "exec sleep 3600")],
               "nodeSelector": {"site": "hall-3"}}),
    );
    n.apply(&local);
    n.wait_pod("local-hall3", "refused", START, |p| {
        p["status"]["reason"] == "NodeAffinity"
    });

    kube.kubectl_ok(&["label", "node", NODE, "site=hall-3"]);
    let labelled = Instant::now();
    wait_site(&n, NODE, Some("hall-3"));
    let seen = labelled.elapsed();
    kube.apply(&hall3_pod(&c, NODE, ns, "late").to_string());
    wait_api(kube, &n, ns, "late", "running", START, running_ready);
    assert!(
        seen < Duration::from_secs(10),
        "the label reached the node {seen:?} after it was set"
    );

    // As kubelet: the pod refused before is not revived; its controller's next pod runs.
    n.wait_running("local-hall3", START);
    let early = api_pod(kube, ns, "early").unwrap();
    assert_eq!(early["status"]["phase"], "Failed", "{}", early["status"]);
    assert!(n.cri().sandboxes(&early_uid).is_empty());
}

#[test]
fn an_offline_restart_keeps_the_pods_a_label_placed() {
    const NODE: &str = "tl-label-restart";
    let kube = Kube::shared();
    let c = Containerd::start();
    let relay = kube.relay();
    register(kube, NODE);
    kube.kubectl_ok(&["label", "node", NODE, "site=hall-3"]);
    let n = Node::joining(&c, &relay.node_identity(NODE));
    n.serve_status();
    n.start_agent();
    let ns = "label-restart";
    namespace(kube, ns);
    wait_site(&n, NODE, Some("hall-3"));
    kube.apply(&hall3_pod(&c, NODE, ns, "placed").to_string());
    let p = wait_api(kube, &n, ns, "placed", "running", START, running_ready);
    let uid = p["metadata"]["uid"].as_str().unwrap().to_string();

    // Offline restart: the API unreachable, the agent judges by the labels it kept.
    relay.cut();
    n.kill_agent();
    n.start_agent();
    n.wait_relists(3);
    assert_eq!(local_phase(&n, ns, "placed"), "Running");
    assert!(runs(&n, &uid), "the pod keeps running");
    let log = std::fs::read_to_string(n.agent_log_path()).unwrap();
    assert!(!log.contains("refused by the node"), "{log}");
    // Judged by the labels kept on flash, not only spared as a running pod.
    assert!(!log.contains("labels no longer match"), "{log}");
    relay.restore();
    wait_api(kube, &n, ns, "placed", "running", START, running_ready);

    // Ignored during execution: the label removed, the pod stays, also across a restart.
    kube.kubectl_ok(&["label", "node", NODE, "site-"]);
    wait_site(&n, NODE, None);
    n.kill_agent();
    n.start_agent();
    n.wait_relists(3);
    assert_eq!(local_phase(&n, ns, "placed"), "Running");
    assert!(runs(&n, &uid), "the pod keeps running");
    let log = std::fs::read_to_string(n.agent_log_path()).unwrap();
    assert!(log.contains("labels no longer match"), "{log}");
    let p = api_pod(kube, ns, "placed").unwrap();
    assert_ne!(p["status"]["phase"], "Failed", "{}", p["status"]);
    // A new pod is judged by the labels as they are now.
    kube.apply(&hall3_pod(&c, NODE, ns, "new").to_string());
    wait_api(kube, &n, ns, "new", "Failed (NodeAffinity)", START, |p| {
        p["status"]["phase"] == "Failed" && p["status"]["reason"] == "NodeAffinity"
    });
}
