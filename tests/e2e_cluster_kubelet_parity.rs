//! What the cluster sees of a tinylet node where kubelet's behaviour is the yardstick:
//! each behaviour Kubernetes' own node conformance suite checks that tinylet once got
//! wrong, tested here on the real control plane of `tests/harness/kube.sh` and the real
//! containerd of the harness, so a regression fails `make test` without the whole suite
//! (`make conformance`).
//!
//! One agent serves the tests (joined with its kubelet API, so `kubectl logs` reaches
//! it), each test in its own namespace; the tests that restart an agent or start one
//! with another config run one of their own.

mod agent_support;
mod cluster_support;
mod common;
mod kapi_support;

use agent_support::{cstatus, wait_for, Node};
use cluster_support::*;
use common::kube::Kube;
use common::Containerd;
use kapi_support::{api_node, host_ips, ApiNode};
use serde_json::{json, Value};
use std::sync::OnceLock;

/// The cluster Node name of the shared agent.
const NODE: &str = "tl-parity";

/// The shared agent, joined to the shared control plane as [`NODE`], its kubelet API on.
fn node() -> &'static ApiNode {
    static N: OnceLock<&'static ApiNode> = OnceLock::new();
    N.get_or_init(|| {
        agent_support::node_for_the_process(|| api_node(Kube::shared(), Containerd::shared(), NODE))
    })
}

/// kubectl as admin in `ns`; stdout, or the panic names stderr.
fn kubectl_ns(kube: &Kube, ns: &str, args: &[&str]) -> String {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    kube.kubectl_ok(&all)
}

#[test]
fn a_finished_pod_keeps_its_logs_until_deleted_and_never_runs_again() {
    // An agent of its own: it is restarted, and the shared one serves other tests.
    let kube = Kube::shared();
    let c = Containerd::start();
    let n = &api_node(kube, &c, "tl-parity-finished");
    let ns = "finished";
    namespace(kube, ns);
    let mut main = sh("main", "echo done-once");
    main["image"] = json!(c.test_image());
    let spec = json!({"restartPolicy": "Never", "containers": [main]});
    kube.apply(&kpod("tl-parity-finished", ns, "job", spec).to_string());
    let p = wait_api(kube, &n.node, ns, "job", "Succeeded", START, |p| {
        p["status"]["phase"] == "Succeeded"
    });
    let uid = p["metadata"]["uid"].as_str().unwrap().to_string();
    // Through the API server and the node's kubelet API, as `kubectl logs` does.
    assert_eq!(kubectl_ns(kube, ns, &["logs", "job"]), "done-once\n");
    let ran = n.node.cri().containers(&uid);
    assert_eq!(ran.len(), 1, "{ran:?}");
    // An agent restart finds it finished: nothing of it is made again.
    n.node.kill_agent();
    n.node.start_agent();
    n.node.wait_relists(3);
    let after = n.node.cri().containers(&uid);
    assert_eq!(
        after.iter().map(|c| &c.id).collect::<Vec<_>>(),
        ran.iter().map(|c| &c.id).collect::<Vec<_>>(),
        "the finished pod's container is kept, none is added"
    );
    assert_eq!(kubectl_ns(kube, ns, &["logs", "job"]), "done-once\n");
    let cached = cluster_file(&n.node, "pods", ns, "job");
    let text = std::fs::read_to_string(&cached).unwrap();
    assert!(text.contains("\"Succeeded\""), "{text}");
    // Deleted from the API: its containers and logs go.
    kubectl_ns(kube, ns, &["delete", "pod", "job", "--wait=false"]);
    wait_for("the deleted pod's containers to be removed", START, || {
        n.node.cri().containers(&uid).is_empty().then_some(())
    });
    wait_for("the pod to be gone from the API", START, || {
        api_pod(kube, ns, "job").is_none().then_some(())
    });
    assert!(!cached.exists());
}

