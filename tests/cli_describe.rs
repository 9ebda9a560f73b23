//! `tinylet describe pod`: kubectl's layout from the store and the status files, and the
//! pod's events from the running agent's memory. On the harness's real containerd, an
//! image that cannot be pulled says why: the waiting state's message (ErrImagePull with
//! the runtime's error) and the Failed event; without an agent, the Events section says
//! that it is not running and the rest is shown.

mod agent_support;
mod cli_support;
mod common;

use agent_support::*;
use cli_support::{tl, Scratch};
use common::Containerd;
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use tinylet::model::PodStatus;
use tinylet::store::Store;

const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},
  "spec":{"volumes":[{"name":"data","emptyDir":{}}],
  "containers":[{"name":"app","image":"busybox","ports":[{"containerPort":80}],
    "env":[{"name":"MODE","value":"demo"}],"volumeMounts":[{"name":"data","mountPath":"/data"}]}]}}"#;

const STATUS: &str = r#"{"phase":"Running","podIP":"10.88.0.7","podIPs":[{"ip":"10.88.0.7"}],
  "hostIP":"192.0.2.1","startTime":"2026-12-01T10:00:00Z","qosClass":"BestEffort",
  "conditions":[{"type":"Ready","status":"False"}],
  "containerStatuses":[{"name":"app","ready":false,"restartCount":3,"image":"busybox","imageID":"sha256:ab",
    "containerID":"containerd://c1",
    "state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off 40s restarting failed container"}},
    "lastState":{"terminated":{"exitCode":1,"reason":"Error","startedAt":"2026-12-01T10:01:00Z","finishedAt":"2026-12-01T10:01:02Z"}}}]}"#;

#[test]
fn describe_shows_kubectls_layout_and_says_when_the_agent_is_not_running() {
    let s = Scratch::new("describe");
    let f = s.file("web.json", POD);
    assert_eq!(tl(&s, &["apply", "-f", &f]).code, 0);
    let mut store = Store::open_at(Path::new(&s.state()), &[]).unwrap();
    let status: PodStatus = serde_json::from_str(STATUS).unwrap();
    store.write_status("default", "web", &status).unwrap();
    let o = tl(&s, &["describe", "pod", "default/web"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for line in [
        "Name:         web\n",
        "Namespace:    default\n",
        "Node:         ",
        "/192.0.2.1\n",
        "Start Time:   Tue, 01 Dec 2026 10:00:00 +0000\n",
        "Labels:       app=web\n",
        "Status:       Running\n",
        "IP:           10.88.0.7\n",
        "IPs:\n  IP:  10.88.0.7\n",
        "Containers:\n  app:\n    Container ID:   containerd://c1\n",
        "    Image:          busybox\n",
        "    Port:           80/TCP\n",
        "    State:          Waiting\n      Reason:       CrashLoopBackOff\n",
        "      Message:      back-off 40s restarting failed container\n",
        "    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n",
        "      Finished:     Tue, 01 Dec 2026 10:01:02 +0000\n",
        "    Ready:          False\n    Restart Count:  3\n",
        "      MODE:  demo\n",
        "      /data from data (rw)\n",
        "Conditions:\n  Type   Status\n  Ready  False\n",
        "Volumes:\n  data:\n    Type:       EmptyDir (a temporary directory that shares a pod's lifetime)\n",
        "QoS Class:",
        "<unavailable: the agent is not running (its events are kept in its memory only)>\n",
    ] {
        assert!(o.stdout.contains(line), "{line:?} not in:\n{}", o.stdout);
    }
    for args in [
        &["describe", "pod", "web", "-n", "default"][..],
        &["describe", "pod/web"],
    ] {
        assert_eq!(tl(&s, args).stdout, o.stdout, "{args:?}");
    }
    let o = tl(&s, &["describe", "pod", "default/nope"]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    let o = tl(&s, &["describe", "configmap", "default/x"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}

#[test]
fn a_failed_pull_says_why_in_the_state_and_the_events() {
    let n = Node::new(Containerd::shared(), "describe");
    n.start_agent();
    let image = "127.0.0.1:9/e2e/absent:1";
    let mut app = sh("app", image, "true");
    app["imagePullPolicy"] = json!("IfNotPresent");
    n.apply(&pod("nopull", json!({"containers": [app]})));
    let target = format!("{NS}/nopull");
    let failed_event = format!("Failed to pull image \"{image}\": ");
    let out = wait_for(
        "describe with the pull's error",
        Duration::from_secs(60),
        || {
            let out = n.tinylet_ok(&["describe", "pod", &target]);
            (out.contains(&failed_event) && out.contains("Back-off pulling image")).then_some(out)
        },
    );
    // kubelet's words: ErrImagePull with the runtime's error, then ImagePullBackOff with
    // its back-off text; the Failed event keeps the runtime's error.
    let events = out.split("\nEvents:\n").nth(1).unwrap_or_default();
    let failed = events.lines().find(|l| l.contains(&failed_event)).unwrap();
    assert!(failed.trim_start().starts_with("Warning  Failed"), "{out}");
    assert!(
        failed.contains("connection refused"),
        "the runtime's reason: {out}"
    );
    assert!(events.contains("Normal   Pulling"), "{out}");
    assert!(
        out.contains("      Reason:       ErrImagePull\n")
            || out.contains("      Reason:       ImagePullBackOff\n"),
        "{out}"
    );
    let p = n.wait_pod("nopull", "ErrImagePull", Duration::from_secs(60), |p| {
        cstatus(p, "app")["state"]["waiting"]["reason"] == "ErrImagePull"
    });
    let message = cstatus(&p, "app")["state"]["waiting"]["message"].to_string();
    assert!(message.contains("connection refused"), "{message}");
    n.delete_pod("nopull");
}
