//! End-to-end tests of the cluster's pods on a tinylet node: the real control plane of
//! `tests/harness/kube.sh` (v1.20.2, Node authorizer and NodeRestriction on) and the
//! real containerd of the harness. Pods are made with kubectl (`spec.nodeName` set, so no
//! scheduler is involved); what the cluster sees is read back with kubectl, what the
//! device does with `tinylet get`/`exec`, the CRI and the state directory.
//!
//! One agent on the shared containerd serves most tests (agents on one runtime would
//! remove each other's pods as orphans), each test in its own namespace. The tests that
//! need an agent of their own (another identity, a quiet state directory) get their own
//! containerd.
//!
//! Pods carry `automountServiceAccountToken: false` unless a test is about the token
//! (each token is one more request, and most tests look at other things) and tolerate
//! every taint (nodes of tests that cut the uplink lose their lease: the node lifecycle
//! controller taints them and would evict after 300 s). The workload test has no
//! tolerations: the node's own registration, status and lease keep it Ready and
//! untainted.

mod agent_support;
mod cluster_support;
mod common;

use agent_support::{cstatus, holds_for, wait_for, Node};
use cluster_support::*;
use common::kube::Kube;
use common::Containerd;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

/// The cluster Node name of the shared agent.
const NODE: &str = "tl-shared";

/// The shared agent, joined to the shared control plane as [`NODE`].
fn node() -> &'static Node {
    static N: OnceLock<&'static Node> = OnceLock::new();
    N.get_or_init(|| {
        agent_support::node_for_the_process(|| {
            let kube = Kube::shared();
            let n = join(kube, Containerd::shared(), NODE);
            n.start_agent();
            n
        })
    })
}

#[test]
fn cluster_pod_runs_and_the_api_shows_its_status_and_restarts() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "run";
    namespace(kube, ns);
    kube.apply(
        &kpod(
            NODE,
            ns,
            "web",
            json!({"containers": [sh("main", "exec sleep 3600")]}),
        )
        .to_string(),
    );
    let p = wait_api(
        kube,
        n,
        ns,
        "web",
        "Running and Ready",
        START,
        running_ready,
    );
    let local = local_view(n, ns, "web").expect("the node knows the pod");
    let ip = p["status"]["podIP"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!ip.is_empty(), "{}", p["status"]);
    assert_eq!(ip, local["status"]["podIP"], "the runtime's pod IP");
    let subnet = Containerd::shared().cni_subnet();
    let prefix = subnet.rsplit_once('.').map(|(a, _)| a).unwrap_or(subnet);
    assert!(
        ip.starts_with(prefix),
        "{ip} not in the pod subnet {subnet}"
    );
    assert_eq!(p["status"]["podIPs"], json!([{"ip": ip}]));
    assert_eq!(p["status"]["hostIP"], local["status"]["hostIP"]);
    assert!(p["status"]["startTime"].is_string());
    assert_eq!(p["status"]["qosClass"], "BestEffort");
    for c in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        assert_eq!(condition(&p, c), "True", "{c}: {}", p["status"]);
    }
    let main = cstatus(&p, "main");
    assert_eq!(main["restartCount"], 0);
    assert_eq!(main["ready"], true);
    assert_eq!(
        local["metadata"]["annotations"]["kubernetes.io/config.source"],
        "api"
    );

    // The cache holds the pod without its status or resourceVersion.
    let cached: Value =
        serde_json::from_slice(&std::fs::read(cluster_file(n, "pods", ns, "web")).unwrap())
            .unwrap();
    assert_eq!(cached["metadata"]["uid"], p["metadata"]["uid"]);
    assert!(cached.get("status").is_none() && cached["metadata"].get("resourceVersion").is_none());

    // The device shows it, and leaves its deletion to the cluster.
    let wide = n.tinylet_ok(&["get", "pods", "-n", ns, "-o", "wide"]);
    let row = wide
        .lines()
        .find(|l| l.starts_with("web "))
        .unwrap_or_default();
    assert!(row.trim_end().ends_with("cluster"), "{wide}");
    let out = n.tinylet(&["delete", "pod", &format!("{ns}/web")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("kubectl") && err.contains(kube.api_url()),
        "{err}"
    );
    assert!(api_pod(kube, ns, "web").is_some());

    // A container killed on the runtime: restarted, and the API counts it.
    let id = cstatus(&p, "main")["containerID"]
        .as_str()
        .unwrap()
        .rsplit("://")
        .next()
        .unwrap()
        .to_string();
    let killed = Instant::now();
    Containerd::shared().ctr_ok(&["-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", &id]);
    let p = wait_api(kube, n, ns, "web", "restarted once", START, |p| {
        cstatus(p, "main")["restartCount"] == 1 && running_ready(p)
    });
    eprintln!(
        "container killed -> restartCount 1 and Running in the API: {:?}",
        killed.elapsed()
    );
    assert_eq!(
        cstatus(&p, "main")["lastState"]["terminated"]["exitCode"],
        137,
        "{}",
        p["status"]
    );
}

