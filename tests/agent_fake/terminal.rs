//! A pod that reached Succeeded or Failed stays there, as under kubelet: nothing of it
//! is started or made again and its phase never changes back, whatever the runtime
//! shows later (its sandbox stopped, its containers gone).

use crate::node::*;
use crate::runtime::Life;
use serde_json::{json, Value};
use std::time::Duration;

/// Wakes every pod's worker (a configMap change may matter to any pod) and waits until
/// pod `name`'s worker has looked at container `looked_at` on the runtime since.
fn sync_again(n: &mut FakeNode, name: &str, looked_at: &str) {
    let from = n.rt.calls().len();
    n.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "wake", "namespace": NS},
                    "data": {"at": from.to_string()}}));
    n.wait(&format!("a sync of {name} after the change"), |n| {
        n.rt.calls()[from..]
            .iter()
            .any(|c| c.method == "ContainerStatus" && c.name == looked_at)
            .then_some(())
    });
}

/// What was made on the runtime: RunPodSandbox calls and the names CreateContainer made.
fn made(n: &FakeNode) -> (usize, Vec<String>) {
    let creates = n.rt.calls_to("CreateContainer");
    let names = creates.iter().map(|c| c.name.clone()).collect();
    (n.rt.count("RunPodSandbox"), names)
}

/// The phase stays `want` and nothing more is made, for a second.
fn stays(n: &mut FakeNode, name: &str, want: &str, made_before: &(usize, Vec<String>)) {
    n.holds_for(
        Duration::from_secs(1),
        &format!("{name} stays {want}"),
        |n| {
            let s = n.status(name).unwrap_or(Value::Null);
            if phase(&s) != want {
                return Some(format!("phase {:?}: {s}", phase(&s)));
            }
            let now = made(n);
            (now != *made_before).then(|| format!("made {now:?} after {made_before:?}"))
        },
    );
}

#[test]
fn failed_init_container_under_never_stays_failed_after_the_sandbox_stops() {
    let mut n = FakeNode::new("init-never-stays");
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
    n.wait_status("initnever", "Failed", |s| phase(s) == "Failed");
    n.wait("the failed pod's sandbox stopped", |n| {
        n.rt.sandboxes().iter().all(|s| !s.ready).then_some(())
    });
    // The sync after the stop takes the sandbox-recreate path of the actions: the pod
    // used to become Pending again there.
    sync_again(&mut n, "initnever", "setup");
    let s = n.status("initnever").unwrap();
    assert_eq!(condition(&s, "Initialized"), "False", "{s}");
    assert_eq!(made(&n), (1, vec!["setup".to_string()]));
    stays(&mut n, "initnever", "Failed", &(1, vec!["setup".into()]));
}

#[test]
fn succeeded_pod_is_not_run_again_when_its_containers_are_gone() {
    let mut n = FakeNode::new("succeeded-stays");
    n.rt.lives("job", [], Life::exit_after(0, Duration::from_millis(100)));
    n.rt.lives("side", [], Life::exit_after(0, Duration::from_millis(100)));
    n.start_agent();
    n.apply(&pod(
        "job",
        json!({"restartPolicy": "OnFailure", "containers": [container("job"), container("side")]}),
    ));
    n.wait_status("job", "Succeeded", |s| phase(s) == "Succeeded");
    n.wait("the finished pod's sandbox stopped", |n| {
        n.rt.sandboxes().iter().all(|s| !s.ready).then_some(())
    });
    let before = made(&n);
    assert_eq!(before, (1, vec!["job".to_string(), "side".to_string()]));
    // A container GC that keeps no dead container (maxPerPodContainer 0), or a runtime
    // that lost them: the runtime shows a pod that never ran one of its containers.
    let job = n.rt.containers_named("job")[0].id.clone();
    n.rt.with(|s| s.remove_container(&job));
    sync_again(&mut n, "job", "side");
    stays(&mut n, "job", "Succeeded", &before);
}
