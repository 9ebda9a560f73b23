//! End-to-end tests of `tinylet run` on the harness's shared private containerd, with one
//! agent for the whole binary (several agents on one runtime would remove each other's
//! pods as orphans). Each test applies its own pods with `tinylet apply`, then polls
//! `tinylet get pod -o json`, `tinylet exec` and the CRI until the expected state.
//!
//! Covered here: start to Running, exit codes under each restart policy with the
//! crash-loop back-off growing, init containers (order, failure), env, emptyDir,
//! hostPath, configMap and secret volumes (and a configMap update), a refused hostPath,
//! a spec update replacing the container, delete with the grace period and preStop hook,
//! an image that cannot be pulled. Tests that restart the agent or the runtime own their
//! runtime: see e2e_restart.rs.

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The node shared by the tests of this binary; its agent is started once, from a thread
/// that lives as long as the process (the agent dies with it: PR_SET_PDEATHSIG).
fn node() -> &'static Node {
    static NODE: OnceLock<&'static Node> = OnceLock::new();
    NODE.get_or_init(|| {
        agent_support::node_for_the_process(|| {
            let node = Node::new(Containerd::shared(), "shared");
            node.start_agent();
            node
        })
    })
}

const START: Duration = Duration::from_secs(40);

#[test]
fn pod_starts_and_runs() {
    let n = node();
    let c = Containerd::shared();
    n.apply(&pod(
        "web",
        json!({"containers": [sh("main", n.image(), "echo hello; exec sleep 3600")]}),
    ));
    let p = n.wait_running("web", START);
    assert_eq!(condition(&p, "PodScheduled"), "True");
    assert_eq!(condition(&p, "Initialized"), "True");
    assert_eq!(condition(&p, "ContainersReady"), "True");
    let st = cstatus(&p, "main");
    assert_eq!(st["ready"], true);
    assert_eq!(st["restartCount"], 0);
    assert!(st["state"]["running"]["startedAt"].is_string(), "{st}");
    assert!(!st["imageID"].as_str().unwrap_or("").is_empty(), "{st}");
    assert!(p["status"]["startTime"].is_string());
    // The pod network of the instance gave the pod its IP.
    let ip = p["status"]["podIP"].as_str().unwrap_or("");
    let prefix = c.cni_subnet().rsplit_once('.').unwrap().0;
    assert!(
        ip.starts_with(&format!("{prefix}.")),
        "podIP {ip:?} not in {}",
        c.cni_subnet()
    );
    // The runtime agrees: one ready sandbox, one running container with our labels.
    let uid = n.uid("web");
    let cri = n.cri();
    let sandboxes = cri.sandboxes(&uid);
    assert_eq!(sandboxes.len(), 1, "{sandboxes:?}");
    assert!(sandbox_ready(&sandboxes[0]));
    let containers = cri.containers(&uid);
    assert_eq!(containers.len(), 1, "{containers:?}");
    assert!(container_running(&containers[0]));
    assert_eq!(containers[0].id, container_id(&p, "main"));
    assert_eq!(
        containers[0]
            .labels
            .get("io.kubernetes.container.name")
            .map(String::as_str),
        Some("main")
    );
    // Its output reached the CRI log file under podLogsDir/NS_NAME_UID/main/0.log.
    let log = n
        .dir
        .join("logs")
        .join(format!("{NS}_web_{uid}"))
        .join("main/0.log");
    let text = wait_for("the container's log file", START, || {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|t| t.contains("hello"))
    });
    assert!(text.contains("stdout F hello"), "{text}");
    assert_eq!(n.exec("web", "main", &["echo", "inside"]).1, "inside\n");
}