#[test]
fn downward_api_divisor_zero_and_unset_limits_read_the_node_allocatable() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "downward";
    namespace(kube, ns);
    // kubectl (the API server) writes the unset divisors as "0".
    let field = |res: &str| json!({"resourceFieldRef": {"containerName": "main", "resource": res}});
    let mut c = sh(
        "main",
        "echo cpu=$CPU_LIMIT mem=$MEMORY_LIMIT; cat /etc/podinfo/mem_limit; echo",
    );
    c["env"] = json!([
        {"name": "CPU_LIMIT", "valueFrom": field("limits.cpu")},
        {"name": "MEMORY_LIMIT", "valueFrom": field("limits.memory")},
    ]);
    c["volumeMounts"] = json!([{"name": "podinfo", "mountPath": "/etc/podinfo"}]);
    let spec = json!({"restartPolicy": "Never", "containers": [c],
        "volumes": [{"name": "podinfo", "downwardAPI": {"items": [
            {"path": "mem_limit", "resourceFieldRef":
                {"containerName": "main", "resource": "limits.memory", "divisor": "1Mi"}}]}}]});
    kube.apply(&kpod(NODE, ns, "dapi", spec).to_string());
    let sent = kubectl_ns(kube, ns, &["get", "pod", "dapi", "-o", "json"]);
    assert!(
        sent.contains("\"divisor\": \"0\""),
        "the API server's default: {sent}"
    );
    wait_api(kube, &n.node, ns, "dapi", "Succeeded", START, |p| {
        p["status"]["phase"] == "Succeeded"
    });
    let node: Value =
        serde_json::from_str(&kube.kubectl_ok(&["get", "node", NODE, "-o", "json"])).unwrap();
    let alloc = &node["status"]["allocatable"];
    let cpus = alloc["cpu"].as_str().unwrap();
    let mem = parse_ki(alloc["memory"].as_str().unwrap());
    let logs = kubectl_ns(kube, ns, &["logs", "dapi"]);
    let want = format!(
        "cpu={} mem={}\n{}\n",
        cpus.parse::<u64>().expect("whole CPUs"),
        mem,
        mem.div_ceil(1 << 20)
    );
    assert_eq!(logs, want, "node allocatable {alloc}");
}

/// Bytes of a memory quantity as the API server writes the node's (`NNNKi`, or bytes).
fn parse_ki(q: &str) -> u64 {
    match q.strip_suffix("Ki") {
        Some(k) => k.parse::<u64>().unwrap() * 1024,
        None => q.parse().unwrap(),
    }
}

#[test]
fn init_container_statuses_are_kubelets() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "init";
    namespace(kube, ns);
    let spec = json!({"restartPolicy": "Never",
        "initContainers": [sh("init1", "true"), sh("init2", "sleep 4")],
        "containers": [sh("main", "sleep 1")]});
    kube.apply(&kpod(NODE, ns, "ini", spec).to_string());
    // While init2 runs: init1 completed is ready, init2 running is not, the app
    // container waits PodInitializing, Initialized names only init2.
    let p = wait_api(kube, &n.node, ns, "ini", "init2 running", START, |p| {
        p["status"]["initContainerStatuses"][1]["state"]["running"].is_object()
    });
    let init = &p["status"]["initContainerStatuses"];
    assert_eq!(
        (init[0]["ready"].clone(), init[1]["ready"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(
        cstatus(&p, "main")["state"]["waiting"]["reason"],
        "PodInitializing",
        "{}",
        p["status"]
    );
    let cond = p["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Initialized")
        .unwrap();
    assert_eq!(
        cond["message"],
        "containers with incomplete status: [init2]"
    );
    let done = wait_api(kube, &n.node, ns, "ini", "Succeeded", START, |p| {
        p["status"]["phase"] == "Succeeded"
    });
    let init = &done["status"]["initContainerStatuses"];
    assert_eq!(
        (init[0]["ready"].clone(), init[1]["ready"].clone()),
        (json!(true), json!(true))
    );
}

#[test]
fn the_pod_gets_a_managed_etc_hosts_with_its_host_aliases() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "hosts";
    namespace(kube, ns);
    let spec = json!({"hostname": "h1", "subdomain": "sub",
        "hostAliases": [{"ip": "123.45.67.89", "hostnames": ["foo.local", "bar.local"]}],
        "containers": [sh("main", "exec sleep 3600")]});
    kube.apply(&kpod(NODE, ns, "aliased", spec).to_string());
    let p = wait_api(
        kube,
        &n.node,
        ns,
        "aliased",
        "running",
        START,
        running_ready,
    );
    let ip = p["status"]["podIP"].as_str().unwrap();
    let hosts = wait_exec(&n.node, ns, "aliased", &["cat", "/etc/hosts"], |t| {
        !t.is_empty()
    });
    assert!(
        hosts.starts_with("# Kubernetes-managed hosts file.\n"),
        "{hosts}"
    );
    assert!(
        hosts.contains(&format!("{ip}\th1.sub.{ns}.svc.cluster.local\th1\n")),
        "{hosts}"
    );
    assert!(
        hosts.ends_with("# Entries added by HostAliases.\n123.45.67.89\tfoo.local\tbar.local\n"),
        "{hosts}"
    );
    // A hostNetwork pod sees the node's file.
    let spec = json!({"hostNetwork": true, "containers": [sh("main", "exec sleep 3600")]});
    kube.apply(&kpod(NODE, ns, "hostnet", spec).to_string());
    wait_api(
        kube,
        &n.node,
        ns,
        "hostnet",
        "running",
        START,
        running_ready,
    );
    let hosts = wait_exec(&n.node, ns, "hostnet", &["cat", "/etc/hosts"], |_| true);
    assert!(!hosts.contains("Kubernetes-managed"), "{hosts}");
}

#[test]
fn a_termination_message_from_the_log_is_the_output_as_written() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "termmsg";
    namespace(kube, ns);
    let mut c = sh("main", "printf DONE; exit 1");
    c["terminationMessagePolicy"] = json!("FallbackToLogsOnError");
    let spec = json!({"restartPolicy": "Never", "containers": [c]});
    kube.apply(&kpod(NODE, ns, "fail", spec).to_string());
    let p = wait_api(kube, &n.node, ns, "fail", "Failed", START, |p| {
        p["status"]["phase"] == "Failed"
    });
    assert_eq!(
        cstatus(&p, "main")["state"]["terminated"]["message"],
        "DONE"
    );
}

