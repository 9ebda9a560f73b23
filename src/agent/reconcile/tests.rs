use super::*;
use crate::config::pod_policy::Level;
use crate::model::container::{ContainerPort, SecurityContext};
use crate::model::status::{PodPhase, PodStatus};
use crate::model::NodeResources;
use crate::model::{Container, Quantity};

/// A local pod `uid` made at second `t`, one container asking for `cpu` millicores.
fn pod(uid: &str, t: u32, cpu: i64) -> Pod {
    let mut c = Container {
        name: "app".into(),
        image: "busybox".into(),
        ..Default::default()
    };
    if cpu > 0 {
        let q = Quantity::parse(&format!("{cpu}m")).unwrap();
        c.resources.requests.insert("cpu".into(), q);
    }
    let mut p = Pod::default();
    p.metadata.uid = uid.into();
    p.metadata.namespace = "default".into();
    p.metadata.name = format!("pod-{uid}");
    p.metadata.creation_timestamp = Some(format!("2026-01-01T00:00:{t:02}Z"));
    p.spec.containers = vec![c];
    p
}

fn privileged(mut p: Pod) -> Pod {
    p.spec.containers[0].security_context = Some(SecurityContext {
        privileged: Some(true),
        ..Default::default()
    });
    p
}

fn host_port(mut p: Pod, port: i32) -> Pod {
    p.spec.containers[0].ports = vec![ContainerPort {
        host_port: port,
        container_port: port,
        ..Default::default()
    }];
    p
}

/// The node: 1000m of CPU, local pods at baseline (host ports allowed), at most
/// `max_pods` pods.
fn cfg(max_pods: u32) -> Config {
    let mut c = Config {
        max_pods,
        ..Default::default()
    };
    c.pod_policy.local = Level::Baseline;
    c.pod_policy.allow_host_ports = true;
    c
}

fn run(
    desired: Vec<Pod>,
    workers: &[(&Pod, bool, bool)],
    refused: &[Pod],
    c: &Config,
) -> Vec<Action> {
    run_adopting(desired, workers, refused, &[], c)
}

/// [`run`], with the uids the runtime ran when the agent started (`adopted`).
fn run_adopting(
    desired: Vec<Pod>,
    workers: &[(&Pod, bool, bool)],
    refused: &[Pod],
    adopted: &[&str],
    c: &Config,
) -> Vec<Action> {
    let labels = BTreeMap::new();
    let node = NodeView {
        name: "gw1",
        labels: &labels,
        allocatable: NodeResources {
            cpu_milli: 1000,
            memory: 128 << 20,
            ..Default::default()
        },
        memory_pressure: false,
        disk_pressure: false,
    };
    let workers: Vec<Worker<'_>> = workers
        .iter()
        .map(|&(pod, deleting, finished)| Worker {
            pod,
            deleting,
            finished,
        })
        .collect();
    let refused: BTreeMap<String, Rc<Pod>> = refused
        .iter()
        .map(|p| (p.metadata.uid.clone(), Rc::new(p.clone())))
        .collect();
    let adopted: BTreeSet<String> = adopted.iter().map(|u| u.to_string()).collect();
    let now = Now {
        workers: &workers,
        refused: &refused,
        adopted: &adopted,
        node: &node,
        cfg: c,
    };
    plan(desired, &now)
}

/// The reason of the one refusal in `actions`, and whether it stops a worker.
fn refusal(actions: &[Action]) -> (&'static str, bool) {
    match actions {
        [Action::Refuse { refusal, stop, .. }] => (refusal.reason, *stop),
        other => panic!("not one refusal: {other:?}"),
    }
}

#[test]
fn a_new_pod_is_admitted_or_refused() {
    let a = pod("a", 1, 100);
    assert_eq!(run(vec![a.clone()], &[], &[], &cfg(10)), [Action::Start(a)]);
    let b = privileged(pod("b", 2, 0));
    let actions = run(vec![b], &[], &[], &cfg(10));
    assert_eq!(refusal(&actions), ("PodSecurity", false));
}

#[test]
fn a_refusal_holds_until_the_spec_changes() {
    let b = privileged(pod("b", 2, 0));
    let mut labelled = b.clone();
    labelled.metadata.labels.insert("x".into(), "y".into());
    assert_eq!(
        run(vec![labelled], &[], std::slice::from_ref(&b), &cfg(10)),
        []
    );
    let fixed = pod("b", 2, 0);
    let actions = run(vec![fixed.clone()], &[], &[b], &cfg(10));
    assert_eq!(actions, [Action::Start(fixed)]);
}

