//! What the cluster pod tests share: a node joined to the shared control plane, pods
//! made with kubectl (`spec.nodeName` set, so no scheduler is involved), the API's view
//! of them and the node's own (`tinylet get`/`exec`, the state directory).
#![allow(dead_code)]

pub use crate::agent_support::condition;
use crate::agent_support::Node;
use crate::common::kube::Kube;
use crate::common::Containerd;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a pod may take to start.
pub const START: Duration = Duration::from_secs(60);

/// A node on `c` configured to join `kube` as `name` (its Node object made, as the
/// node's registration would); the agent is not started.
pub fn join(kube: &Kube, c: &Containerd, name: &str) -> Node {
    register(kube, name);
    Node::joining(c, &kube.node_identity(name))
}

/// Makes the Node object `name` (pods bound to a node that does not exist are removed
/// by the pod GC).
pub fn register(kube: &Kube, name: &str) {
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}).to_string(),
    );
}

/// A fresh namespace, ready for pods.
pub fn namespace(kube: &Kube, ns: &str) {
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}).to_string(),
    );
    kube.wait_namespace(ns);
}

/// A pod manifest bound to `node` (see the module doc for the fields every test pod has).
pub fn kpod(node: &str, ns: &str, name: &str, spec: Value) -> Value {
    let mut full = json!({
        "nodeName": node,
        "automountServiceAccountToken": false,
        "terminationGracePeriodSeconds": 2,
        "tolerations": [{"operator": "Exists"}],
    });
    if let (Some(base), Value::Object(extra)) = (full.as_object_mut(), spec) {
        base.extend(extra);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
           "spec": full})
}

/// A busybox container running `sh -c SCRIPT`.
pub fn sh(name: &str, script: &str) -> Value {
    let image = Containerd::shared().test_image();
    json!({"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
           "command": ["sh", "-c", script]})
}

/// The pod as the API shows it, `None` when it does not exist.
pub fn api_pod(kube: &Kube, ns: &str, name: &str) -> Option<Value> {
    let out = kube.kubectl(&["get", "pod", name, "-n", ns, "-o", "json"]);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("NotFound"),
            "kubectl get pod {ns}/{name}: {err}"
        );
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// Polls the API's pod until `pred` holds; returns it.
pub fn wait_api(
    kube: &Kube,
    n: &Node,
    ns: &str,
    name: &str,
    what: &str,
    timeout: Duration,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + timeout;
    let mut last = Value::Null;
    loop {
        if let Some(p) = api_pod(kube, ns, name) {
            if pred(&p) {
                return p;
            }
            last = p;
        }
        assert!(
            Instant::now() < deadline,
            "pod {ns}/{name} in the API: not {what} within {timeout:?}; last status:\n{}\n\
             agent log:\n{}",
            serde_json::to_string_pretty(&last["status"]).unwrap_or_default(),
            n.agent_log_tail()
        );
        n.assert_agent_alive();
        std::thread::sleep(Duration::from_millis(250));
    }
}

pub fn running_ready(p: &Value) -> bool {
    p["status"]["phase"] == "Running"
        && condition(p, "Ready") == "True"
        && p["status"]["containerStatuses"]
            .as_array()
            .is_some_and(|cs| cs.iter().all(|c| c["state"]["running"].is_object()))
}

/// `tinylet get pod NS/NAME -o json` on the node; `None` when it does not know it.
pub fn local_view(n: &Node, ns: &str, name: &str) -> Option<Value> {
    let out = n.tinylet(&["get", "pod", &format!("{ns}/{name}"), "-o", "json"]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

/// `tinylet exec NS/NAME -c C -- CMD...` until stdout satisfies `pred`.
pub fn wait_exec(
    n: &Node,
    ns: &str,
    pod: &str,
    cmd: &[&str],
    pred: impl Fn(&str) -> bool,
) -> String {
    let target = format!("{ns}/{pod}");
    let mut args = vec!["exec", target.as_str(), "-c", "main", "--"];
    args.extend_from_slice(cmd);
    let deadline = Instant::now() + START;
    loop {
        let out = n.tinylet(&args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && pred(&stdout) {
            return stdout;
        }
        assert!(
            Instant::now() < deadline,
            "exec {cmd:?} in {target}: {stdout:?} {}\nagent log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            n.agent_log_tail()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

pub fn cluster_file(n: &Node, kind: &str, ns: &str, name: &str) -> PathBuf {
    n.dir.join(format!("state/cluster/{kind}/{ns}_{name}.json"))
}
