//! Start to Running, what each restart policy does with exits, init containers.

use crate::node::*;
use crate::runtime::{Life, PAUSE_IMAGE};
use serde_json::json;
use std::time::Duration;

const LABEL_UID: &str = "io.kubernetes.pod.uid";

#[test]
fn pod_starts_and_runs() {
    let mut n = FakeNode::new("start");
    n.start_agent();
    n.apply(&pod(
        "web",
        json!({"containers": [container("app"), {"name": "side", "image": "fake.local/side:2"}]}),
    ));
    let s = n.wait_status("web", "Running and Ready", running_ready);
    let uid = n.uid("web");
    for kind in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        assert_eq!(condition(&s, kind), "True", "{kind}: {s}");
    }
    let sandboxes = n.rt.sandboxes();
    assert_eq!(sandboxes.len(), 1, "one sandbox");
    let sb = &sandboxes[0];
    assert!(sb.ready);
    assert_eq!(sb.label(LABEL_UID), uid);
    assert_eq!(sb.pod_name(), "web");
    assert_eq!(sb.attempt(), 0);
    let logs = n.dir.join("logs").join(format!("{NS}_web_{uid}"));
    assert_eq!(sb.config.log_directory, logs.display().to_string());
    assert!(logs.is_dir(), "the agent made the pod's log directory");
    assert_eq!(s["podIP"], sb.ip.as_str());
    assert!(s["startTime"].is_string(), "{s}");

    for name in ["app", "side"] {
        let cs = n.rt.containers_named(name);
        assert_eq!(cs.len(), 1, "one {name} container");
        let c = &cs[0];
        assert!(c.running());
        assert_eq!(c.sandbox_id, sb.id);
        assert_eq!(c.label(LABEL_UID), uid);
        assert_eq!(c.annotation("io.kubernetes.container.restartCount"), "0");
        assert_eq!(c.config.log_path, format!("{name}/0.log"));
        let st = cstatus(&s, name);
        assert_eq!(st["containerID"], format!("fake-cri://{}", c.id), "{st}");
        assert_eq!(st["imageID"], c.image_ref.as_str(), "{st}");
        assert_eq!((st["ready"].as_bool(), restarts(&s, name)), (Some(true), 0));
    }
    // Present with IfNotPresent: not pulled. `side` (default policy for a tag:
    // IfNotPresent) was missing: pulled once, and created from what the pull returned.
    let pulls: Vec<String> =
        n.rt.calls_to("PullImage")
            .iter()
            .map(|c| c.name.clone())
            .collect();
    assert_eq!(pulls, ["fake.local/side:2"]);
    let side = &n.rt.containers_named("side")[0];
    let side_image =
        n.rt.with(|s| s.image("fake.local/side:2").map(|i| i.id.clone()));
    assert_eq!(Some(side.image_ref.clone()), side_image);
    // The sandbox image is the runtime's business (RunPodSandbox); never pulled by us.
    assert!(n.rt.with(|s| s.image(PAUSE_IMAGE).is_some()));
}

#[test]
fn restart_policy_never_runs_each_container_once() {
    let mut n = FakeNode::new("never");
    n.rt.lives("ok", [], Life::exit_after(0, Duration::from_millis(100)));
    n.rt.lives("bad", [], Life::exit_after(2, Duration::from_millis(100)));
    n.start_agent();
    n.apply(&pod(
        "done",
        json!({"restartPolicy": "Never", "containers": [container("ok")]}),
    ));
    n.apply(&pod(
        "failed",
        json!({"restartPolicy": "Never", "containers": [container("bad")]}),
    ));
    let s = n.wait_status("done", "Succeeded", |s| phase(s) == "Succeeded");
    let t = &cstatus(&s, "ok")["state"]["terminated"];
    assert_eq!(
        (t["exitCode"].as_i64(), t["reason"].as_str()),
        (Some(0), Some("Completed"))
    );
    let s = n.wait_status("failed", "Failed", |s| phase(s) == "Failed");
    let t = &cstatus(&s, "bad")["state"]["terminated"];
    assert_eq!(
        (t["exitCode"].as_i64(), t["reason"].as_str()),
        (Some(2), Some("Error"))
    );
    assert_eq!((restarts(&s, "bad"), condition(&s, "Ready")), (0, "False"));
    // Finished for good: the agent stops the sandboxes and makes nothing more.
    n.wait("both sandboxes stopped", |n| {
        n.rt.sandboxes().iter().all(|s| !s.ready).then_some(())
    });
    n.holds_for(Duration::from_secs(1), "no restart under Never", |n| {
        let creates = n.rt.count("CreateContainer");
        (creates != 2).then(|| format!("{creates} CreateContainer calls, want 2"))
    });
}