#[test]
fn a_changed_spec_is_admitted_again() {
    let a = pod("a", 1, 100);
    let mut newer = a.clone();
    newer.spec.containers[0].image = "busybox:2".into();
    let actions = run(vec![newer.clone()], &[(&a, false, false)], &[], &cfg(10));
    assert_eq!(actions, [Action::Update(newer)]);
    let actions = run(
        vec![privileged(a.clone())],
        &[(&a, false, false)],
        &[],
        &cfg(10),
    );
    assert_eq!(refusal(&actions), ("PodSecurity", true));
    let mut host_pid = a.clone();
    host_pid.spec.host_pid = true;
    let actions = run(vec![host_pid], &[(&a, false, false)], &[], &cfg(10));
    assert_eq!(refusal(&actions), ("PodSecurity", true));
}

#[test]
fn a_change_of_metadata_alone_is_not_judged_again() {
    // The pod runs at a policy that would refuse it now: only its labels change.
    let a = privileged(pod("a", 1, 0));
    let mut labelled = a.clone();
    labelled.metadata.labels.insert("x".into(), "y".into());
    labelled
        .metadata
        .annotations
        .insert("note".into(), "z".into());
    let actions = run(vec![labelled.clone()], &[(&a, false, false)], &[], &cfg(10));
    assert_eq!(actions, [Action::Update(labelled)]);
    // Nothing changed: nothing to do.
    assert_eq!(
        run(vec![a.clone()], &[(&a, false, false)], &[], &cfg(10)),
        []
    );
}

#[test]
fn a_changed_pod_is_not_counted_twice() {
    // maxPods 2, two pods run: a spec change of one still fits.
    let (a, b) = (pod("a", 1, 600), pod("b", 2, 300));
    let mut bigger = a.clone();
    bigger.spec.containers[0]
        .resources
        .requests
        .insert("cpu".into(), Quantity::parse("700m").unwrap());
    let workers = [(&a, false, false), (&b, false, false)];
    let actions = run(vec![bigger.clone(), b.clone()], &workers, &[], &cfg(2));
    assert_eq!(actions, [Action::Update(bigger)]);
    // 800m beside b's 300m is more than the node has: refused, by its own figures.
    let mut too_big = a.clone();
    too_big.spec.containers[0]
        .resources
        .requests
        .insert("cpu".into(), Quantity::parse("800m").unwrap());
    let actions = run(vec![too_big, b.clone()], &workers, &[], &cfg(2));
    assert_eq!(refusal(&actions), ("OutOfcpu", true));
}

#[test]
fn pods_being_deleted_still_count() {
    // a stops with a long grace period (removed locally, or terminating in the
    // cluster): it still holds its slot, its CPU and its host port.
    let a = host_port(pod("a", 1, 600), 8080);
    let b = pod("b", 2, 0);
    let actions = run(vec![b.clone()], &[(&a, true, false)], &[], &cfg(1));
    assert_eq!(refusal(&actions), ("OutOfpods", false));
    let c = pod("c", 3, 500);
    let actions = run(vec![c], &[(&a, true, false)], &[], &cfg(10));
    assert_eq!(refusal(&actions), ("OutOfcpu", false));
    let d = host_port(pod("d", 4, 0), 8080);
    let actions = run(vec![d], &[(&a, true, false)], &[], &cfg(10));
    assert_eq!(refusal(&actions), ("NodePorts", false));
    // Once its worker says it finished, it counts no more.
    let actions = run(vec![b.clone()], &[(&a, true, true)], &[], &cfg(1));
    assert_eq!(actions, [Action::Start(b)]);
}

#[test]
fn a_refused_change_keeps_counting_what_still_runs() {
    // a's change is refused; its worker still runs the old spec while it stops, so a
    // newer pod finds no slot.
    let a = pod("a", 1, 0);
    let b = pod("b", 2, 0);
    let actions = run(
        vec![privileged(a.clone()), b],
        &[(&a, false, false)],
        &[],
        &cfg(1),
    );
    assert_eq!(actions.len(), 2);
    assert!(matches!(&actions[0], Action::Refuse { stop: true, .. }));
    assert!(
        matches!(&actions[1], Action::Refuse { refusal, stop: false, .. } if refusal.reason == "OutOfpods")
    );
}