#[test]
fn always_restarts_with_growing_crash_loop_backoff() {
    let n = node();
    n.apply(&pod(
        "crashloop",
        json!({"containers": [sh("crash", n.image(), "echo try; exit 1")]}),
    ));
    // kubelet's back-off: the first restart at once, then 10 s after the next exit, then 20 s.
    let p = n.wait_pod(
        "crashloop",
        "restarted 3 times",
        Duration::from_secs(60),
        |p| restarts(p, "crash") >= 3,
    );
    let uid = n.uid("crashloop");
    let cri = n.cri();
    // From the runtime: when each attempt was created and when it exited.
    let mut attempts: Vec<(u32, i64, i64)> = cri
        .containers(&uid)
        .iter()
        .map(|c| {
            let st = cri.container_status(&c.id);
            (
                c.metadata.as_ref().map_or(0, |m| m.attempt),
                st.created_at,
                st.finished_at,
            )
        })
        .collect();
    attempts.sort();
    let got: Vec<u32> = attempts.iter().map(|a| a.0).collect();
    assert!(got.starts_with(&[0, 1, 2, 3]), "attempts {got:?}");
    let pause = |k: usize| Duration::from_nanos((attempts[k + 1].1 - attempts[k].2).max(0) as u64);
    let (first, second, third) = (pause(0), pause(1), pause(2));
    assert!(
        first < Duration::from_secs(5),
        "first restart at once, took {first:?}"
    );
    assert!(
        second >= Duration::from_secs(10),
        "back-off {second:?} < 10 s after the exit"
    );
    assert!(
        second < Duration::from_secs(15),
        "back-off {second:?} far above 10 s"
    );
    assert!(
        third >= Duration::from_secs(20),
        "back-off {third:?} < 20 s after the exit"
    );
    assert!(
        third < Duration::from_secs(25),
        "back-off {third:?} far above 20 s"
    );
    assert_eq!(
        phase(&p),
        "Running",
        "a restarting pod under Always is Running"
    );
    assert_eq!(
        cstatus(&p, "crash")["lastState"]["terminated"]["exitCode"],
        1
    );
    // While it backs off, the container waits in CrashLoopBackOff with kubelet's message.
    let p = n.wait_pod(
        "crashloop",
        "in CrashLoopBackOff",
        Duration::from_secs(30),
        |p| cstatus(p, "crash")["state"]["waiting"]["reason"] == "CrashLoopBackOff",
    );
    let msg = cstatus(&p, "crash")["state"]["waiting"]["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_eq!(
        msg,
        format!("back-off 40s restarting failed container=crash pod=crashloop_{NS}({uid})")
    );
    n.delete_pod("crashloop");
}

#[test]
fn on_failure_and_never_exit_codes() {
    let n = node();
    let img = n.image();
    n.apply(&pod(
        "onf-ok",
        json!({"restartPolicy": "OnFailure", "containers": [sh("c", img, "exit 0")]}),
    ));
    n.apply(&pod(
        "onf-fail",
        json!({"restartPolicy": "OnFailure", "containers": [sh("c", img, "exit 3")]}),
    ));
    n.apply(&pod(
        "never-fail",
        json!({"restartPolicy": "Never", "containers": [sh("c", img, "exit 3")]}),
    ));
    let ok = n.wait_pod("onf-ok", "Succeeded", START, |p| phase(p) == "Succeeded");
    let t = &cstatus(&ok, "c")["state"]["terminated"];
    assert_eq!(t["exitCode"], 0, "{t}");
    assert_eq!(t["reason"], "Completed", "{t}");
    n.wait_pod("onf-fail", "restarted", START, |p| restarts(p, "c") >= 1);
    let failed = n.wait_pod("never-fail", "Failed", START, |p| phase(p) == "Failed");
    let t = &cstatus(&failed, "c")["state"]["terminated"];
    assert_eq!(t["exitCode"], 3, "{t}");
    assert_eq!(t["reason"], "Error", "{t}");
    // Over some relists: neither the Never pod nor the Succeeded pod is restarted.
    let cri = n.cri();
    let uids = [n.uid("never-fail"), n.uid("onf-ok")];
    holds_for(
        "finished pods never restarted",
        Duration::from_secs(3),
        || {
            for (name, uid) in ["never-fail", "onf-ok"].iter().zip(&uids) {
                let p = n.pod(name).unwrap();
                if restarts(&p, "c") != 0 {
                    return Some(format!("{name} restarted: {}", p["status"]));
                }
                let made = cri.containers(uid).len();
                if made != 1 {
                    return Some(format!("{name}: {made} containers, want 1"));
                }
            }
            None
        },
    );
    let p = n.pod("onf-fail").unwrap();
    assert_ne!(
        phase(&p),
        "Failed",
        "OnFailure keeps restarting: {}",
        p["status"]
    );
    for name in ["onf-ok", "onf-fail", "never-fail"] {
        n.delete_pod(name);
    }
}