#[test]
fn pods_get_the_variables_of_their_services_and_the_master_service() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "svcenv";
    namespace(kube, ns);
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "fooservice", "namespace": ns},
            "spec": {"ports": [{"name": "web", "port": 8765, "protocol": "TCP"}],
                     "selector": {"app": "none"}}})
        .to_string(),
    );
    let svc: Value = serde_json::from_str(&kubectl_ns(
        kube,
        ns,
        &["get", "service", "fooservice", "-o", "json"],
    ))
    .unwrap();
    let foo_ip = svc["spec"]["clusterIP"].as_str().unwrap().to_string();
    let master: Value = serde_json::from_str(&kube.kubectl_ok(&[
        "get",
        "service",
        "kubernetes",
        "-n",
        "default",
        "-o",
        "json",
    ]))
    .unwrap();
    let master_ip = master["spec"]["clusterIP"].as_str().unwrap().to_string();
    let mut c = sh("main", "env; echo X=$(FOO_ADDR)");
    c["env"] = json!([{"name": "FOO_ADDR", "value": "$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_SERVICE_PORT)"}]);
    let spec = json!({"restartPolicy": "Never", "containers": [c]});
    kube.apply(&kpod(NODE, ns, "links", spec).to_string());
    wait_api(kube, &n.node, ns, "links", "Succeeded", START, |p| {
        p["status"]["phase"] == "Succeeded"
    });
    let env = kubectl_ns(kube, ns, &["logs", "links"]);
    for want in [
        format!("FOOSERVICE_SERVICE_HOST={foo_ip}"),
        "FOOSERVICE_SERVICE_PORT=8765".to_string(),
        "FOOSERVICE_SERVICE_PORT_WEB=8765".to_string(),
        format!("FOOSERVICE_PORT=tcp://{foo_ip}:8765"),
        format!("FOOSERVICE_PORT_8765_TCP_ADDR={foo_ip}"),
        format!("KUBERNETES_SERVICE_HOST={master_ip}"),
        "KUBERNETES_SERVICE_PORT=443".to_string(),
        format!("FOO_ADDR={foo_ip}:8765"),
    ] {
        assert!(env.lines().any(|l| l == want), "{want} not in:\n{env}");
    }
    // Without service links: the master service only.
    let spec = json!({"restartPolicy": "Never", "enableServiceLinks": false,
        "containers": [sh("main", "env")]});
    kube.apply(&kpod(NODE, ns, "nolinks", spec).to_string());
    wait_api(kube, &n.node, ns, "nolinks", "Succeeded", START, |p| {
        p["status"]["phase"] == "Succeeded"
    });
    let env = kubectl_ns(kube, ns, &["logs", "nolinks"]);
    assert!(!env.contains("FOOSERVICE_"), "{env}");
    assert!(
        env.contains(&format!("KUBERNETES_SERVICE_HOST={master_ip}")),
        "{env}"
    );
    // The namespace's Services are kept for an offline reboot.
    let kept = n
        .node
        .dir
        .join(format!("state/cluster/services/{ns}_services.json"));
    let text = std::fs::read_to_string(&kept).unwrap();
    assert!(text.contains(&foo_ip), "{text}");
}

