//! The node's admission on the real control plane of `tests/harness/kube.sh` and a
//! private containerd: a node whose owner chose the `baseline` pod policy for cluster
//! pods and `maxPods: 3` refuses what the cluster binds to it beyond that (a privileged
//! pod, a forbidden sysctl, more CPU than it has, a node selector it does not match, a
//! pod too many) with the pod `Failed` in the API, kubelet's reason and message, and an
//! event; nothing of a refused pod ever reaches the runtime, the secrets it references
//! are never fetched, and the pods it admitted keep running.

mod agent_support;
mod cluster_support;
mod common;

use agent_support::{wait_for, Node};
use cluster_support::*;
use common::kube::Kube;
use common::Containerd;
use serde_json::{json, Value};

const NODE: &str = "tl-admission";

/// A busybox pod of [`NODE`] in `ns` that sleeps, with `spec` merged in.
fn sleeper(c: &Containerd, ns: &str, name: &str, spec: Value) -> Value {
    let main = json!({"name": "main", "image": c.test_image(), "imagePullPolicy": "IfNotPresent",
                      "command": ["sh", "-c", "exec sleep 3600"]});
    let mut full = json!({"containers": [main]});
    if let (Some(base), Value::Object(extra)) = (full.as_object_mut(), spec) {
        base.extend(extra);
    }
    kpod(NODE, ns, name, full)
}