#[test]
fn init_containers_run_in_order_before_the_app() {
    let n = node();
    let img = n.image();
    let mount = json!([{"name": "work", "mountPath": "/work"}]);
    let mut init1 = sh("first", img, "echo first >> /work/order");
    init1["volumeMounts"] = mount.clone();
    let mut init2 = sh("second", img, "sleep 1; echo second >> /work/order");
    init2["volumeMounts"] = mount.clone();
    let mut app = sh(
        "app",
        img,
        "echo app >> /work/order; cat /work/order; exec sleep 3600",
    );
    app["volumeMounts"] = mount;
    n.apply(&pod(
        "init-order",
        json!({"initContainers": [init1, init2], "containers": [app],
               "volumes": [{"name": "work", "emptyDir": {}}]}),
    ));
    let p = n.wait_running("init-order", START);
    assert_eq!(condition(&p, "Initialized"), "True");
    for name in ["first", "second"] {
        let t = &cstatus(&p, name)["state"]["terminated"];
        assert_eq!(t["exitCode"], 0, "{name}: {t}");
    }
    let out = n.wait_exec("init-order", "app", &["cat", "/work/order"], START, |o| {
        o.contains("app")
    });
    assert_eq!(out, "first\nsecond\napp\n");
}

#[test]
fn failing_init_container_blocks_the_app() {
    let n = node();
    let img = n.image();
    let spec = |policy: &str| {
        json!({"restartPolicy": policy, "initContainers": [sh("setup", img, "exit 2")],
               "containers": [sh("app", img, "exec sleep 3600")]})
    };
    n.apply(&pod("init-never", spec("Never")));
    n.apply(&pod("init-always", spec("Always")));
    let p = n.wait_pod("init-never", "Failed", START, |p| phase(p) == "Failed");
    assert_eq!(cstatus(&p, "setup")["state"]["terminated"]["exitCode"], 2);
    assert_eq!(condition(&p, "Initialized"), "False");
    let p = n.wait_pod("init-always", "init restarted", START, |p| {
        restarts(p, "setup") >= 1
    });
    assert_eq!(phase(&p), "Pending", "{}", p["status"]);
    assert_eq!(condition(&p, "Initialized"), "False");
    for name in ["init-never", "init-always"] {
        let names: Vec<String> = n
            .cri()
            .containers(&n.uid(name))
            .iter()
            .map(|c| {
                c.metadata
                    .as_ref()
                    .map(|m| m.name.clone())
                    .unwrap_or_default()
            })
            .collect();
        assert!(
            !names.iter().any(|c| c == "app"),
            "{name}: app container created: {names:?}"
        );
        assert!(names.iter().any(|c| c == "setup"), "{name}: {names:?}");
    }
    n.delete_pod("init-never");
    n.delete_pod("init-always");
}