#[test]
fn pods_are_admitted_in_the_order_they_were_made() {
    let (old, new) = (pod("z-old", 1, 0), pod("a-new", 2, 0));
    let actions = run(vec![new, old.clone()], &[], &[], &cfg(1));
    assert_eq!(actions.len(), 2);
    assert_eq!(actions[0], Action::Start(old));
    assert!(matches!(&actions[1], Action::Refuse { refusal, .. } if refusal.reason == "OutOfpods"));
}

#[test]
fn finished_pods_run_nothing_and_count_nothing() {
    let mut done = privileged(pod("a", 1, 0));
    done.set_source(crate::model::pod::Source::Api);
    done.status = Some(PodStatus {
        phase: Some(PodPhase::Succeeded),
        ..Default::default()
    });
    let b = pod("b", 2, 0);
    let actions = run(vec![done.clone(), b.clone()], &[], &[], &cfg(1));
    assert_eq!(actions, [Action::Start(done), Action::Start(b)]);
}

#[test]
fn removed_and_terminating_pods() {
    let (a, b) = (pod("a", 1, 0), pod("b", 2, 0));
    let mut gone = b.clone();
    gone.set_source(crate::model::pod::Source::Api);
    gone.metadata.deletion_timestamp = Some("2026-01-01T00:01:00Z".into());
    let workers = [(&a, false, false), (&b, false, false)];
    let actions = run(vec![gone.clone()], &workers, &[], &cfg(10));
    assert_eq!(
        actions,
        [Action::Terminate(gone.clone()), Action::Delete("a".into())]
    );
    // Already stopping: nothing more, neither for it nor for a.
    let actions = run(
        vec![gone],
        &[(&a, true, false), (&b, true, false)],
        &[],
        &cfg(10),
    );
    assert_eq!(actions, []);
}

#[test]
fn a_pod_running_before_a_restart_keeps_running_when_only_its_placement_fails() {
    let c = cfg(10);
    let mut p = pod("a", 1, 100);
    p.spec.node_selector = [("site".to_string(), "hall-3".to_string())].into();
    // A new pod, or one the runtime did not run at the agent's start: refused.
    let a = run(vec![p.clone()], &[], &[], &c);
    assert_eq!(refusal(&a), ("NodeAffinity", false));
    let a = run_adopting(vec![p.clone()], &[], &[], &["b"], &c);
    assert_eq!(refusal(&a), ("NodeAffinity", false));
    // Running at the start: kept, and counted for the pods after it.
    let q = pod("q", 2, 950);
    let a = run_adopting(vec![p.clone(), q.clone()], &[], &[], &["a"], &c);
    assert_eq!(a[0], Action::Adopt(p.clone()));
    assert!(
        matches!(&a[1], Action::Refuse { refusal, .. } if refusal.reason == "OutOfcpu"),
        "{a:?}"
    );
    // Every other check still holds for it.
    let bad = privileged(p.clone());
    let a = run_adopting(vec![bad], &[], &[], &["a"], &c);
    assert_eq!(refusal(&a), ("PodSecurity", false));
}

/// `p` with one ephemeral container, as `kubectl debug` adds it.
fn debugged(mut p: Pod) -> Pod {
    p.spec.ephemeral_containers = vec![serde_json::json!({"name": "debugger", "image": "busybox"})];
    p
}

#[test]
fn ephemeral_containers_added_to_a_running_pod_leave_it_running() {
    let c = cfg(10);
    let p = pod("a", 1, 100);
    // New with them: refused, as the API server refuses them at creation.
    let a = run(vec![debugged(p.clone())], &[], &[], &c);
    assert_eq!(refusal(&a), ("UnsupportedPodSpec", false));
    // Added to the running pod: it keeps running, the refusal said in an Event.
    let a = run(vec![debugged(p.clone())], &[(&p, false, false)], &[], &c);
    match &a[..] {
        [Action::UpdateWithout { pod, refusal }] => {
            assert_eq!(*pod, debugged(p.clone()));
            assert_eq!(refusal.reason, "UnsupportedPodSpec");
            assert!(
                refusal.message.contains("spec.ephemeralContainers"),
                "{refusal:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Later changes are judged without them: an admitted one runs, a refused one stops
    // the pod for what it is, not for the ephemeral containers.
    let running = debugged(p.clone());
    let mut newer = debugged(p.clone());
    newer.spec.containers[0].image = "busybox:2".into();
    let a = run(vec![newer.clone()], &[(&running, false, false)], &[], &c);
    assert_eq!(a, vec![Action::Update(newer)]);
    let bad = debugged(privileged(p.clone()));
    let a = run(vec![bad], &[(&running, false, false)], &[], &c);
    assert_eq!(refusal(&a), ("PodSecurity", true));
}
