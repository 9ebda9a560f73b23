//! End-to-end tests of container probes and lifecycle hooks: `tinylet run` on this
//! binary's own private containerd (one agent for the binary, as in e2e_agent.rs), pods
//! applied with `tinylet apply`, the effect read back from `tinylet get pod -o json`.
//!
//! Covered: an exec liveness probe that starts failing restarts the container (and the
//! next instance is probed again); an exec readiness probe flips the container's `ready`
//! and the pod's Ready/ContainersReady both ways; a startup probe holds liveness back
//! until it succeeds; httpGet and tcpSocket probes against a busybox httpd in the pod
//! (404 is a failure, 200 a success); a postStart exec hook runs; a failing postStart
//! hook kills the container; a preStop httpGet hook reaches the pod before it stops;
//! a steadily passing probe writes nothing to the state directory.
//!
//! Probes run every second; every wait is "eventually, within a generous deadline", so
//! a loaded machine only makes the tests slower.

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::os::unix::fs::MetadataExt as _;
use std::sync::OnceLock;
use std::time::Duration;

/// The node shared by the tests of this binary (see e2e_agent.rs).
fn node() -> &'static Node {
    static NODE: OnceLock<&'static Node> = OnceLock::new();
    NODE.get_or_init(|| {
        agent_support::node_for_the_process(|| {
            let node = Node::new(Containerd::shared(), "probes");
            node.start_agent();
            node
        })
    })
}

const START: Duration = Duration::from_secs(60);
const LONG: Duration = Duration::from_secs(120);

/// An exec probe running `cmd` every second. The 5 s timeout keeps a slow ExecSync on
/// a loaded machine from counting as a failure.
fn exec_probe(cmd: &[&str], failure_threshold: i32) -> Value {
    json!({"exec": {"command": cmd}, "periodSeconds": 1, "timeoutSeconds": 5,
           "failureThreshold": failure_threshold})
}

fn ready(p: &Value, c: &str) -> bool {
    cstatus(p, c)["ready"] == true
}

fn running(p: &Value, c: &str) -> bool {
    cstatus(p, c)["state"]["running"].is_object()
}

#[test]
fn failing_liveness_probe_restarts_the_container() {
    let n = node();
    let mut c = sh(
        "app",
        n.image(),
        "touch /tmp/healthy; sleep 4; rm -f /tmp/healthy; exec sleep 3600",
    );
    c["livenessProbe"] = exec_probe(&["cat", "/tmp/healthy"], 2);
    n.apply(&pod("liveness", json!({"containers": [c]})));
    n.wait_running("liveness", START);
    // /tmp/healthy goes away: two failed probes, the container is killed and restarted.
    let p = n.wait_pod("liveness", "restarted by its liveness probe", LONG, |p| {
        restarts(p, "app") >= 1
    });
    let last = &cstatus(&p, "app")["lastState"]["terminated"];
    assert!(last["exitCode"].as_i64().unwrap_or(0) != 0, "{last}");
    // The new instance is probed again: it fails the same way (after the back-off).
    n.wait_pod("liveness", "restarted a second time", LONG, |p| {
        restarts(p, "app") >= 2
    });
    n.delete_pod("liveness");
}