/// Waits until the API shows pod `ns/name` Failed with `reason`; returns its message.
fn refused(kube: &Kube, n: &Node, ns: &str, name: &str, reason: &str) -> String {
    let p = wait_api(
        kube,
        n,
        ns,
        name,
        &format!("Failed ({reason})"),
        START,
        |p| p["status"]["phase"] == "Failed" && p["status"]["reason"] == reason,
    );
    let uid = p["metadata"]["uid"].as_str().unwrap();
    assert!(
        n.cri().sandboxes(uid).is_empty(),
        "nothing of a refused pod reaches the runtime"
    );
    wait_for("the refusal's event", START, || {
        let out = kube.kubectl_ok(&[
            "get",
            "events",
            "-n",
            ns,
            "--field-selector",
            &format!("involvedObject.name={name},reason={reason}"),
            "-o",
            "json",
        ]);
        let list: Value = serde_json::from_str(&out).ok()?;
        let e = list["items"].as_array()?.first()?.clone();
        (e["type"] == "Warning").then_some(())
    });
    p["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_node_refuses_what_its_owner_and_its_capacity_do_not_allow() {
    let kube = &Kube::start();
    let c = Containerd::start();
    register(kube, NODE);
    let n = Node::joining(&c, &kube.node_identity(NODE));
    n.set_config("podPolicy", json!({"cluster": "baseline"}));
    n.set_config("maxPods", json!(3));
    // The owner's own pods may set it; the cluster's, at baseline, may not.
    n.set_config("allowedUnsafeSysctls", json!(["net.core.somaxconn"]));
    n.start_agent();
    let ns = "admit";
    namespace(kube, ns);

    // The owner's policy: a pod that would be root on the gateway.
    let escape = json!({"hostPID": true, "containers": [{
        "name": "main", "image": c.test_image(), "imagePullPolicy": "IfNotPresent",
        "command": ["nsenter", "-t", "1", "-a", "sh"],
        "securityContext": {"privileged": true}}]});
    kube.apply(&kpod(NODE, ns, "escape", escape).to_string());
    let m = refused(kube, &n, ns, "escape", "PodSecurity");
    assert!(
        m.starts_with("Pod violates the node's pod policy \"baseline\" for cluster pods: "),
        "{m}"
    );
    assert!(m.contains("spec.hostPID: true"), "{m}");
    assert!(
        m.contains("spec.containers[0].securityContext.privileged: true"),
        "{m}"
    );

    // A pod within the policy runs, with the secret it references.
    for secret in ["fine-secret", "refused-secret"] {
        kube.apply(
            &json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": secret, "namespace": ns},
                    "stringData": {"password": "s3cret"}})
            .to_string(),
        );
    }
    let mut fine = sleeper(&c, ns, "fine", json!({}));
    fine["spec"]["containers"][0]["env"] = secret_env("fine-secret");
    kube.apply(&fine.to_string());
    wait_api(kube, &n, ns, "fine", "running", START, running_ready);

    // A probe aimed at the node itself (Pod Security v1.34+): the agent would connect
    // from the host's network.
    let mut probing = sleeper(&c, ns, "probing", json!({}));
    probing["spec"]["containers"][0]["livenessProbe"] =
        json!({"httpGet": {"host": "127.0.0.1", "port": 10250, "path": "/pods"}});
    kube.apply(&probing.to_string());
    let m = refused(kube, &n, ns, "probing", "PodSecurity");
    assert!(
        m.contains("spec.containers[0].livenessProbe.httpGet.host: \"127.0.0.1\" is not allowed"),
        "{m}"
    );

    // kubelet's sysctl check: not in the safe set, not allowed for the cluster's pods
    // (the top-level allowedUnsafeSysctls is the owner's pods' at baseline).
    let sysctl =
        json!({"securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]}});
    kube.apply(&sleeper(&c, ns, "sysctl", sysctl).to_string());
    let m = refused(kube, &n, ns, "sysctl", "SysctlForbidden");
    assert_eq!(
        m,
        "Pod forbidden sysctl: \"net.core.somaxconn\" not allowlisted"
    );

    // More CPU than the node has.
    let mut big = sleeper(&c, ns, "big", json!({}));
    big["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "1000"}});
    kube.apply(&big.to_string());
    let m = refused(kube, &n, ns, "big", "OutOfcpu");
    assert!(
        m.starts_with(
            "Pod Node didn't have enough resource: cpu, requested: 1000000, used: 0, capacity: "
        ),
        "{m}"
    );

    // A node selector this node does not match (bound by nodeName, past the scheduler).
    // It references a secret as an env variable and a volume: refused, the node never
    // fetches it (the Node authorizer would serve it: the pod is bound here).
    let elsewhere = json!({"nodeSelector": {"example.com/site": "elsewhere"},
        "volumes": [{"name": "s", "secret": {"secretName": "refused-secret"}}]});
    let mut elsewhere = sleeper(&c, ns, "elsewhere", elsewhere);
    elsewhere["spec"]["containers"][0]["env"] = secret_env("refused-secret");
    kube.apply(&elsewhere.to_string());
    let m = refused(kube, &n, ns, "elsewhere", "NodeAffinity");
    assert_eq!(m, "Pod Predicate NodeAffinity failed");

    // maxPods 3: "fine", a second and a third run; a fourth is one too many.
    for name in ["second", "third"] {
        kube.apply(&sleeper(&c, ns, name, json!({})).to_string());
        wait_api(kube, &n, ns, name, "running", START, running_ready);
    }
    kube.apply(&sleeper(&c, ns, "fourth", json!({})).to_string());
    let m = refused(kube, &n, ns, "fourth", "OutOfpods");
    assert_eq!(
        m,
        "Pod Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"
    );
    // The admitted pods kept running through it all.
    for name in ["fine", "second", "third"] {
        let p = api_pod(kube, ns, name).unwrap();
        assert!(running_ready(&p), "{name}: {}", p["status"]);
    }
    // The admitted pod's secret was fetched and cached; the refused pod's never was
    // (not cached, not even once: the agent logs every secret it caches or drops).
    let cached = |s: &str| n.dir.join(format!("state/cluster/secrets/{ns}_{s}.json"));
    assert!(cached("fine-secret").exists());
    assert!(!cached("refused-secret").exists());
    let log = std::fs::read_to_string(n.agent_log_path()).unwrap();
    assert!(log.contains(&format!("{ns}/fine-secret cached")), "{log}");
    assert!(!log.contains("refused-secret"), "{log}");
}

/// An env variable read from key `password` of secret `name`.
fn secret_env(name: &str) -> Value {
    json!([{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": name, "key": "password"}}}])
}

/// What the API server sends is honoured or refused, never dropped: a pod of a
/// RuntimeClass (whose handler the node does not resolve) is `Failed` with
/// `UnsupportedPodSpec` rather than run under the default runtime; and the QoS class the
/// node writes back is the API server's own (an ephemeral-storage request alone leaves a
/// pod `BestEffort`; from v1.32 the API server refuses a status that changes it).
#[test]
fn unsupported_fields_are_refused_and_the_qos_class_is_the_api_servers() {
    const NODE2: &str = "tl-unsupported";
    let kube = &Kube::start();
    let c = Containerd::start();
    register(kube, NODE2);
    let n = Node::joining(&c, &kube.node_identity(NODE2));
    n.start_agent();
    let ns = "unsupported";
    namespace(kube, ns);
    let main = |resources: Value| {
        json!({"name": "main", "image": c.test_image(), "imagePullPolicy": "IfNotPresent",
               "command": ["sh", "-c", "exec sleep 3600"], "resources": resources})
    };

    let class = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                       "metadata": {"name": "gvisor"}, "handler": "runsc"});
    kube.apply(&class.to_string());
    let spec = json!({"runtimeClassName": "gvisor", "containers": [main(json!({}))]});
    kube.apply(&kpod(NODE2, ns, "sandboxed", spec).to_string());
    let m = refused(kube, &n, ns, "sandboxed", "UnsupportedPodSpec");
    assert!(
        m.starts_with("Pod spec.runtimeClassName: \"gvisor\" is not supported: "),
        "{m}"
    );

    let storage = json!({"requests": {"ephemeral-storage": "1Mi"}});
    let spec = json!({"containers": [main(storage)]});
    kube.apply(&kpod(NODE2, ns, "scratch", spec).to_string());
    let p = wait_api(kube, &n, ns, "scratch", "running", START, running_ready);
    assert_eq!(p["status"]["qosClass"], "BestEffort", "{}", p["status"]);
}