#[test]
fn env_and_volumes_seen_from_inside() {
    let n = node();
    let img = n.image();
    n.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": NS},
        "data": {"mode": "fast", "greeting.txt": "hello from a configmap"}}));
    n.apply(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds", "namespace": NS},
        "stringData": {"token": "s3cr3t"}}));
    write_file(&n.host_dir(), "from-host.txt", "written by the test");
    let mut c = sh("app", img, "exec sleep 3600");
    c["env"] = json!([
        {"name": "PLAIN", "value": "one"},
        {"name": "EXPANDED", "value": "$(PLAIN)-two-$(MISSING)"},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
    ]);
    c["volumeMounts"] = json!([
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "host", "mountPath": "/host", "readOnly": true},
        {"name": "cfg", "mountPath": "/etc/cfg"},
        {"name": "sec", "mountPath": "/etc/sec"},
    ]);
    n.apply(&pod(
        "envvol",
        json!({"containers": [c], "volumes": [
            {"name": "scratch", "emptyDir": {}},
            {"name": "host", "hostPath": {"path": n.host_dir(), "type": "Directory"}},
            {"name": "cfg", "configMap": {"name": "settings"}},
            {"name": "sec", "secret": {"secretName": "creds"}},
        ]}),
    ));
    let p = n.wait_running("envvol", START);
    let uid = n.uid("envvol");
    let ip = p["status"]["podIP"].as_str().unwrap().to_string();
    let env = n.wait_exec("envvol", "app", &["env"], START, |_| true);
    let want = [
        "PLAIN=one".to_string(),
        "EXPANDED=one-two-$(MISSING)".into(),
        "POD_NAME=envvol".into(),
        format!("POD_NS={NS}"),
        format!("POD_UID={uid}"),
        format!("POD_IP={ip}"),
        "NODE=node-shared".into(),
        "MODE=fast".into(),
        "TOKEN=s3cr3t".into(),
    ];
    for w in &want {
        assert!(env.lines().any(|l| l == w), "{w} missing in env:\n{env}");
    }
    let cat = |path: &str| n.exec("envvol", "app", &["cat", path]);
    assert_eq!(cat("/host/from-host.txt").1, "written by the test");
    assert_eq!(cat("/etc/cfg/greeting.txt").1, "hello from a configmap");
    assert_eq!(cat("/etc/cfg/mode").1, "fast");
    assert_eq!(cat("/etc/sec/token").1, "s3cr3t");
    let (code, _, _) = n.exec(
        "envvol",
        "app",
        &["sh", "-c", "echo x > /scratch/f && cat /scratch/f"],
    );
    assert_eq!(code, 0, "emptyDir is writable");
    let (code, _, _) = n.exec("envvol", "app", &["sh", "-c", "echo x > /host/nope"]);
    assert_ne!(code, 0, "a readOnly hostPath mount refused a write");
    // A configMap update reaches the projected file in the running container.
    n.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": NS},
        "data": {"mode": "slow", "greeting.txt": "updated"}}));
    n.wait_exec(
        "envvol",
        "app",
        &["cat", "/etc/cfg/greeting.txt"],
        START,
        |o| o == "updated",
    );
    assert_eq!(cat("/etc/cfg/mode").1, "slow");
    let p = n.pod("envvol").unwrap();
    assert_eq!(
        restarts(&p, "app"),
        0,
        "a configMap update does not restart the container"
    );
    n.delete_pod("envvol");
}

/// A prefix the config marks `readOnly` is mounted read-only by the runtime whatever
/// the volumeMount says, and nothing is made in it for the pod.
#[test]
fn a_read_only_prefix_is_read_only_in_the_container() {
    let n = node();
    let ro = n.host_dir().with_file_name("host-ro");
    write_file(&ro, "ca.pem", "the owner's");
    let mut c = sh("app", n.image(), "exec sleep 3600");
    c["volumeMounts"] = json!([{"name": "ro", "mountPath": "/ro"}]);
    n.apply(&pod(
        "roprefix",
        json!({"containers": [c], "volumes": [{"name": "ro", "hostPath": {"path": ro, "type": "Directory"}}]}),
    ));
    n.wait_running("roprefix", START);
    assert_eq!(
        n.exec("roprefix", "app", &["cat", "/ro/ca.pem"]).1,
        "the owner's"
    );
    for script in ["echo planted > /ro/ca.pem", "echo planted > /ro/new.pem"] {
        let (code, _, _) = n.exec("roprefix", "app", &["sh", "-c", script]);
        assert_ne!(code, 0, "{script} succeeded");
    }
    assert_eq!(
        std::fs::read_to_string(ro.join("ca.pem")).unwrap(),
        "the owner's"
    );
    assert!(!ro.join("new.pem").exists());
    n.delete_pod("roprefix");
    // A path to make there is not made: the pod waits.
    let mut c = sh("app", n.image(), "exec sleep 3600");
    c["volumeMounts"] = json!([{"name": "ro", "mountPath": "/ro"}]);
    let missing = ro.join("missing");
    n.apply(&pod(
        "romake",
        json!({"containers": [c], "volumes": [{"name": "ro", "hostPath":
            {"path": missing, "type": "DirectoryOrCreate"}}]}),
    ));
    let p = n.wait_pod("romake", "waiting with a reason", START, |p| {
        cstatus(p, "app")["state"]["waiting"]["message"].is_string()
    });
    let msg = cstatus(&p, "app")["state"]["waiting"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("read-only"), "{msg}");
    assert!(!missing.exists());
    n.delete_pod("romake");
}

