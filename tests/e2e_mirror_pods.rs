//! End-to-end tests of mirror pods: the local pods of a tinylet node (`tinylet apply`,
//! firmware manifest directories) shown in the cluster as kubelet shows its static pods,
//! on the real control plane of `tests/harness/kube.sh` (v1.20.2, Node authorizer and
//! NodeRestriction on) and the real containerd of the harness. What the cluster sees is
//! read with kubectl, what the device does with `tinylet get` and the CRI.
//!
//! One agent on the shared containerd serves the tests of local pods (each with pods of
//! its own names); the firmware test has a node and containerd of its own (its config
//! differs, and it restarts its agent).

mod agent_support;
mod common;

use agent_support::{
    container_id, cstatus, holds_for, is_running_ready, pod, restarts, sh, wait_for, Node, NS,
};
use common::kube::Kube;
use common::Containerd;
use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The cluster Node name of the shared agent.
const NODE: &str = "tl-mirror";
const START: Duration = Duration::from_secs(60);
const MIRROR: &str = "kubernetes.io/config.mirror";

/// The shared agent, joined to the shared control plane as [`NODE`], with namespace
/// [`NS`] made in the cluster.
fn node() -> &'static Node {
    static N: OnceLock<&'static Node> = OnceLock::new();
    N.get_or_init(|| {
        agent_support::node_for_the_process(|| {
            let kube = Kube::shared();
            namespace(kube, NS);
            let n = join(kube, Containerd::shared(), NODE);
            n.start_agent();
            n
        })
    })
}

/// A node on `c` configured to join `kube` as `name`, its Node object made (as the
/// node's registration would); the agent is not started.
fn join(kube: &Kube, c: &Containerd, name: &str) -> Node {
    let id = kube.node_identity(name);
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}).to_string(),
    );
    Node::joining(c, &id)
}

fn namespace(kube: &Kube, ns: &str) {
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}).to_string(),
    );
    kube.wait_namespace(ns);
}

/// The Node's uid in the API.
fn node_uid(kube: &Kube, name: &str) -> String {
    kube.kubectl_ok(&["get", "node", name, "-o", "jsonpath={.metadata.uid}"])
}