#[test]
fn readiness_probe_flips_ready_and_conditions_both_ways() {
    let n = node();
    let mut c = sh("app", n.image(), "exec sleep 3600");
    c["readinessProbe"] = exec_probe(&["cat", "/tmp/ready"], 1);
    c["lifecycle"] =
        json!({"postStart": {"exec": {"command": ["sh", "-c", "echo hooked > /tmp/post"]}}});
    n.apply(&pod("readiness", json!({"containers": [c]})));
    let unready = |p: &Value| {
        phase(p) == "Running"
            && running(p, "app")
            && !ready(p, "app")
            && condition(p, "Ready") == "False"
            && condition(p, "ContainersReady") == "False"
    };
    n.wait_pod("readiness", "running but not ready", START, unready);
    // The postStart hook ran before the container counted as started.
    assert_eq!(
        n.exec("readiness", "app", &["cat", "/tmp/post"]).1,
        "hooked\n"
    );
    assert_eq!(n.exec("readiness", "app", &["touch", "/tmp/ready"]).0, 0);
    let p = n.wait_pod("readiness", "ready", START, |p| {
        ready(p, "app")
            && condition(p, "Ready") == "True"
            && condition(p, "ContainersReady") == "True"
    });
    assert_eq!(cstatus(&p, "app")["started"], true);
    // Steady state: the probe keeps succeeding every second and nothing is written.
    let file = n.dir.join(format!("state/status/{NS}_readiness.json"));
    let stamp = || {
        let m = std::fs::metadata(&file).expect("the status file");
        (m.ino(), m.modified().unwrap())
    };
    let before = stamp();
    holds_for(
        "steady readiness: status file not rewritten",
        Duration::from_secs(5),
        || {
            let now = stamp();
            (now != before).then(|| format!("(inode, mtime) {before:?} -> {now:?}"))
        },
    );
    assert_eq!(n.exec("readiness", "app", &["rm", "/tmp/ready"]).0, 0);
    let p = n.wait_pod("readiness", "not ready again", START, unready);
    // Readiness never restarts anything.
    assert_eq!(restarts(&p, "app"), 0);
    n.delete_pod("readiness");
}

#[test]
fn startup_probe_holds_liveness_back_until_it_succeeds() {
    let n = node();
    let mut c = sh("app", n.image(), "exec sleep 3600");
    // Liveness alone would kill the container after two failed probes.
    c["startupProbe"] = exec_probe(&["cat", "/tmp/started"], 300);
    c["livenessProbe"] = exec_probe(&["cat", "/tmp/started"], 2);
    n.apply(&pod("startup", json!({"containers": [c]})));
    n.wait_pod("startup", "running, not started", START, |p| {
        running(p, "app") && cstatus(p, "app")["started"] == false && !ready(p, "app")
    });
    // Several liveness periods pass: the startup probe keeps liveness from running.
    holds_for(
        "startup probe holds liveness back",
        Duration::from_secs(5),
        || {
            let p = n.pod("startup").expect("pod");
            let st = cstatus(&p, "app");
            (restarts(&p, "app") != 0 || st["started"] != false)
                .then(|| format!("{st}\n{}", n.agent_log_tail()))
        },
    );
    assert_eq!(n.exec("startup", "app", &["touch", "/tmp/started"]).0, 0);
    let p = n.wait_pod("startup", "started and ready", START, |p| {
        cstatus(p, "app")["started"] == true && ready(p, "app") && condition(p, "Ready") == "True"
    });
    assert_eq!(restarts(&p, "app"), 0);
    // Started: now liveness runs, and the file going away restarts the container, whose
    // new instance waits for its startup probe again.
    assert_eq!(n.exec("startup", "app", &["rm", "/tmp/started"]).0, 0);
    n.wait_pod("startup", "restarted, not started", LONG, |p| {
        restarts(p, "app") >= 1 && running(p, "app") && cstatus(p, "app")["started"] == false
    });
    n.delete_pod("startup");
}