#[test]
fn configmaps_and_secrets_from_the_api_reach_the_container() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "objects";
    namespace(kube, ns);
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": ns},
                "data": {"greeting": "hello", "level": "3"}})
        .to_string(),
    );
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "creds", "namespace": ns},
                "stringData": {"password": "s3cret", "user": "gw"}})
        .to_string(),
    );
    let mut main = sh("main", "exec sleep 3600");
    main["env"] = json!([
        {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "greeting"}}},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}
    ]);
    main["envFrom"] = json!([{"prefix": "CFG_", "configMapRef": {"name": "settings"}}]);
    main["volumeMounts"] = json!([
        {"name": "cfg", "mountPath": "/cfg"},
        {"name": "sec", "mountPath": "/sec"}
    ]);
    let spec = json!({
        "containers": [main],
        "volumes": [
            {"name": "cfg", "configMap": {"name": "settings"}},
            {"name": "sec", "secret": {"secretName": "creds", "defaultMode": 0o400}}
        ]
    });
    kube.apply(&kpod(NODE, ns, "reader", spec).to_string());
    wait_api(kube, n, ns, "reader", "Running", START, running_ready);

    let env = wait_exec(n, ns, "reader", &["env"], |o| o.contains("GREETING="));
    for line in [
        "GREETING=hello",
        "PASSWORD=s3cret",
        "CFG_level=3",
        "CFG_greeting=hello",
    ] {
        assert!(env.lines().any(|l| l == line), "{line} missing:\n{env}");
    }
    wait_exec(n, ns, "reader", &["cat", "/cfg/greeting"], |o| o == "hello");
    wait_exec(n, ns, "reader", &["cat", "/sec/user"], |o| o == "gw");

    // Cached with the store's modes: secrets 0600 in a 0700 directory.
    let secret = cluster_file(n, "secrets", ns, "creds");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&secret), 0o600);
    assert_eq!(mode(secret.parent().unwrap()), 0o700);
    assert!(cluster_file(n, "configmaps", ns, "settings").exists());

    // An update reaches the file in the running container (not the environment).
    kube.kubectl_ok(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        ns,
        "-p",
        r#"{"data":{"greeting":"updated"}}"#,
    ]);
    let changed = Instant::now();
    wait_exec(n, ns, "reader", &["cat", "/cfg/greeting"], |o| {
        o == "updated"
    });
    eprintln!(
        "configMap update reached the file in {:?}",
        changed.elapsed()
    );

    // No pod references them any longer: they leave the cache.
    kube.kubectl_ok(&["delete", "pod", "reader", "-n", ns, "--wait=false"]);
    wait_for("the pod's objects leave the cache", START, || {
        (!secret.exists() && !cluster_file(n, "configmaps", ns, "settings").exists()).then_some(())
    });
}

#[test]
fn kubectl_delete_runs_prestop_with_the_deletion_grace_and_removes_the_pod() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "grace";
    namespace(kube, ns);
    let marks = n.host_dir().join("cluster-grace-marks");
    let _ = std::fs::remove_file(&marks);
    let mount = json!([{"name": "host", "mountPath": "/host"}]);
    let mut polite = sh(
        "main",
        "trap 'echo term >> /host/cluster-grace-marks; exit 0' TERM; while true; do sleep 0.2; done",
    );
    polite["volumeMounts"] = mount.clone();
    polite["lifecycle"] = json!({"preStop": {"exec": {"command":
        ["sh", "-c", "echo prestop >> /host/cluster-grace-marks"]}}});
    let mut stubborn = sh("stubborn", "trap '' TERM; while true; do sleep 0.2; done");
    stubborn["volumeMounts"] = mount;
    // The spec's grace is long; the deletion asks for 4 s, and that is what counts.
    let spec = json!({
        "terminationGracePeriodSeconds": 60,
        "containers": [polite, stubborn],
        "volumes": [{"name": "host", "hostPath": {"path": n.host_dir()}}]
    });
    kube.apply(&kpod(NODE, ns, "slow", spec).to_string());
    let p = wait_api(kube, n, ns, "slow", "Running", START, running_ready);
    let uid = p["metadata"]["uid"].as_str().unwrap().to_string();
    let cri = n.cri();
    let started = Instant::now();
    kube.kubectl_ok(&[
        "delete",
        "pod",
        "slow",
        "-n",
        ns,
        "--grace-period=4",
        "--wait=false",
    ]);
    wait_for(
        "the stubborn container stops",
        Duration::from_secs(40),
        || {
            (!cri
                .containers(&uid)
                .iter()
                .any(agent_support::container_running))
            .then_some(())
        },
    );
    let stopped_after = started.elapsed();
    wait_for(
        "the pod is gone from the API",
        Duration::from_secs(30),
        || api_pod(kube, ns, "slow").is_none().then_some(()),
    );
    let gone_after = started.elapsed();
    eprintln!("kubectl delete --grace-period=4: stopped after {stopped_after:?}, gone from the API after {gone_after:?}");
    assert!(
        stopped_after >= Duration::from_secs(3),
        "stopped after {stopped_after:?}"
    );
    assert!(
        stopped_after < Duration::from_secs(15),
        "the spec's 60 s were used: {stopped_after:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&marks).unwrap_or_default(),
        "prestop\nterm\n",
        "preStop ran first, then TERM"
    );
    assert!(cri.containers(&uid).is_empty() && cri.sandboxes(&uid).is_empty());
    wait_for("the cached pod file goes", Duration::from_secs(10), || {
        (!cluster_file(n, "pods", ns, "slow").exists()).then_some(())
    });
    assert!(local_view(n, ns, "slow").is_none());
}