/// The pod as the API shows it, `None` when it does not exist.
fn api_pod(kube: &Kube, name: &str) -> Option<Value> {
    let out = kube.kubectl(&["get", "pod", name, "-n", NS, "-o", "json"]);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("NotFound"),
            "kubectl get pod {NS}/{name}: {err}"
        );
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// Polls the API's pod `name` until `pred` holds; returns it.
fn wait_api(kube: &Kube, n: &Node, name: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + START;
    let mut last = Value::Null;
    loop {
        if let Some(p) = api_pod(kube, name) {
            if pred(&p) {
                return p;
            }
            last = p;
        }
        assert!(
            Instant::now() < deadline,
            "pod {NS}/{name} in the API: not {what} within {START:?}; last seen:\n{}\n\
             agent log:\n{}",
            serde_json::to_string_pretty(&last).unwrap_or_default(),
            n.agent_log_tail()
        );
        n.assert_agent_alive();
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn uid(p: &Value) -> String {
    p["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn hash(p: &Value) -> String {
    p["metadata"]["annotations"][MIRROR]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn kill_container(c: &Containerd, id: &str) {
    c.ctr_ok(&["-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id]);
}

fn log(n: &Node) -> String {
    std::fs::read_to_string(n.agent_log_path()).unwrap_or_default()
}

#[test]
fn a_local_pod_is_mirrored_with_its_status_and_kept_in_step() {
    let (kube, n) = (Kube::shared(), node());
    let mirror = format!("web-{NODE}");
    n.apply(&pod(
        "web",
        json!({"containers": [sh("main", n.image(), "exec sleep 3600")]}),
    ));
    let applied = Instant::now();
    let p = wait_api(kube, n, &mirror, "Running and Ready", is_running_ready);
    eprintln!(
        "tinylet apply -> mirror pod Running in the API: {:?}",
        applied.elapsed()
    );
    let local = n.wait_running("web", START);

    // kubelet's marks of a mirror pod.
    let a = &p["metadata"]["annotations"];
    let h = hash(&p);
    assert_eq!(h.len(), 32, "{a}");
    assert_eq!(a["kubernetes.io/config.hash"], h.as_str());
    assert_eq!(a["kubernetes.io/config.source"], "file");
    assert_eq!(
        p["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Node", "name": NODE,
                "uid": node_uid(kube, NODE), "controller": true}])
    );
    assert_eq!(p["spec"]["nodeName"], NODE);
    // The local pod's status.
    for field in ["podIP", "hostIP", "qosClass"] {
        assert_eq!(p["status"][field], local["status"][field], "{field}");
    }
    assert_eq!(
        cstatus(&p, "main")["containerID"],
        cstatus(&local, "main")["containerID"]
    );
    assert_eq!(restarts(&p, "main"), 0);

    // Never run, never counted twice.
    assert!(n.cri().sandboxes(&uid(&p)).is_empty());
    let rows = n.tinylet_ok(&["get", "pods", "-n", NS]);
    assert_eq!(
        rows.lines().filter(|l| l.starts_with("web ")).count(),
        1,
        "{rows}"
    );
    assert!(!rows.contains(&mirror), "{rows}");
    let cached = n.dir.join(format!("state/cluster/pods/{NS}_{mirror}.json"));
    assert!(!cached.exists());

    // A restart on the device shows in the API.
    let killed = Instant::now();
    kill_container(Containerd::shared(), &container_id(&local, "main"));
    wait_api(kube, n, &mirror, "restarted once", |p| {
        restarts(p, "main") == 1 && is_running_ready(p)
    });
    eprintln!(
        "container killed -> restartCount 1 on the mirror: {:?}",
        killed.elapsed()
    );

    // A changed local pod: its mirror is made again, with the new spec.
    let mut main = sh("main", n.image(), "exec sleep 3600");
    main["env"] = json!([{"name": "VERSION", "value": "2"}]);
    n.apply(&pod("web", json!({"containers": [main]})));
    let old = uid(&p);
    let p = wait_api(kube, n, &mirror, "made again for the new spec", |q| {
        uid(q) != old && hash(q) != h && is_running_ready(q)
    });
    assert_eq!(
        p["spec"]["containers"][0]["env"],
        json!([{"name": "VERSION", "value": "2"}])
    );
    assert!(api_pod(kube, &mirror).is_some_and(|q| uid(&q) == uid(&p)));

    // kubectl delete of the mirror: made again, the pod on the device untouched.
    let local = n.wait_running("web", START);
    let (container, restarted) = (container_id(&local, "main"), restarts(&local, "main"));
    let old = uid(&p);
    kube.kubectl_ok(&["delete", "pod", &mirror, "-n", NS, "--wait=false"]);
    let deleted = Instant::now();
    let p = wait_api(kube, n, &mirror, "made again after kubectl delete", |q| {
        uid(q) != old && q["metadata"]["deletionTimestamp"].is_null() && is_running_ready(q)
    });
    eprintln!(
        "kubectl delete of the mirror -> back Running: {:?}",
        deleted.elapsed()
    );
    assert_eq!(restarts(&p, "main"), restarted);
    let local = n.wait_running("web", START);
    assert_eq!(
        container_id(&local, "main"),
        container,
        "the container was restarted"
    );
    assert_eq!(restarts(&local, "main"), restarted);

    // tinylet delete: the mirror goes too.
    n.delete_pod("web");
    wait_for("the mirror pod is gone from the API", START, || {
        api_pod(kube, &mirror).is_none().then_some(())
    });
}

#[test]
fn a_local_pod_with_a_configmap_volume_gets_no_mirror_and_one_warning() {
    let (kube, n) = (Kube::shared(), node());
    n.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "mcfg", "namespace": NS}, "data": {"k": "v"}}));
    let mut main = sh("main", n.image(), "exec sleep 3600");
    main["volumeMounts"] = json!([{"name": "cfg", "mountPath": "/cfg"}]);
    n.apply(&pod(
        "withcm",
        json!({"containers": [main],
               "volumes": [{"name": "cfg", "configMap": {"name": "mcfg"}}]}),
    ));
    let local = n.wait_running("withcm", START);
    let said = format!("local pod {NS}/withcm is not shown in the cluster (no mirror pod)");
    let line = wait_for("the warning", START, || {
        log(n)
            .lines()
            .find(|l| l.contains(&said))
            .map(str::to_string)
    });
    assert!(
        line.contains("WARN") && line.contains("configmap e2e/mcfg"),
        "{line}"
    );

    // Status changes (a restart) try nothing again and say nothing again.
    kill_container(Containerd::shared(), &container_id(&local, "main"));
    n.wait_pod("withcm", "restarted", START, |p| {
        restarts(p, "main") == 1 && is_running_ready(p)
    });
    let mirror = format!("withcm-{NODE}");
    holds_for("no mirror pod", Duration::from_secs(3), || {
        api_pod(kube, &mirror).map(|p| format!("{}", p["metadata"]))
    });
    assert_eq!(log(n).matches(&said).count(), 1, "{}", n.agent_log_tail());
    n.assert_agent_alive();

    // The node mirrors what it can.
    n.apply(&pod(
        "nocm",
        json!({"containers": [sh("main", n.image(), "exec sleep 3600")]}),
    ));
    wait_api(
        kube,
        n,
        &format!("nocm-{NODE}"),
        "Running",
        is_running_ready,
    );
    n.delete_pod("withcm");
    n.delete_pod("nocm");
}