#[test]
fn restart_policy_on_failure_restarts_until_success() {
    let mut n = FakeNode::new("onfailure");
    n.rt.lives(
        "job",
        [Life::exit(1)],
        Life::exit_after(0, Duration::from_millis(100)),
    );
    n.start_agent();
    n.apply(&pod(
        "job",
        json!({"restartPolicy": "OnFailure", "containers": [container("job")]}),
    ));
    let s = n.wait_status("job", "Succeeded", |s| phase(s) == "Succeeded");
    // The first failure restarts at once (no back-off before the second start).
    assert_eq!(restarts(&s, "job"), 1, "{s}");
    let st = cstatus(&s, "job");
    assert_eq!(st["state"]["terminated"]["exitCode"], 0, "{st}");
    assert_eq!(st["lastState"]["terminated"]["exitCode"], 1, "{st}");
    n.holds_for(Duration::from_secs(1), "no restart after success", |n| {
        let creates = n.rt.count("CreateContainer");
        (creates != 2).then(|| format!("{creates} CreateContainer calls, want 2"))
    });
    let attempts: Vec<u32> =
        n.rt.containers_named("job")
            .iter()
            .map(|c| c.attempt())
            .collect();
    assert_eq!(attempts, [0, 1], "each instance its own CRI attempt");
}

#[test]
fn init_containers_run_one_at_a_time_in_order() {
    let mut n = FakeNode::new("init");
    let run = Duration::from_millis(200);
    n.rt.lives("first", [], Life::exit_after(0, run));
    n.rt.lives("second", [], Life::exit_after(0, run));
    n.start_agent();
    n.apply(&pod(
        "init",
        json!({
            "initContainers": [container("first"), container("second")],
            "containers": [container("app")],
        }),
    ));
    let s = n.wait_status("init", "Running and Ready", running_ready);
    assert_eq!(condition(&s, "Initialized"), "True");
    for name in ["first", "second"] {
        let t = &cstatus(&s, name)["state"]["terminated"];
        assert_eq!(
            (t["exitCode"].as_i64(), t["reason"].as_str()),
            (Some(0), Some("Completed")),
            "{name}"
        );
    }
    let order: Vec<String> =
        n.rt.calls_to("CreateContainer")
            .iter()
            .map(|c| c.name.clone())
            .collect();
    assert_eq!(order, ["first", "second", "app"]);
    // Each one only after the one before had exited (as the runtime reports it).
    let cs = n.rt.containers();
    let created = |name: &str| cs.iter().find(|c| c.name() == name).unwrap().created_at;
    let finished = |name: &str| cs.iter().find(|c| c.name() == name).unwrap().finished_at;
    assert!(
        created("second") > finished("first"),
        "second made before first ended"
    );
    assert!(
        created("app") > finished("second"),
        "app made before second ended"
    );
}

#[test]
fn failed_init_container_is_retried_and_holds_the_app_back() {
    let mut n = FakeNode::new("initfail");
    n.rt.lives("setup", [Life::exit(3)], Life::exit(0));
    n.start_agent();
    n.apply(&pod(
        "initfail",
        json!({"initContainers": [container("setup")], "containers": [container("app")]}),
    ));
    let s = n.wait_status("initfail", "Running and Ready", running_ready);
    assert_eq!(restarts(&s, "setup"), 1, "{s}");
    assert_eq!(
        cstatus(&s, "setup")["lastState"]["terminated"]["exitCode"],
        3,
        "{s}"
    );
    let order: Vec<String> =
        n.rt.calls_to("CreateContainer")
            .iter()
            .map(|c| c.name.clone())
            .collect();
    assert_eq!(order, ["setup", "setup", "app"]);
}

#[test]
fn failed_init_container_under_never_fails_the_pod() {
    let mut n = FakeNode::new("initnever");
    n.rt.lives("setup", [], Life::exit(3));
    n.start_agent();
    n.apply(&pod(
        "initnever",
        json!({
            "restartPolicy": "Never",
            "initContainers": [container("setup")],
            "containers": [container("app")],
        }),
    ));
    let s = n.wait_status("initnever", "Failed", |s| phase(s) == "Failed");
    assert_eq!(condition(&s, "Initialized"), "False", "{s}");
    n.holds_for(
        Duration::from_secs(1),
        "the app container never made",
        |n| {
            let made: Vec<String> =
                n.rt.calls_to("CreateContainer")
                    .iter()
                    .map(|c| c.name.clone())
                    .collect();
            (made != ["setup"]).then(|| format!("created {made:?}"))
        },
    );
}

/// A pod whose volumes cannot be set up (a configMap that does not exist yet) makes
/// nothing on the runtime: every container waits with the reason, the agent logs it
/// once per try, and the pod starts as soon as the configMap is there.
#[test]
fn pod_with_a_missing_configmap_volume_waits_for_it() {
    let mut n = FakeNode::new("missing-volume");
    n.start_agent();
    let volume = json!({"name": "conf", "configMap": {"name": "settings"}});
    let mount = json!({"volumeMounts": [{"name": "conf", "mountPath": "/etc/app"}]});
    n.apply(&pod(
        "cfg",
        json!({"volumes": [volume], "containers": [container_with("app", mount)]}),
    ));
    let s = n.wait_status("cfg", "waiting for its configMap", |s| {
        waiting_reason(s, "app") == "CreateContainerConfigError"
            && cstatus(s, "app")["state"]["waiting"]["message"]
                == "configmap \"settings\" not found"
    });
    assert_eq!(phase(&s), "Pending", "{s}");
    assert_eq!(
        n.rt.count("RunPodSandbox"),
        0,
        "nothing made without volumes"
    );
    let said = "cfg: CreateContainerConfigError: configmap \"settings\" not found";
    assert!(n.log().contains(said), "logged: {}", n.log_tail(20));
    n.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "settings", "namespace": NS}, "data": {"a": "b"}}));
    n.wait_status("cfg", "Running once the configMap exists", running_ready);
}