#[test]
fn events_keep_flowing_after_a_namespace_with_pending_events_is_gone() {
    let (kube, n) = (Kube::shared(), node());
    // A crash loop keeps making events in a namespace that is then deleted: sending
    // them is refused from then on, and must not hold back anyone else's.
    let gone = "events-gone";
    namespace(kube, gone);
    let spec = json!({"containers": [sh("main", "exit 3")]});
    kube.apply(&kpod(NODE, gone, "crashy", spec).to_string());
    wait_api(kube, &n.node, gone, "crashy", "restarting", START, |p| {
        cstatus(p, "main")["restartCount"].as_i64().unwrap_or(0) >= 1
    });
    kube.kubectl_ok(&["delete", "namespace", gone, "--wait=false"]);
    let ns = "events-new";
    namespace(kube, ns);
    let spec = json!({"containers": [sh("main", "exec sleep 3600")]});
    kube.apply(&kpod(NODE, ns, "fresh", spec).to_string());
    wait_api(kube, &n.node, ns, "fresh", "running", START, running_ready);
    wait_for("the new pod's Started event", START, || {
        let out = kubectl_ns(
            kube,
            ns,
            &[
                "get",
                "events",
                "--field-selector",
                "involvedObject.name=fresh,reason=Started",
                "-o",
                "name",
            ],
        );
        (!out.trim().is_empty()).then_some(())
    });
}

#[test]
fn a_claim_bound_to_a_local_volume_keeps_a_statefulsets_data() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "stateful";
    namespace(kube, ns);
    let disk = n.node.host_dir().join("pv-web-0");
    std::fs::create_dir_all(&disk).unwrap();
    let class = "tl-parity-local";
    kube.apply(
        &json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": class}, "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer"})
        .to_string(),
    );
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "tl-parity-pv0"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain", "storageClassName": class,
                "local": {"path": disk},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE]}]}]}}}})
        .to_string(),
    );
    let image = Containerd::shared().test_image();
    let script = "date +%s%N >> /data/boots; cat /data/boots; exec sleep 3600";
    kube.apply(
        &json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"serviceName": "web", "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                        "automountServiceAccountToken": false,
                        "terminationGracePeriodSeconds": 1,
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "main", "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["sh", "-c", script],
                            "volumeMounts": [{"name": "www", "mountPath": "/data"}]}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "www"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class,
                        "resources": {"requests": {"storage": "1Gi"}}}}]}})
        .to_string(),
    );
    let first = wait_api(kube, &n.node, ns, "web-0", "running", START, running_ready);
    let boots = || std::fs::read_to_string(disk.join("boots")).unwrap_or_default();
    wait_for("the pod's write on the volume's directory", START, || {
        (boots().lines().count() == 1).then_some(())
    });
    // The StatefulSet makes the pod again: same claim, same data.
    kubectl_ns(kube, ns, &["delete", "pod", "web-0", "--wait=false"]);
    wait_for("a new web-0", START, || {
        let p = api_pod(kube, ns, "web-0")?;
        (p["metadata"]["uid"] != first["metadata"]["uid"] && running_ready(&p)).then_some(())
    });
    wait_for("the second start's write beside the first", START, || {
        (boots().lines().count() == 2).then_some(())
    });
    let kept = n
        .node
        .dir
        .join(format!("state/cluster/claims/{ns}_www-web-0.json"));
    let text = std::fs::read_to_string(&kept).unwrap();
    assert!(text.contains("tl-parity-pv0"), "{text}");
    kubectl_ns(kube, ns, &["delete", "statefulset", "web", "--wait=false"]);
}