/// A firmware manifest's pod is mirrored too; mirror pods of this node that stand for
/// no local pod (left from an earlier run) are deleted and never run; an agent restart
/// leaves the mirror as it is.
#[test]
fn firmware_pods_are_mirrored_orphans_deleted_and_a_restart_changes_nothing() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let name = "tl-fw";
    let n = join(kube, &c, name);
    namespace(kube, NS);
    let fw = n.dir.join("firmware");
    std::fs::create_dir_all(&fw).unwrap();
    let fw_pod = pod(
        "fw",
        json!({"containers": [sh("main", n.image(), "exec sleep 3600")]}),
    );
    std::fs::write(fw.join("fw.json"), fw_pod.to_string()).unwrap();
    n.set_config("manifestDirs", json!([fw]));
    // Two mirror pods of this node with no local pod: one named as mirrors are, one not.
    let image = n.image().to_string();
    let mut orphans = Vec::new();
    for orphan in [format!("gone-{name}"), "stray".to_string()] {
        kube.apply(
            &json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": orphan, "namespace": NS, "annotations": {MIRROR: "0"}},
                "spec": {"nodeName": name,
                         "containers": [{"name": "main", "image": image,
                                         "command": ["sleep", "3600"]}]}})
            .to_string(),
        );
        orphans.push((orphan.clone(), uid(&api_pod(kube, &orphan).unwrap())));
    }
    n.start_agent();
    let mirror = format!("fw-{name}");
    let p = wait_api(kube, &n, &mirror, "Running and Ready", is_running_ready);
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/config.source"],
        "file"
    );
    let local = n.wait_running("fw", START);
    assert_eq!(
        cstatus(&p, "main")["containerID"],
        cstatus(&local, "main")["containerID"]
    );
    for (orphan, orphan_uid) in &orphans {
        wait_for("the orphan mirror pod is deleted", START, || {
            api_pod(kube, orphan).is_none().then_some(())
        });
        assert!(n.cri().sandboxes(orphan_uid).is_empty(), "{orphan} was run");
        let file = n.dir.join(format!("state/cluster/pods/{NS}_{orphan}.json"));
        assert!(!file.exists(), "{orphan} was cached");
    }

    // An agent restart: the same hash, so the same mirror pod (status sent again).
    let sent = format!("{NS}/{mirror}: status (mirror pod) sent");
    let before = log(&n).matches(&sent).count();
    n.kill_agent();
    n.start_agent();
    wait_for("the status sent again after the restart", START, || {
        (log(&n).matches(&sent).count() > before).then_some(())
    });
    let again = api_pod(kube, &mirror).expect("the mirror pod");
    assert_eq!(uid(&again), uid(&p), "the mirror pod was made again");
    assert!(is_running_ready(&again));
    assert!(
        !log(&n).contains(&format!("mirror pod {NS}/{mirror} deleted")),
        "{}",
        n.agent_log_tail()
    );
    n.kill_agent();
}

/// The uplink cut (the harness's relay): local pods change on the device meanwhile (a
/// restart, a pod applied, a pod deleted); the relay restored, the mirrors catch up.
#[test]
fn mirrors_catch_up_after_the_uplink_was_cut() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let relay = kube.relay();
    let name = "tl-mcut";
    namespace(kube, NS);
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}).to_string(),
    );
    let n = Node::joining(&c, &relay.node_identity(name));
    n.start_agent();
    let spec = || json!({"containers": [sh("main", n.image(), "exec sleep 3600")]});
    n.apply(&pod("keep", spec()));
    n.apply(&pod("drop", spec()));
    let (keep, drop, late) = (
        format!("keep-{name}"),
        format!("drop-{name}"),
        format!("late-{name}"),
    );
    let kept = wait_api(kube, &n, &keep, "Running", is_running_ready);
    let dropped = wait_api(kube, &n, &drop, "Running", is_running_ready);

    relay.cut();
    let local = n.wait_running("keep", START);
    kill_container(&c, &container_id(&local, "main"));
    n.wait_pod("keep", "restarted", START, |p| {
        restarts(p, "main") == 1 && is_running_ready(p)
    });
    n.delete_pod("drop");
    n.apply(&pod("late", spec()));
    n.wait_running("late", START);
    holds_for(
        "the API hears nothing without the uplink",
        Duration::from_secs(2),
        || {
            let k = api_pod(kube, &keep)?;
            (restarts(&k, "main") != 0 || api_pod(kube, &late).is_some())
                .then(|| "the API changed with the uplink cut".to_string())
        },
    );
    assert!(api_pod(kube, &drop).is_some_and(|p| uid(&p) == uid(&dropped)));

    relay.restore();
    let back = Instant::now();
    let shown = wait_api(kube, &n, &keep, "showing the restart", |p| {
        restarts(p, "main") == 1 && is_running_ready(p)
    });
    assert_eq!(
        uid(&shown),
        uid(&kept),
        "a restart is status: the mirror stays"
    );
    wait_api(kube, &n, &late, "Running", is_running_ready);
    wait_for("the deleted pod's mirror is gone", START, || {
        api_pod(kube, &drop).is_none().then_some(())
    });
    eprintln!("uplink back: mirrors current after {:?}", back.elapsed());
    n.kill_agent();
}