/// `apiServer.cacheSecrets: false`: the pods get the cluster's secrets (volume and env,
/// and an update), nothing of them ever reaches the state directory, and a secret
/// cached before the switch is removed at the agent's start.
#[test]
fn secrets_held_in_memory_only_never_reach_the_state_directory() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let name = "tl-nocache";
    let n = join(kube, &c, name);
    let ns = "nocache";
    namespace(kube, ns);
    let stale = n.dir.join("state/cluster/secrets");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join(format!("{ns}_old.json")), "{}").unwrap();
    let mut api: Value = serde_json::from_slice(&std::fs::read(&n.config).unwrap()).unwrap();
    api["apiServer"]["cacheSecrets"] = json!(false);
    n.set_config("apiServer", api["apiServer"].clone());
    n.start_agent();
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "creds", "namespace": ns},
                "stringData": {"password": "in-memory-only-7f3a"}})
        .to_string(),
    );
    let mut main = json!({"name": "main", "image": c.test_image(),
        "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", "exec sleep 3600"]});
    main["env"] = json!([{"name": "PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}]);
    main["volumeMounts"] = json!([{"name": "sec", "mountPath": "/sec"}]);
    let spec = json!({"containers": [main],
        "volumes": [{"name": "sec", "secret": {"secretName": "creds"}}]});
    kube.apply(&kpod(name, ns, "reader", spec).to_string());
    wait_api(kube, &n, ns, "reader", "Running", START, running_ready);
    let env = wait_exec(&n, ns, "reader", &["env"], |o| o.contains("PASSWORD="));
    assert!(env.contains("PASSWORD=in-memory-only-7f3a"), "{env}");
    kube.kubectl_ok(&[
        "patch",
        "secret",
        "creds",
        "-n",
        ns,
        "-p",
        r#"{"stringData":{"password":"in-memory-only-8e4b"}}"#,
    ]);
    wait_exec(&n, ns, "reader", &["cat", "/sec/password"], |o| {
        o == "in-memory-only-8e4b"
    });
    assert!(
        !stale.join(format!("{ns}_old.json")).exists(),
        "the cached secret of before"
    );
    assert!(!cluster_file(&n, "secrets", ns, "creds").exists());
    let state = n.dir.join("state");
    // As written and as the API encodes it (the cache would hold base64).
    let encoded = |v: &str| tinylet::model::base64::encode(v.as_bytes());
    let needles = ["in-memory-only-7f3a", "in-memory-only-8e4b"]
        .into_iter()
        .flat_map(|v| [v.to_string(), encoded(v)]);
    for needle in needles {
        let needle = needle.as_str();
        let out = std::process::Command::new("grep")
            .args(["-rl", needle])
            .arg(&state)
            .output()
            .unwrap();
        assert!(
            out.stdout.is_empty(),
            "{needle} in {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    n.kill_agent();
}

#[test]
fn refused_pods_are_failed_in_the_api_with_the_reason() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "refused";
    namespace(kube, ns);
    let spec = json!({
        "containers": [sh("main", "exec sleep 3600")],
        "volumes": [{"name": "remote", "nfs": {"server": "192.0.2.1", "path": "/export"}}]
    });
    kube.apply(&kpod(NODE, ns, "nfs", spec).to_string());
    let p = wait_api(kube, n, ns, "nfs", "Failed", START, |p| {
        p["status"]["phase"] == "Failed"
    });
    assert_eq!(
        p["status"]["reason"], "UnsupportedPodSpec",
        "{}",
        p["status"]
    );
    let message = p["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("spec.volumes[0]") && message.contains("nfs"),
        "{message}"
    );
    assert!(
        !cluster_file(n, "pods", ns, "nfs").exists(),
        "a refused pod is not cached"
    );
    assert!(local_view(n, ns, "nfs").is_none());

    // A local pod's name is the device owner's: the cluster pod of that name is refused,
    // the local one keeps running untouched.
    namespace(kube, agent_support::NS);
    n.apply(&agent_support::pod(
        "dup",
        json!({"containers": [
        agent_support::sh("main", n.image(), "exec sleep 3600")]}),
    ));
    let local = n.wait_running("dup", START);
    let local_uid = local["metadata"]["uid"].clone();
    kube.apply(
        &kpod(
            NODE,
            agent_support::NS,
            "dup",
            json!({"containers": [sh("main", "exec sleep 3600")]}),
        )
        .to_string(),
    );
    let p = wait_api(kube, n, agent_support::NS, "dup", "Failed", START, |p| {
        p["status"]["phase"] == "Failed"
    });
    assert_eq!(
        p["status"]["reason"], "LocalPodNameConflict",
        "{}",
        p["status"]
    );
    holds_for(
        "the local pod keeps running",
        Duration::from_secs(3),
        || {
            let l = local_view(n, agent_support::NS, "dup")?;
            (l["metadata"]["uid"] != local_uid || !running_ready(&l))
                .then(|| format!("{}", l["status"]))
        },
    );
    n.delete_pod("dup");

    // The node still runs what it can.
    kube.apply(
        &kpod(
            NODE,
            ns,
            "fine",
            json!({"containers": [sh("main", "exec sleep 3600")]}),
        )
        .to_string(),
    );
    wait_api(kube, n, ns, "fine", "Running", START, running_ready);
}

/// The object watch of a node whose credentials are not the pod's node's: the Node
/// authorizer refuses the secret (403), which is logged once and tried again slowly.
#[test]
fn a_secret_the_node_may_not_read_is_logged_once_and_retried() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let victim = "tl-victim";
    register(kube, victim);
    let ns = "forbidden";
    namespace(kube, ns);
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "victim-secret", "namespace": ns},
                "stringData": {"k": "v"}})
        .to_string(),
    );
    let mut main = sh("main", "exec sleep 3600");
    main["env"] = json!([{"name": "K", "valueFrom": {"secretKeyRef": {"name": "victim-secret", "key": "k"}}}]);
    kube.apply(&kpod(victim, ns, "theirs", json!({"containers": [main]})).to_string());
    // This device's credentials are another node's; its config claims the victim's name.
    let intruder = kube.node_identity("tl-intruder");
    let n = Node::new(&c, "intruder");
    n.set_config("nodeName", json!(victim));
    n.set_config("apiServer", json!({"kubeconfig": intruder.kubeconfig}));
    n.start_agent();
    let said = "secret forbidden/victim-secret: the API server refuses to show it to this node";
    let log = || std::fs::read_to_string(n.agent_log_path()).unwrap_or_default();
    wait_for("the refusal is logged", START, || {
        log().contains(said).then_some(())
    });
    // Retried (5 s, then 10 s) without saying it again, and without a crash loop.
    wait_for("two more tries", Duration::from_secs(40), || {
        (log().matches("victim-secret: still refused").count() >= 2).then_some(())
    });
    assert_eq!(log().matches(said).count(), 1, "{}", n.agent_log_tail());
    n.assert_agent_alive();
    assert!(!cluster_file(&n, "secrets", ns, "victim-secret").exists());
    assert!(
        !log().contains("dg==") && !log().contains("\"v\""),
        "secret data in the log"
    );
    n.kill_agent();
}