#[test]
fn hostpath_outside_allowed_prefixes_is_refused() {
    let n = node();
    let mut c = sh("app", n.image(), "exec sleep 3600");
    c["volumeMounts"] = json!([{"name": "etc", "mountPath": "/hostetc"}]);
    n.apply(&pod(
        "badhost",
        json!({"containers": [c], "volumes": [{"name": "etc", "hostPath": {"path": "/etc"}}]}),
    ));
    let p = n.wait_pod("badhost", "waiting with a reason", START, |p| {
        cstatus(p, "app")["state"]["waiting"]["message"].is_string()
    });
    let w = &cstatus(&p, "app")["state"]["waiting"];
    assert_eq!(w["reason"], "HostPathNotAllowed", "{w}");
    let msg = w["message"].as_str().unwrap();
    assert!(
        msg.contains("/etc") && msg.contains("allowedHostPaths"),
        "message: {msg}"
    );
    assert_eq!(phase(&p), "Pending");
    // Over a few relists the container is never created.
    let (cri, uid) = (n.cri(), n.uid("badhost"));
    holds_for(
        "refused hostPath: no container",
        Duration::from_secs(2),
        || {
            let made = cri.containers(&uid);
            (!made.is_empty()).then(|| format!("created {made:?}"))
        },
    );
    n.delete_pod("badhost");
}

#[test]
fn changed_command_replaces_the_container() {
    let n = node();
    let img = n.image();
    n.apply(&pod(
        "upd",
        json!({"containers": [sh("app", img, "echo v1; exec sleep 3600")]}),
    ));
    let p = n.wait_running("upd", START);
    let old = container_id(&p, "app");
    n.apply(&pod(
        "upd",
        json!({"containers": [sh("app", img, "echo v2; exec sleep 3601")]}),
    ));
    let p = n.wait_pod("upd", "running a new container", START, |p| {
        is_running_ready(p) && container_id(p, "app") != old && !container_id(p, "app").is_empty()
    });
    let new = container_id(&p, "app");
    let cri = n.cri();
    let containers = cri.containers(&n.uid("upd"));
    let running: Vec<&str> = containers
        .iter()
        .filter(|c| container_running(c))
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(running, vec![new.as_str()], "only the new container runs");
    let cmdline = n.exec("upd", "app", &["cat", "/proc/1/cmdline"]).1;
    assert!(
        cmdline.contains("3601"),
        "the new command runs: {cmdline:?}"
    );
    // The image changes too: a differently named copy of busybox.
    let other = common::ImageBuilder::new("localhost/e2e/other:1")
        .cmd(&["sh"])
        .build();
    Containerd::shared().import(&other.tar);
    let mut c = sh("app", &other.name, "exec sleep 3601");
    c["imagePullPolicy"] = json!("Never");
    n.apply(&pod("upd", json!({"containers": [c]})));
    let p = n.wait_pod("upd", "running the other image", START, |p| {
        is_running_ready(p) && container_id(p, "app") != new
    });
    assert_eq!(cstatus(&p, "app")["image"], other.name);
    n.delete_pod("upd");
}

