//! After an agent restart every pod is rebuilt from the runtime: running containers are
//! kept (no restarts, restart counts from the annotations); what belongs to no desired
//! pod (deleted while the agent was down) is stopped and removed; what carries no pod
//! label of ours is never touched.

use crate::node::*;
use crate::runtime::Life;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;
use tinylet::cri::{pb, Channel, RuntimeClient};

#[test]
fn restarted_agent_adopts_running_pods() {
    let mut n = FakeNode::new("adopt");
    // `flaky` crashes once, so it has a restart count to keep.
    n.rt.lives("flaky", [Life::exit(1)], Life::Run);
    n.start_agent();
    n.apply(&pod(
        "keep",
        json!({"containers": [container("steady"), container("flaky")]}),
    ));
    let before = n.wait_status("keep", "Running with flaky restarted", |s| {
        running_ready(s) && restarts(s, "flaky") == 1
    });
    n.kill_agent();
    // The new agent must work the status out again, not find the old one.
    n.remove_status("keep");
    let from = n.rt.calls().len();
    n.start_agent();
    let after = n.wait_status("keep", "Running again", running_ready);
    for name in ["steady", "flaky"] {
        assert_eq!(
            container_id(&after, name),
            container_id(&before, name),
            "{name} kept"
        );
        assert_eq!(
            restarts(&after, name),
            restarts(&before, name),
            "{name}'s count"
        );
    }
    assert_eq!(
        restarts(&after, "flaky"),
        1,
        "from the restart-count annotation"
    );
    assert_eq!(
        cstatus(&after, "flaky")["lastState"]["terminated"]["exitCode"],
        1,
        "the dead instance is still known: {after}"
    );
    n.holds_for(
        Duration::from_secs(1),
        "adoption changes nothing on the runtime",
        |n| {
            let made = calls_since(&n.rt.calls(), from, &MUTATING);
            (!made.is_empty()).then(|| format!("calls since the restart:\n{}", made.join("\n")))
        },
    );
}

/// Makes a sandbox and a running container on the runtime as another CRI client would.
fn foreign_pod(n: &FakeNode, labels: BTreeMap<String, String>) -> (String, String) {
    let rt = RuntimeClient::new(
        Channel::new(&n.rt.endpoint()).unwrap(),
        Duration::from_secs(5),
    );
    let sb = pb::PodSandboxConfig {
        metadata: Some(pb::PodSandboxMetadata {
            name: "foreign".into(),
            uid: "foreign-uid".into(),
            namespace: "other".into(),
            attempt: 0,
        }),
        labels: labels.clone(),
        ..Default::default()
    };
    let c = pb::ContainerConfig {
        metadata: Some(pb::ContainerMetadata {
            name: "tool".into(),
            attempt: 0,
        }),
        image: Some(pb::ImageSpec {
            image: IMAGE.into(),
            ..Default::default()
        }),
        labels,
        ..Default::default()
    };
    tinylet::rt::block_on(async {
        let sid = rt.run_pod_sandbox(sb.clone(), "").await.unwrap();
        let cid = rt.create_container(&sid, c, sb).await.unwrap();
        rt.start_container(&cid).await.unwrap();
        (sid, cid)
    })
}

#[test]
fn pods_deleted_while_the_agent_was_down_are_removed_and_others_left_alone() {
    let mut n = FakeNode::new("orphans");
    n.start_agent();
    n.apply(&pod("gone", json!({"containers": [container("app")]})));
    n.apply(&pod("stays", json!({"containers": [container("app")]})));
    n.wait_status("gone", "Running", running_ready);
    let stays = n.wait_status("stays", "Running", running_ready);
    let gone_uid = n.uid("gone");
    n.kill_agent();
    n.delete_pod("gone");
    // Another agent's pod (a kubelet's on the same runtime): kubelet's pod labels, a uid
    // this agent never desired, no mark of this agent.
    let kubelet_labels = [
        ("app", "x"),
        ("io.kubernetes.pod.uid", "foreign-uid"),
        ("io.kubernetes.pod.name", "foreign"),
        ("io.kubernetes.pod.namespace", "other"),
    ];
    let (foreign_sb, foreign_c) = foreign_pod(
        &n,
        kubelet_labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    let from = n.rt.calls().len();
    n.start_agent();
    n.wait("the deleted pod's sandbox and container removed", |n| {
        let left = n.rt.with(|s| {
            s.sandboxes
                .values()
                .any(|x| x.label("io.kubernetes.pod.uid") == gone_uid)
                || s.containers
                    .values()
                    .any(|x| x.label("io.kubernetes.pod.uid") == gone_uid)
        });
        (!left).then_some(())
    });
    let calls = n.rt.calls();
    let stops: Vec<_> = calls[from..]
        .iter()
        .filter(|c| c.method == "StopContainer")
        .collect();
    assert_eq!(stops.len(), 1, "the orphan's container stopped once");
    assert_eq!(stops[0].timeout, 10, "orphans get a 10 s grace period");
    let order: Vec<&str> = calls[from..]
        .iter()
        .filter(|c| MUTATING.contains(&c.method.as_str()))
        .map(|c| c.method.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "StopContainer",
            "StopPodSandbox",
            "RemoveContainer",
            "RemovePodSandbox"
        ]
    );
    n.holds_for(Duration::from_secs(1), "the other pods untouched", |n| {
        let s = n.status("stays").unwrap_or_default();
        if container_id(&s, "app") != container_id(&stays, "app") || !running_ready(&s) {
            return Some(format!("pod stays changed: {s}"));
        }
        let foreign = n.rt.with(|s| {
            s.sandboxes.get(&foreign_sb).is_some_and(|x| x.ready)
                && s.containers.get(&foreign_c).is_some_and(|x| x.running())
        });
        if !foreign {
            return Some("another agent's pod was touched".into());
        }
        let touched: Vec<String> = n.rt.calls()[from..]
            .iter()
            .filter(|c| c.id == foreign_sb || c.id == foreign_c)
            .map(show_call)
            .collect();
        (!touched.is_empty()).then(|| format!("calls on the foreign pod: {touched:?}"))
    });
}