/// A claim bound to a `local` volume pinned (nodeAffinity) to another node: the pod,
/// bound here with `nodeName` (past the scheduler), waits with the volume named and a
/// `FailedMount` event, and nothing of it reaches the runtime: another node's disk is
/// not this node's directory of the same path.
#[test]
fn a_claim_bound_to_another_nodes_volume_never_starts_here() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "elsewhere";
    namespace(kube, ns);
    let disk = n.node.host_dir().join("pv-elsewhere");
    std::fs::create_dir_all(&disk).unwrap();
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "tl-parity-pv-elsewhere"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                "claimRef": {"namespace": ns, "name": "data"},
                "local": {"path": disk},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In",
                     "values": ["another-node"]}]}]}}}})
        .to_string(),
    );
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                "volumeName": "tl-parity-pv-elsewhere",
                "resources": {"requests": {"storage": "1Gi"}}}})
        .to_string(),
    );
    let image = Containerd::shared().test_image();
    let spec = json!({"containers": [{"name": "main", "image": image,
            "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", "touch /data/here; sleep 3600"],
            "volumeMounts": [{"name": "d", "mountPath": "/data"}]}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]});
    kube.apply(&kpod(NODE, ns, "pinned", spec).to_string());
    let waiting = |p: &Value| {
        let w = &cstatus(p, "main")["state"]["waiting"];
        w["message"]
            .as_str()
            .is_some_and(|m| m.contains("VolumeNodeAffinityConflict"))
    };
    let p = wait_api(
        kube,
        &n.node,
        ns,
        "pinned",
        "waiting on the volume's node",
        START,
        waiting,
    );
    let msg = cstatus(&p, "main")["state"]["waiting"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("\"data\"") && msg.contains("tl-parity-pv-elsewhere"),
        "{msg}"
    );
    assert_eq!(p["status"]["phase"], "Pending");
    let uid = p["metadata"]["uid"].as_str().unwrap();
    assert!(n.node.cri().sandboxes(uid).is_empty(), "nothing made");
    assert!(!disk.join("here").exists());
    wait_for("the FailedMount event", START, || {
        let out = kubectl_ns(
            kube,
            ns,
            &[
                "get",
                "events",
                "--field-selector",
                "involvedObject.name=pinned,reason=FailedMount",
                "-o",
                "json",
            ],
        );
        let list: Value = serde_json::from_str(&out).ok()?;
        let e = list["items"].as_array()?.first()?.clone();
        let m = e["message"].as_str()?.to_string();
        (e["type"] == "Warning" && m.contains("tl-parity-pv-elsewhere")).then_some(())
    });
    kubectl_ns(kube, ns, &["delete", "pod", "pinned", "--wait=false"]);
}

#[test]
fn node_ip_must_be_this_machines_and_is_the_nodes_address() {
    let kube = Kube::shared();
    // Its own runtime: agents on one runtime would remove each other's pods.
    let c = Containerd::start();
    let name = "tl-parity-ip";
    register(kube, name);
    let n = Node::joining(&c, &kube.node_identity(name));
    n.set_config("nodeIP", json!("192.0.2.123"));
    let out = n.tinylet(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("nodeIP 192.0.2.123: no interface of this machine has this address"),
        "{err}"
    );
    let ip = host_ips()
        .into_iter()
        .last()
        .expect("a non-loopback IPv4 address");
    n.set_config("nodeIP", json!(ip));
    n.start_agent();
    wait_for("the node's InternalIP to be its nodeIP", START, || {
        let node: Value =
            serde_json::from_str(&kube.kubectl_ok(&["get", "node", name, "-o", "json"])).ok()?;
        let addrs = node["status"]["addresses"].as_array()?.clone();
        addrs
            .iter()
            .any(|a| a["type"] == "InternalIP" && a["address"] == ip.as_str())
            .then_some(())
    });
    n.kill_agent();
    kube.kubectl_ok(&["delete", "node", name, "--wait=false"]);
}