#[test]
fn delete_runs_prestop_and_honours_the_grace_period() {
    let n = node();
    let img = n.image();
    let marks = n.host_dir().join("grace-marks");
    let _ = std::fs::remove_file(&marks);
    let mount = json!([{"name": "host", "mountPath": "/host"}]);
    let mut polite = sh(
        "polite",
        img,
        "trap 'echo term >> /host/grace-marks; exit 0' TERM; while true; do sleep 0.2; done",
    );
    polite["volumeMounts"] = mount.clone();
    polite["lifecycle"] = json!({"preStop": {"exec": {"command": ["sh", "-c", "echo prestop >> /host/grace-marks"]}}});
    // Ignores TERM: only the SIGKILL at the end of the grace period stops it.
    let mut stubborn = sh(
        "stubborn",
        img,
        "trap '' TERM; while true; do sleep 0.2; done",
    );
    stubborn["volumeMounts"] = mount;
    n.apply(&pod(
        "grace",
        json!({"terminationGracePeriodSeconds": 4, "containers": [polite, stubborn],
               "volumes": [{"name": "host", "hostPath": {"path": n.host_dir()}}]}),
    ));
    n.wait_running("grace", START);
    let uid = n.uid("grace");
    let cri = n.cri();
    let started = Instant::now();
    n.delete_pod("grace");
    wait_for(
        "the stubborn container stops",
        Duration::from_secs(30),
        || {
            let cs = cri.containers(&uid);
            (!cs.iter().any(container_running)).then_some(())
        },
    );
    let stopped_after = started.elapsed();
    wait_for(
        "no sandbox or container of the pod left",
        Duration::from_secs(30),
        || (cri.containers(&uid).is_empty() && cri.sandboxes(&uid).is_empty()).then_some(()),
    );
    assert!(
        stopped_after >= Duration::from_secs(3),
        "stubborn stopped after {stopped_after:?} < grace 4 s"
    );
    assert!(
        stopped_after < Duration::from_secs(12),
        "stop took {stopped_after:?}"
    );
    let text = std::fs::read_to_string(&marks).unwrap_or_default();
    assert_eq!(
        text, "prestop\nterm\n",
        "preStop ran first, then TERM was delivered"
    );
    let status_files: Vec<String> = std::fs::read_dir(n.dir.join("state/status"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !status_files.iter().any(|f| f.contains("grace")),
        "status file left: {status_files:?}"
    );
    assert!(
        !n.dir.join("pods").join(&uid).exists(),
        "pod volume dir left"
    );
}

#[test]
fn unpullable_image_backs_off_and_leaves_others_alone() {
    let n = node();
    let img = n.image();
    let mut bad = sh("app", "127.0.0.1:9/e2e/absent:1", "true");
    bad["imagePullPolicy"] = json!("IfNotPresent");
    n.apply(&pod("nopull", json!({"containers": [bad]})));
    n.apply(&pod(
        "neighbour",
        json!({"containers": [sh("app", img, "exec sleep 3600")]}),
    ));
    let reason = |p: &Value| {
        cstatus(p, "app")["state"]["waiting"]["reason"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let p = n.wait_pod("nopull", "ErrImagePull", START, |p| {
        reason(p) == "ErrImagePull"
    });
    let msg = cstatus(&p, "app")["state"]["waiting"]["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(msg.contains("127.0.0.1:9"), "the runtime's message: {msg}");
    n.wait_pod("nopull", "ImagePullBackOff", START, |p| {
        reason(p) == "ImagePullBackOff"
    });
    n.wait_running("neighbour", START);
    let p = n.pod("nopull").unwrap();
    assert_eq!(phase(&p), "Pending");
    assert!(n.cri().containers(&n.uid("nopull")).is_empty());
    n.delete_pod("nopull");
    n.delete_pod("neighbour");
}