/// A snapshot of a directory tree: every entry's inode, size and modification time.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (u64, u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if m.is_dir() {
                todo.push(e.path());
            }
            out.insert(e.path(), (m.ino(), m.len(), m.modified().unwrap()));
        }
        if let Ok(m) = std::fs::metadata(&d) {
            out.insert(d.clone(), (m.ino(), 0, m.modified().unwrap()));
        }
    }
    out
}

/// Healthy cluster pods cost the flash nothing: over a steady minute (with our own
/// status patches and another client's status change echoed back by the watch, one pod
/// with a service-account token) not one file or directory of the state directory
/// changes.
#[test]
fn steady_cluster_pods_write_nothing_to_the_state_directory() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let name = "tl-quiet";
    let n = join(kube, &c, name);
    let ns = "quiet";
    namespace(kube, ns);
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": ns}, "data": {"a": "1"}})
        .to_string(),
    );
    n.start_agent();
    for i in 0..3 {
        let mut main = sh("main", "exec sleep 3600");
        main["volumeMounts"] = json!([{"name": "cfg", "mountPath": "/cfg"}]);
        let spec = json!({"containers": [main],
                          "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]});
        // The last one a default pod: its token is held in memory, never written here.
        let pod = match i {
            2 => default_pod(name, ns, &format!("q{i}"), spec),
            _ => kpod(name, ns, &format!("q{i}"), spec),
        };
        kube.apply(&pod.to_string());
    }
    for i in 0..3 {
        wait_api(
            kube,
            &n,
            ns,
            &format!("q{i}"),
            "Running",
            START,
            running_ready,
        );
    }
    // Settled: what the node last wrote of each pod is what the API shows.
    let state = n.dir.join("state");
    for i in 0..3 {
        let name = format!("q{i}");
        wait_for("the API to show the node's last status", START, || {
            let local = local_view(&n, ns, &name)?;
            let api = api_pod(kube, ns, &name)?;
            let same = |p: &Value| {
                (
                    p["status"]["phase"].clone(),
                    p["status"]["podIP"].clone(),
                    p["status"]["containerStatuses"][0]["containerID"].clone(),
                    p["status"]["containerStatuses"][0]["ready"].clone(),
                )
            };
            (same(&local) == same(&api)).then_some(())
        });
    }
    // The pressure check's first record (10 s after start, once per fresh state
    // directory) is part of starting, not of the steady state.
    wait_for("the first pressure check's record", START, || {
        state.join("node-pressure.json").exists().then_some(())
    });
    let before = tree(&state);
    // Another client changes the status (a condition of its own): the echo writes nothing.
    let gate = json!({"status": {"conditions": [{"type": "example.com/Gate", "status": "True"}]}});
    patch_status_as_admin(kube, ns, "q0", &gate);
    holds_for(
        "the state directory stays untouched",
        Duration::from_secs(60),
        || {
            let now = tree(&state);
            (now != before).then(|| {
                let changed: Vec<&PathBuf> = now
                    .iter()
                    .filter(|(p, v)| before.get(*p) != Some(v))
                    .map(|(p, _)| p)
                    .chain(before.keys().filter(|p| !now.contains_key(*p)))
                    .collect();
                format!("changed: {changed:?}")
            })
        },
    );
    let p = api_pod(kube, ns, "q0").unwrap();
    assert_eq!(
        condition(&p, "example.com/Gate"),
        "True",
        "another owner's condition is kept"
    );
    n.kill_agent();
}

/// Another writer marks a running pod not Ready, as the node lifecycle controller does
/// while it thinks the node is gone (after an API-server restart, say, when the node
/// listed before the controller wrote): the node sends its own status again from the
/// watch event, without waiting for a relist, and only once (no loop of patches).
#[test]
fn a_status_another_writer_changed_is_set_right_by_the_next_watch_event() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let name = "tl-drift";
    let n = join(kube, &c, name);
    let ns = "drift";
    namespace(kube, ns);
    n.start_agent();
    let spec = json!({"containers": [sh("main", "exec sleep 3600")]});
    kube.apply(&kpod(name, ns, "d0", spec).to_string());
    wait_api(kube, &n, ns, "d0", "Running", START, running_ready);
    let not_ready = json!({"status": {"conditions": [{
        "type": "Ready", "status": "False", "reason": "NodeNotReady",
        "message": "marked by the test as the node lifecycle controller does",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    patch_status_as_admin(kube, ns, "d0", &not_ready);
    let back = wait_api(
        kube,
        &n,
        ns,
        "d0",
        "Ready again",
        Duration::from_secs(20),
        running_ready,
    );
    let version = back["metadata"]["resourceVersion"].clone();
    holds_for(
        "the pod's object stays as the node left it",
        Duration::from_secs(5),
        || {
            let now = api_pod(kube, ns, "d0")?;
            let v = &now["metadata"]["resourceVersion"];
            (*v != version).then(|| format!("changed again: {v} after {version}"))
        },
    );
    assert!(
        std::fs::read_to_string(n.agent_log_path())
            .unwrap_or_default()
            .contains("the API shows a status the node did not send"),
        "the agent does not say why it patched again:\n{}",
        n.agent_log_tail()
    );
    n.kill_agent();
}

/// PATCH of a pod's status subresource as the admin.
fn patch_status_as_admin(kube: &Kube, ns: &str, name: &str, body: &Value) {
    let path = format!("/api/v1/namespaces/{ns}/pods/{name}/status");
    kube.patch_as_admin(&path, &body.to_string());
}

/// With the relay cut: kubectl deletes pod `gone` (uid `uid`) and sets configMap `cfg`'s
/// `v` to "after"; for 2 s the node, not hearing of it, keeps the pod running.
fn change_while_cut(kube: &Kube, cri: &agent_support::Cri, ns: &str, gone: &str, uid: &str) {
    kube.kubectl_ok(&["delete", "pod", gone, "-n", ns, "--wait=false"]);
    let patch = r#"{"data":{"v":"after"}}"#;
    kube.kubectl_ok(&["patch", "configmap", "cfg", "-n", ns, "-p", patch]);
    holds_for(
        "without the uplink the deleted pod keeps running",
        Duration::from_secs(2),
        || {
            let running = cri
                .containers(uid)
                .iter()
                .any(agent_support::container_running);
            (!running).then(|| "the deleted pod stopped without the uplink".to_string())
        },
    );
}

/// The uplink cut (through the harness's relay): the pods keep running and a killed
/// container restarts, with the API none the wiser; a pod deleted and a configMap
/// changed with kubectl meanwhile. The relay restored: the deleted pod is stopped and
/// gone from the API, the configMap reaches the file, the restart shows in the API.
#[test]
fn uplink_cut_and_back_the_node_catches_up() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let relay = kube.relay();
    let name = "tl-cut";
    register(kube, name);
    let n = Node::joining(&c, &relay.node_identity(name));
    let ns = "cut";
    namespace(kube, ns);
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": ns}, "data": {"v": "before"}})
        .to_string(),
    );
    n.start_agent();
    let mut main = sh("main", "exec sleep 3600");
    main["volumeMounts"] = json!([{"name": "cfg", "mountPath": "/cfg"}]);
    let spec =
        json!({"containers": [main], "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]});
    kube.apply(&kpod(name, ns, "keep", spec).to_string());
    kube.apply(
        &kpod(
            name,
            ns,
            "drop",
            json!({"containers": [sh("main", "exec sleep 3600")]}),
        )
        .to_string(),
    );
    let keep = wait_api(kube, &n, ns, "keep", "Running", START, running_ready);
    let dropped = wait_api(kube, &n, ns, "drop", "Running", START, running_ready);
    let drop_uid = dropped["metadata"]["uid"].as_str().unwrap().to_string();

    relay.cut();
    let id_of = |p: &Value| {
        cstatus(p, "main")["containerID"]
            .as_str()
            .unwrap()
            .rsplit("://")
            .next()
            .unwrap()
            .to_string()
    };
    c.ctr_ok(&[
        "-n",
        "k8s.io",
        "tasks",
        "kill",
        "-s",
        "SIGKILL",
        &id_of(&keep),
    ]);
    wait_for("the node restarts the container", START, || {
        let l = local_view(&n, ns, "keep")?;
        (cstatus(&l, "main")["restartCount"] == 1 && running_ready(&l)).then_some(())
    });
    let cri = n.cri();
    change_while_cut(kube, &cri, ns, "drop", &drop_uid);
    assert_eq!(
        cstatus(&api_pod(kube, ns, "keep").unwrap(), "main")["restartCount"],
        0,
        "the API cannot know yet"
    );

    relay.restore();
    let back = Instant::now();
    wait_api(kube, &n, ns, "keep", "showing the restart", START, |p| {
        cstatus(p, "main")["restartCount"] == 1 && running_ready(p)
    });
    let current = back.elapsed();
    wait_for("the deleted pod is gone from the API", START, || {
        api_pod(kube, ns, "drop").is_none().then_some(())
    });
    assert!(cri.containers(&drop_uid).is_empty() && cri.sandboxes(&drop_uid).is_empty());
    wait_exec(&n, ns, "keep", &["cat", "/cfg/v"], |o| o == "after");
    eprintln!(
        "uplink back: restart shown in the API after {current:?}, all caught up after {:?}",
        back.elapsed()
    );
    n.kill_agent();
}

/// A pod as a current cluster makes it: `automountServiceAccountToken` left to the
/// ServiceAccount admission, which adds the projected `kube-api-access-*` volume.
fn default_pod(node: &str, ns: &str, name: &str, spec: Value) -> Value {
    let mut pod = kpod(node, ns, name, spec);
    pod["spec"]
        .as_object_mut()
        .unwrap()
        .remove("automountServiceAccountToken");
    pod
}

/// Where the ServiceAccount admission mounts the kube-api-access-* volume.
const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The claims of a JWT (three dot-separated base64url parts), panicking with the
/// reason when `token` is not one.
fn jwt_claims(token: &str) -> Value {
    let parts: Vec<&str> = token.split('.').collect();
    let base64url = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    assert!(
        parts.len() == 3 && parts.iter().all(|p| base64url(p)),
        "not a JWT: {} bytes, {} parts",
        token.len(),
        parts.len()
    );
    let mut std = parts[1].replace('-', "+").replace('_', "/");
    while std.len() % 4 != 0 {
        std.push('=');
    }
    let payload = tinylet::model::base64::decode(&std).expect("the payload is base64url");
    serde_json::from_slice(&payload).expect("the payload is JSON")
}

/// Asserts the claims of a token bound to pod `p` of service account `default`.
fn assert_bound_to(claims: &Value, p: &Value) {
    let ns = p["metadata"]["namespace"].as_str().unwrap();
    let k = &claims["kubernetes.io"];
    assert_eq!(k["namespace"], ns, "{claims}");
    assert_eq!(k["pod"]["name"], p["metadata"]["name"], "{claims}");
    assert_eq!(k["pod"]["uid"], p["metadata"]["uid"], "{claims}");
    assert_eq!(k["serviceaccount"]["name"], "default", "{claims}");
    assert_eq!(
        claims["sub"],
        format!("system:serviceaccount:{ns}:default"),
        "{claims}"
    );
}

/// Every file below `dir` that contains `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    tree(dir)
        .into_keys()
        .filter(|p| std::fs::read(p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle)))
        .collect()
}

/// A default pod of a current cluster runs: its token is a JWT bound to the pod, which
/// the API server accepts, beside the cluster's CA and the namespace; a second projected
/// token (600 s, the API server's minimum, another audience) is there too. Tokens are
/// held in memory and written only to the pod's volume (a tmpfs), never to the state
/// directory. (A refresh replaces the token in place, as an agent restart shows in
/// `service_account_tokens_survive_agent_restarts_and_come_after_an_offline_reboot`;
/// its schedule is a unit test of `uplink::tokens_refresh`.)
#[test]
fn a_default_pod_runs_with_its_service_account_token() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "tokens";
    namespace(kube, ns);
    let mut main = sh("main", "exec sleep 3600");
    main["volumeMounts"] = json!([{"name": "vault", "mountPath": "/vault"}]);
    let vault = json!({"name": "vault", "projected": {"sources": [{"serviceAccountToken":
        {"path": "token", "audience": "vault", "expirationSeconds": 600}}]}});
    let spec = json!({"containers": [main], "volumes": [vault]});
    let started = Instant::now();
    kube.apply(&default_pod(NODE, ns, "default-sa", spec).to_string());
    let p = wait_api(kube, n, ns, "default-sa", "Running", START, running_ready);
    eprintln!(
        "default pod Running in the API after {:?}",
        started.elapsed()
    );
    let volumes = p["spec"]["volumes"].to_string();
    assert!(volumes.contains("kube-api-access-"), "{volumes}");

    let cat = |path: &str| wait_exec(n, ns, "default-sa", &["cat", path], |o| !o.is_empty());
    let token = cat(&format!("{SA_DIR}/token"));
    let claims = jwt_claims(&token);
    assert_bound_to(&claims, &p);
    assert_eq!(cat(&format!("{SA_DIR}/namespace")), ns);
    let ca = kube.kubectl_ok(&[
        "get",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        ns,
        "-o",
        "jsonpath={.data.ca\\.crt}",
    ]);
    assert!(ca.contains("BEGIN CERTIFICATE"), "{ca}");
    assert_eq!(cat(&format!("{SA_DIR}/ca.crt")).trim(), ca.trim());

    // The API server takes it: the request is the service account's (which may not
    // list pods: 403, not 401).
    let out = std::process::Command::new("curl")
        .args(["-sS", "--cacert"])
        .arg(kube.ca_file())
        .arg("-H")
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("{}/api/v1/namespaces/{ns}/pods", kube.api_url()))
        .output()
        .expect("curl");
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(
        answer.contains(&format!("system:serviceaccount:{ns}:default"))
            && answer.contains("\"code\": 403"),
        "{answer}"
    );

    // The other source: its own audience and the lifetime asked for.
    let vault = jwt_claims(&cat("/vault/token"));
    assert_bound_to(&vault, &p);
    assert_eq!(vault["aud"], json!(["vault"]), "{vault}");
    let life = vault["exp"].as_i64().unwrap() - vault["iat"].as_i64().unwrap();
    assert_eq!(life, 600, "{vault}");

    let state = n.dir.join("state");
    for t in [&token, &cat("/vault/token")] {
        let signature = t.rsplit('.').next().unwrap();
        let found = files_containing(&state, signature.as_bytes());
        assert!(
            found.is_empty(),
            "a token in the state directory: {found:?}"
        );
    }
    kube.kubectl_ok(&["delete", "pod", "default-sa", "-n", ns, "--wait=false"]);
}

/// Mount points at or below `dir`, deepest first.
fn mounts_below(dir: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let dir = dir.to_str().unwrap();
    let mut found: Vec<String> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| m.starts_with(dir))
        .map(str::to_string)
        .collect();
    found.sort_by_key(|m| std::cmp::Reverse(m.len()));
    found
}