#[test]
fn http_and_tcp_probes_against_busybox_httpd() {
    let n = node();
    let stop_dir = n.host_dir().join("httpd");
    std::fs::create_dir_all(&stop_dir).unwrap();
    // index.html for liveness, no ready.html yet (404), a CGI script for preStop.
    let script = "mkdir -p /www/cgi-bin && echo ok > /www/index.html && \
        printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho bye\\ntouch /host/prestop\\n' \
        > /www/cgi-bin/stop && chmod +x /www/cgi-bin/stop && exec httpd -f -p 8080 -h /www";
    let mut c = sh("web", n.image(), script);
    c["ports"] = json!([{"name": "http", "containerPort": 8080}]);
    c["startupProbe"] = json!({"tcpSocket": {"port": 8080}, "periodSeconds": 1, "timeoutSeconds": 5, "failureThreshold": 60});
    c["livenessProbe"] = json!({"httpGet": {"path": "/index.html", "port": "http"}, "periodSeconds": 1, "timeoutSeconds": 5, "failureThreshold": 3});
    c["readinessProbe"] = json!({"httpGet": {"path": "/ready.html", "port": 8080, "httpHeaders": [{"name": "X-Test", "value": "1"}]}, "periodSeconds": 1, "timeoutSeconds": 5, "failureThreshold": 1});
    c["lifecycle"] = json!({"preStop": {"httpGet": {"path": "/cgi-bin/stop", "port": "http"}}});
    c["volumeMounts"] = json!([{"name": "host", "mountPath": "/host"}]);
    n.apply(&pod(
        "httpd",
        json!({"containers": [c], "volumes": [{"name": "host", "hostPath": {"path": stop_dir}}]}),
    ));
    // The tcpSocket startup probe connects; ready.html is a 404: started, not ready.
    n.wait_pod("httpd", "started but not ready", START, |p| {
        running(p, "web") && cstatus(p, "web")["started"] == true && !ready(p, "web")
    });
    assert_eq!(
        n.exec("httpd", "web", &["sh", "-c", "echo yes > /www/ready.html"])
            .0,
        0
    );
    let p = n.wait_pod("httpd", "ready", START, |p| ready(p, "web"));
    assert_eq!(restarts(&p, "web"), 0, "the httpGet liveness probe passes");
    // Without index.html the liveness probe gets 404s: the container is restarted.
    assert_eq!(n.exec("httpd", "web", &["rm", "/www/index.html"]).0, 0);
    n.wait_pod(
        "httpd",
        "restarted by its httpGet liveness probe",
        LONG,
        |p| restarts(p, "web") >= 1,
    );
    // The new instance serves index.html again and becomes ready once ready.html exists.
    n.wait_pod("httpd", "started again", LONG, |p| {
        running(p, "web") && cstatus(p, "web")["started"] == true
    });
    n.wait_exec(
        "httpd",
        "web",
        &["sh", "-c", "echo yes > /www/ready.html && echo ok"],
        START,
        |o| o == "ok\n",
    );
    n.wait_pod("httpd", "ready again", START, |p| ready(p, "web"));
    // Deleting the pod runs the preStop httpGet hook against the pod first.
    let marker = stop_dir.join("prestop");
    let _ = std::fs::remove_file(&marker);
    n.delete_pod("httpd");
    wait_for("the preStop hook's marker file", START, || {
        marker.exists().then_some(())
    });
}

#[test]
fn failing_post_start_hook_kills_the_container() {
    let n = node();
    let dir = n.host_dir().join("poststart");
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = sh("app", n.image(), "exec sleep 3600");
    c["lifecycle"] =
        json!({"postStart": {"exec": {"command": ["sh", "-c", "echo ran > /host/ran; exit 7"]}}});
    c["volumeMounts"] = json!([{"name": "host", "mountPath": "/host"}]);
    n.apply(&pod(
        "poststart",
        json!({"restartPolicy": "Never", "containers": [c],
               "volumes": [{"name": "host", "hostPath": {"path": dir}}]}),
    ));
    let p = n.wait_pod("poststart", "Failed", LONG, |p| phase(p) == "Failed");
    let t = &cstatus(&p, "app")["state"]["terminated"];
    assert!(t["exitCode"].as_i64().unwrap_or(0) != 0, "{t}");
    assert_eq!(restarts(&p, "app"), 0);
    assert_eq!(std::fs::read_to_string(dir.join("ran")).unwrap(), "ran\n");
    n.delete_pod("poststart");
}