/// A cluster pod's token across the agent's and the device's restarts, the uplink cut:
/// after an agent restart the token the volume shows is kept (nothing to overwrite it
/// with) and replaced in place by a new one once the cluster answers; after a reboot
/// (the volume's tmpfs gone) the pod runs within 10 s with an empty token file, filled
/// in place when the uplink is back. The container is never restarted for a token.
#[test]
fn service_account_tokens_survive_agent_restarts_and_come_after_an_offline_reboot() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let relay = kube.relay();
    let name = "tl-tokens";
    register(kube, name);
    let n = Node::joining(&c, &relay.node_identity(name));
    let ns = "token-restarts";
    namespace(kube, ns);
    n.start_agent();
    let pod = default_pod(
        name,
        ns,
        "sa",
        json!({"containers": [sh("main", "exec sleep 3600")]}),
    );
    kube.apply(&pod.to_string());
    let p = wait_api(kube, &n, ns, "sa", "Running", START, running_ready);
    let token_file = format!("{SA_DIR}/token");
    let read_token = || {
        let out = n.tinylet(&[
            "exec",
            &format!("{ns}/sa"),
            "-c",
            "main",
            "--",
            "cat",
            &token_file,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = wait_exec(&n, ns, "sa", &["cat", &token_file], |o| !o.is_empty());
    assert_bound_to(&jwt_claims(&first), &p);
    let container = |l: &Value| {
        cstatus(l, "main")["containerID"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let before = container(&local_view(&n, ns, "sa").unwrap());

    // Agent restart, uplink cut: the volume keeps its token, well past the wait a new
    // pod gets for its first one.
    relay.cut();
    n.kill_agent();
    n.start_agent();
    holds_for("the token is kept", Duration::from_secs(5), || {
        let t = read_token();
        (t != first).then(|| format!("the token file changed ({} bytes)", t.len()))
    });
    relay.restore();
    let back = Instant::now();
    let second = wait_exec(&n, ns, "sa", &["cat", &token_file], |o| {
        !o.is_empty() && o != first
    });
    eprintln!(
        "uplink back: a new token in the volume after {:?}",
        back.elapsed()
    );
    let claims = jwt_claims(&second);
    assert_bound_to(&claims, &p);
    assert!(claims["iat"].as_i64() > jwt_claims(&first)["iat"].as_i64());
    let l = local_view(&n, ns, "sa").unwrap();
    assert_eq!(container(&l), before, "the container was not restarted");
    assert_eq!(cstatus(&l, "main")["restartCount"], 0);

    // Device reboot without the uplink: containers and tmpfs mounts gone.
    relay.cut();
    n.kill_agent();
    c.reboot();
    for m in mounts_below(&n.dir.join("pods")) {
        let ok = std::process::Command::new("umount")
            .arg(&m)
            .status()
            .unwrap();
        assert!(ok.success(), "umount {m}");
    }
    let boot = Instant::now();
    n.start_agent();
    let l = wait_for("the pod runs again without the uplink", START, || {
        local_view(&n, ns, "sa").filter(|l| running_ready(l) && container(l) != before)
    });
    let running_after = boot.elapsed();
    eprintln!("offline reboot: the pod Running {running_after:?} after the agent started");
    assert!(
        running_after <= Duration::from_secs(10),
        "{running_after:?}"
    );
    let rebooted = container(&l);
    let size = |f: &str| {
        let cmd = format!("wc -c < {SA_DIR}/{f}");
        wait_exec(&n, ns, "sa", &["sh", "-c", &cmd], |o| !o.is_empty())
            .trim()
            .to_string()
    };
    assert_eq!(size("token"), "0", "no token yet: an empty file");
    assert_ne!(size("ca.crt"), "0", "the cached kube-root-ca.crt");
    wait_exec(
        &n,
        ns,
        "sa",
        &["cat", &format!("{SA_DIR}/namespace")],
        |o| o == ns,
    );
    relay.restore();
    let back = Instant::now();
    let third = wait_exec(&n, ns, "sa", &["cat", &token_file], |o| !o.is_empty());
    eprintln!(
        "uplink back after the reboot: the token in the volume after {:?}",
        back.elapsed()
    );
    assert_bound_to(&jwt_claims(&third), &p);
    let l = local_view(&n, ns, "sa").unwrap();
    assert_eq!(container(&l), rebooted, "filled in place, not restarted");
    assert!(running_ready(&l));
    n.kill_agent();
}

/// A pod as a v1.20 cluster without bound tokens makes it: the ServiceAccount admission
/// adds the `default-token-*` secret volume, which runs as a plain secret volume.
#[test]
fn v1_20_default_token_secret_volume_runs_unchanged() {
    let kube = Kube::start_with_bound_tokens(false);
    let c = Containerd::start();
    let name = "tl-legacy";
    let n = join(&kube, &c, name);
    let ns = "legacy";
    namespace(&kube, ns);
    n.start_agent();
    let mut pod = kpod(
        name,
        ns,
        "sa",
        json!({"containers": [sh("main", "exec sleep 3600")]}),
    );
    pod["spec"]
        .as_object_mut()
        .unwrap()
        .remove("automountServiceAccountToken");
    kube.apply(&pod.to_string());
    let p = wait_api(&kube, &n, ns, "sa", "Running", START, running_ready);
    let volumes = p["spec"]["volumes"].to_string();
    assert!(volumes.contains("default-token-"), "{volumes}");
    let dir = "/var/run/secrets/kubernetes.io/serviceaccount";
    wait_exec(&n, ns, "sa", &["cat", &format!("{dir}/namespace")], |o| {
        o == ns
    });
    wait_exec(
        &n,
        ns,
        "sa",
        &["sh", "-c", &format!("test -s {dir}/token && echo ok")],
        |o| o.trim() == "ok",
    );
    n.kill_agent();
}

/// The device reboots while the uplink is cut: the agent comes back (runtime state
/// wiped, as /run on a device) and runs every cached pod again — cluster pods with their
/// cached configMap and secret, and a local pod — without the API. A pod deleted and a
/// configMap changed with kubectl meanwhile; the relay restored: the deleted pod stops
/// and leaves the API, the change reaches the file, the API shows the containers that
/// run (no extra restart).
#[test]
fn reboot_without_uplink_runs_every_cached_pod_and_catches_up() {
    let kube = Kube::shared();
    let c = Containerd::start();
    let relay = kube.relay();
    let name = "tl-boot";
    register(kube, name);
    let n = Node::joining(&c, &relay.node_identity(name));
    let ns = "boot";
    namespace(kube, ns);
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": ns}, "data": {"v": "before"}})
        .to_string(),
    );
    kube.apply(
        &json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "sec", "namespace": ns}, "stringData": {"k": "s3cr3t"}})
        .to_string(),
    );
    n.start_agent();
    let mut main = sh("main", "exec sleep 3600");
    main["volumeMounts"] = json!([{"name": "cfg", "mountPath": "/cfg"}]);
    main["env"] =
        json!([{"name": "K", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "k"}}}]);
    let spec =
        json!({"containers": [main], "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]});
    kube.apply(&kpod(name, ns, "vol", spec).to_string());
    let plain = json!({"containers": [sh("main", "exec sleep 3600")]});
    kube.apply(&kpod(name, ns, "plain", plain).to_string());
    namespace(kube, agent_support::NS);
    n.apply(&agent_support::pod(
        "local",
        json!({"containers": [agent_support::sh("main", n.image(), "exec sleep 3600")]}),
    ));
    let cluster = ["vol", "plain"];
    for pod in cluster {
        wait_api(kube, &n, ns, pod, "Running", START, running_ready);
    }
    let local_before = n.wait_running("local", START);
    let plain_uid = api_pod(kube, ns, "plain").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let cid = |p: &Value| cstatus(p, "main")["containerID"].as_str().map(String::from);
    let before: Vec<_> = cluster
        .iter()
        .map(|pod| cid(&local_view(&n, ns, pod).unwrap()))
        .collect();

    relay.cut();
    n.kill_agent();
    c.reboot();
    let booted = Instant::now();
    n.start_agent();
    let mut after = Vec::new();
    for (pod, old) in cluster.iter().zip(&before) {
        let p = wait_for("a cluster pod runs again without the uplink", START, || {
            let l = local_view(&n, ns, pod)?;
            (running_ready(&l) && cid(&l) != *old).then_some(l)
        });
        after.push(cid(&p));
    }
    n.wait_pod("local", "running again", START, |p| {
        agent_support::is_running_ready(p) && cid(p) != cid(&local_before)
    });
    eprintln!(
        "reboot without uplink: every pod Running {:?} after the agent started",
        booted.elapsed()
    );
    wait_exec(&n, ns, "vol", &["cat", "/cfg/v"], |o| o == "before");
    wait_exec(&n, ns, "vol", &["sh", "-c", "echo $K"], |o| {
        o.trim() == "s3cr3t"
    });

    let cri = n.cri();
    change_while_cut(kube, &cri, ns, "plain", &plain_uid);

    relay.restore();
    let back = Instant::now();
    let shown = wait_api(
        kube,
        &n,
        ns,
        "vol",
        "showing the new container",
        START,
        |p| running_ready(p) && cid(p) == after[0],
    );
    wait_for("the deleted pod is gone from the API", START, || {
        api_pod(kube, ns, "plain").is_none().then_some(())
    });
    wait_for("the deleted pod is gone from the runtime", START, || {
        (cri.containers(&plain_uid).is_empty() && cri.sandboxes(&plain_uid).is_empty())
            .then_some(())
    });
    wait_exec(&n, ns, "vol", &["cat", "/cfg/v"], |o| o == "after");
    eprintln!("uplink back: all caught up after {:?}", back.elapsed());
    let now = local_view(&n, ns, "vol").unwrap();
    assert_eq!(cid(&now), after[0], "no restart when the uplink came back");
    assert_eq!(
        cstatus(&now, "main")["restartCount"],
        cstatus(&shown, "main")["restartCount"],
        "the API shows the node's restart count"
    );
    n.kill_agent();
}

/// What an operator does with plain kubectl: a Deployment and a DaemonSet pinned to the
/// node, placed by the real scheduler and the controllers (no tolerations: the node
/// must be Ready and untainted; the default service account's `kube-api-access-*`
/// volume, as every default pod has), reach their ready counts; scaled to zero and deleted,
/// their pods stop on the node and leave the API.
#[test]
fn deployments_and_daemonsets_run_through_the_scheduler() {
    let (kube, n) = (Kube::shared(), node());
    let ns = "workloads";
    namespace(kube, ns);
    let template = |app: &str| {
        json!({
            "metadata": {"labels": {"app": app}},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": NODE},
                "terminationGracePeriodSeconds": 2,
                "containers": [sh("main", "exec sleep 3600")]
            }
        })
    };
    let workload = |kind: &str, app: &str, extra: Value| {
        let mut spec = json!({"selector": {"matchLabels": {"app": app}},
                              "template": template(app)});
        if let (Some(s), Value::Object(e)) = (spec.as_object_mut(), extra) {
            s.extend(e);
        }
        json!({"apiVersion": "apps/v1", "kind": kind,
               "metadata": {"name": app, "namespace": ns}, "spec": spec})
        .to_string()
    };
    let started = Instant::now();
    kube.apply(&workload("Deployment", "web", json!({"replicas": 2})));
    kube.apply(&workload("DaemonSet", "agent", json!({})));
    let ready = |kind: &str, name: &str, field: &str, want: i64| {
        wait_for(&format!("{kind} {name}: {field} {want}"), START, || {
            let out = kube.kubectl(&["get", kind, name, "-n", ns, "-o", "json"]);
            let v: Value = serde_json::from_slice(&out.stdout).ok()?;
            (v["status"][field].as_i64().unwrap_or(0) == want).then_some(())
        })
    };
    ready("deployment", "web", "readyReplicas", 2);
    ready("daemonset", "agent", "numberReady", 1);
    eprintln!(
        "deployment (2) and daemonset (1) ready after {:?}",
        started.elapsed()
    );
    let pods = |app: &str| -> Vec<Value> {
        let out = kube.kubectl_ok(&[
            "get",
            "pods",
            "-n",
            ns,
            "-l",
            &format!("app={app}"),
            "-o",
            "json",
        ]);
        let v: Value = serde_json::from_str(&out).unwrap_or_default();
        v["items"].as_array().cloned().unwrap_or_default()
    };
    let web = pods("web");
    assert_eq!(web.len(), 2);
    for p in web.iter().chain(pods("agent").iter()) {
        assert_eq!(p["spec"]["nodeName"], NODE, "placed by the scheduler");
        let name = p["metadata"]["name"].as_str().unwrap();
        let local = local_view(n, ns, name).expect("the node runs the pod");
        assert!(running_ready(&local), "{}", local["status"]);
    }

    let cri = n.cri();
    let uids: Vec<String> = web
        .iter()
        .map(|p| p["metadata"]["uid"].as_str().unwrap().to_string())
        .collect();
    kube.kubectl_ok(&["scale", "deployment", "web", "-n", ns, "--replicas=0"]);
    kube.kubectl_ok(&["delete", "daemonset", "agent", "-n", ns, "--wait=false"]);
    wait_for("the workloads' pods leave the API", START, || {
        (pods("web").is_empty() && pods("agent").is_empty()).then_some(())
    });
    for uid in &uids {
        assert!(cri.containers(uid).is_empty() && cri.sandboxes(uid).is_empty());
    }
    kube.kubectl_ok(&["delete", "deployment", "web", "-n", ns]);
}
