use super::*;
use crate::kuberuntime::observed::ObservedSandbox;

fn pod(init: &[&str], apps: &[&str], policy: RestartPolicy) -> Pod {
    let mk = |n: &&str| Container {
        name: n.to_string(),
        image: format!("img-{n}"),
        ..Default::default()
    };
    let mut p = Pod::default();
    p.spec.init_containers = init.iter().map(mk).collect();
    p.spec.containers = apps.iter().map(mk).collect();
    p.spec.restart_policy = policy;
    p
}

/// Hash is the image name, so tests change a spec by changing the image.
fn hash(c: &Container) -> String {
    c.image.clone()
}

fn sandbox(id: &str, ready: bool, attempt: u32, t: i64) -> ObservedSandbox {
    ObservedSandbox {
        id: id.into(),
        ready,
        attempt,
        created_at: t,
        hash: "sb".into(),
        ip: String::new(),
    }
}

fn ctr(id: &str, name: &str, state: State, exit: i32, restarts: u32, t: i64) -> ObservedContainer {
    ObservedContainer {
        id: id.into(),
        sandbox_id: "s1".into(),
        name: name.into(),
        state,
        exit_code: exit,
        reason: String::new(),
        message: String::new(),
        created_at: t,
        started_at: t,
        finished_at: 0,
        hash: format!("img-{name}"),
        restart_count: restarts,
        image: String::new(),
        image_ref: String::new(),
    }
}

fn run(p: &Pod, sandboxes: Vec<ObservedSandbox>, containers: Vec<ObservedContainer>) -> PodActions {
    run_outdated(p, sandboxes, containers, &[])
}

fn run_outdated(
    p: &Pod,
    sandboxes: Vec<ObservedSandbox>,
    containers: Vec<ObservedContainer>,
    outdated: &[String],
) -> PodActions {
    compute_with(p, sandboxes, containers, outdated, false)
}

/// The actions for a pod that has reached Succeeded or Failed.
fn run_terminal(
    p: &Pod,
    sandboxes: Vec<ObservedSandbox>,
    containers: Vec<ObservedContainer>,
) -> PodActions {
    compute_with(p, sandboxes, containers, &[], true)
}

fn compute_with(
    p: &Pod,
    sandboxes: Vec<ObservedSandbox>,
    containers: Vec<ObservedContainer>,
    outdated: &[String],
    terminal: bool,
) -> PodActions {
    let d = Desired {
        pod: p,
        sandbox_hash: "sb",
        container_hash: &hash,
        outdated,
        terminal,
    };
    compute(&d, &ObservedPod::new(sandboxes, containers))
}

fn started(a: &PodActions) -> Vec<(&str, u32)> {
    a.start
        .iter()
        .map(|s| (s.name.as_str(), s.restart_count))
        .collect()
}

#[test]
fn new_pod_gets_a_sandbox_and_all_app_containers() {
    let a = run(
        &pod(&[], &["a", "b"], RestartPolicy::Always),
        vec![],
        vec![],
    );
    assert_eq!(a.create_sandbox, Some(0));
    assert!(!a.kill_pod);
    assert_eq!(started(&a), [("a", 0), ("b", 0)]);
}

#[test]
fn new_pod_with_init_containers_starts_only_the_first_init() {
    let a = run(
        &pod(&["i1", "i2"], &["a"], RestartPolicy::Always),
        vec![],
        vec![],
    );
    assert_eq!(started(&a), [("i1", 0)]);
    assert!(a.start[0].init);
}

#[test]
fn healthy_pod_needs_nothing() {
    let p = pod(&[], &["a"], RestartPolicy::Always);
    let a = run(
        &p,
        vec![sandbox("s1", true, 0, 1)],
        vec![ctr("c1", "a", State::Running, 0, 0, 2)],
    );
    assert_eq!(
        a,
        PodActions {
            sandbox_id: Some("s1".into()),
            ..Default::default()
        }
    );
}

#[test]
fn dead_sandbox_is_recreated_with_the_next_attempt() {
    let p = pod(&[], &["a"], RestartPolicy::Always);
    let a = run(
        &p,
        vec![sandbox("s1", false, 3, 1)],
        vec![ctr("c1", "a", State::Exited, 137, 4, 2)],
    );
    assert!(a.kill_pod);
    assert_eq!(a.create_sandbox, Some(4));
    assert_eq!(started(&a), [("a", 5)]);
    assert_eq!(a.start[0].reason, StartReason::SandboxRecreated);
}

#[test]
fn changed_sandbox_spec_recreates_the_pod() {
    let p = pod(&[], &["a"], RestartPolicy::Always);
    let mut sb = sandbox("s1", true, 0, 1);
    sb.hash = "old".into();
    let a = run(&p, vec![sb], vec![ctr("c1", "a", State::Running, 0, 0, 2)]);
    assert!(a.kill_pod);
    assert_eq!(a.create_sandbox, Some(1));
}

#[test]
fn never_policy_does_not_recreate_a_finished_pod() {
    let p = pod(&[], &["a"], RestartPolicy::Never);
    let a = run(
        &p,
        vec![sandbox("s1", false, 0, 1)],
        vec![ctr("c1", "a", State::Exited, 1, 0, 2)],
    );
    assert!(a.kill_pod);
    assert_eq!(a.create_sandbox, None);
    assert!(a.start.is_empty());
}

#[test]
fn restart_policies_on_exit() {
    let sb = || vec![sandbox("s1", true, 0, 1)];
    let exited = |code| vec![ctr("c1", "a", State::Exited, code, 2, 2)];
    let always = run(&pod(&[], &["a"], RestartPolicy::Always), sb(), exited(0));
    assert_eq!(started(&always), [("a", 3)]);
    assert_eq!(always.start[0].reason, StartReason::Exited { exit_code: 0 });
    let on_failure_ok = run(&pod(&[], &["a"], RestartPolicy::OnFailure), sb(), exited(0));
    assert!(on_failure_ok.start.is_empty());
    assert!(
        on_failure_ok.kill_pod,
        "all containers done: the sandbox is stopped"
    );
    let on_failure_bad = run(&pod(&[], &["a"], RestartPolicy::OnFailure), sb(), exited(3));
    assert_eq!(started(&on_failure_bad), [("a", 3)]);
    let never = run(&pod(&[], &["a"], RestartPolicy::Never), sb(), exited(3));
    assert!(never.start.is_empty());
    assert!(never.kill_pod);
}

#[test]
fn changed_container_spec_replaces_only_that_container() {
    let mut p = pod(&[], &["a", "b"], RestartPolicy::Always);
    p.spec.containers[1].image = "img-b2".into();
    let a = run(
        &p,
        vec![sandbox("s1", true, 0, 1)],
        vec![
            ctr("c1", "a", State::Running, 0, 0, 2),
            ctr("c2", "b", State::Running, 0, 1, 3),
        ],
    );
    assert_eq!(
        a.kill.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(),
        ["c2"]
    );
    assert_eq!(started(&a), [("b", 2)]);
    assert_eq!(a.start[0].reason, StartReason::SpecChanged);
    assert!(!a.kill_pod);
}

#[test]
fn a_container_whose_image_the_registry_replaced_is_replaced_as_a_spec_change() {
    let p = pod(&[], &["a", "b"], RestartPolicy::Always);
    let running = || {
        vec![
            ctr("c1", "a", State::Running, 0, 0, 2),
            ctr("c2", "b", State::Running, 0, 1, 3),
        ]
    };
    let a = run_outdated(
        &p,
        vec![sandbox("s1", true, 0, 1)],
        running(),
        &["c2".to_string()],
    );
    assert_eq!(
        a.kill.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(),
        ["c2"]
    );
    assert_eq!(started(&a), [("b", 2)]);
    assert_eq!(a.start[0].reason, StartReason::ImageChanged);
    assert!(!a.kill_pod && a.create_sandbox.is_none());
    // An id that no longer runs (already replaced) changes nothing.
    let a = run_outdated(
        &p,
        vec![sandbox("s1", true, 0, 1)],
        running(),
        &["gone".to_string()],
    );
    assert!(a.kill.is_empty() && a.start.is_empty(), "{a:?}");
}

#[test]
fn init_containers_run_in_order_then_apps() {
    let p = pod(&["i1", "i2"], &["a"], RestartPolicy::Always);
    let sb = || vec![sandbox("s1", true, 0, 1)];
    let running = run(&p, sb(), vec![ctr("x", "i1", State::Running, 0, 0, 2)]);
    assert!(running.start.is_empty() && !running.kill_pod);
    let first_done = run(&p, sb(), vec![ctr("x", "i1", State::Exited, 0, 0, 2)]);
    assert_eq!(started(&first_done), [("i2", 0)]);
    let all_done = run(
        &p,
        sb(),
        vec![
            ctr("x", "i1", State::Exited, 0, 0, 2),
            ctr("y", "i2", State::Exited, 0, 0, 3),
        ],
    );
    assert_eq!(started(&all_done), [("a", 0)]);
}

#[test]
fn failed_init_container_restarts_or_fails_the_pod() {
    let sb = || vec![sandbox("s1", true, 0, 1)];
    let failed = || vec![ctr("x", "i1", State::Exited, 2, 1, 2)];
    let always = run(&pod(&["i1"], &["a"], RestartPolicy::Always), sb(), failed());
    assert_eq!(started(&always), [("i1", 2)]);
    let never = run(&pod(&["i1"], &["a"], RestartPolicy::Never), sb(), failed());
    assert!(never.init_failed && never.kill_pod && never.start.is_empty());
}

#[test]
fn strays_are_killed() {
    let p = pod(&[], &["a"], RestartPolicy::Always);
    let mut old = ctr("c0", "a", State::Running, 0, 0, 1);
    old.sandbox_id = "s0".into();
    let a = run(
        &p,
        vec![sandbox("s1", true, 1, 5)],
        vec![
            old,
            ctr("c1", "a", State::Running, 0, 1, 6),
            ctr("z", "gone", State::Running, 0, 0, 6),
        ],
    );
    let mut killed: Vec<_> = a.kill.iter().map(|k| k.id.as_str()).collect();
    killed.sort();
    assert_eq!(killed, ["c0", "z"]);
    assert!(a.start.is_empty());
}

#[test]
fn a_container_being_created_is_not_started_twice() {
    let p = pod(&[], &["a"], RestartPolicy::Always);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let mut c = ctr("c1", "a", State::Created, 0, 0, now);
    c.started_at = 0;
    let a = run(&p, vec![sandbox("s1", true, 0, 1)], vec![c.clone()]);
    assert!(a.start.is_empty());
    c.created_at = now - 120_000_000_000;
    let stale = run(&p, vec![sandbox("s1", true, 0, 1)], vec![c]);
    assert_eq!(started(&stale), [("a", 1)]);
}

fn now_ns() -> i64 {
    crate::kuberuntime::time::unix_nanos(std::time::SystemTime::now())
}

/// A container made at `t` and never started.
fn unstarted(id: &str, name: &str, restarts: u32, t: i64) -> ObservedContainer {
    let mut c = ctr(id, name, State::Created, 0, restarts, t);
    c.started_at = 0;
    c
}

fn ids(list: &[Kill]) -> Vec<&str> {
    list.iter().map(|k| k.id.as_str()).collect()
}

#[test]
fn failed_init_container_under_never_stays_failed_once_the_sandbox_is_stopped() {
    // The sync after the pod was killed: its sandbox is no longer ready, which is the
    // sandbox-recreate path; the pod must still be failed, and nothing made again.
    let p = pod(&["i1"], &["a"], RestartPolicy::Never);
    let a = run(
        &p,
        vec![sandbox("s1", false, 0, 1)],
        vec![ctr("x", "i1", State::Exited, 2, 0, 2)],
    );
    assert!(a.init_failed, "{a:?}");
    assert!(a.start.is_empty() && a.resume.is_empty() && a.create_sandbox.is_none());
    // Under Never an init container that succeeded before the stop fails nothing.
    let ok = run(
        &p,
        vec![sandbox("s1", false, 0, 1)],
        vec![
            ctr("x", "i1", State::Exited, 0, 0, 2),
            ctr("y", "a", State::Exited, 1, 0, 3),
        ],
    );
    assert!(!ok.init_failed && ok.start.is_empty() && ok.create_sandbox.is_none());
}

#[test]
fn a_terminal_pod_is_never_restarted_nor_its_sandbox_recreated() {
    let sb = || vec![sandbox("s1", false, 0, 1)];
    // Whatever the runtime shows: its containers gone (GC, a reboot that lost them),
    // exited under OnFailure or Always, an init container that failed.
    for policy in [
        RestartPolicy::Never,
        RestartPolicy::OnFailure,
        RestartPolicy::Always,
    ] {
        let p = pod(&[], &["a"], policy);
        for containers in [vec![], vec![ctr("c1", "a", State::Exited, 1, 0, 2)]] {
            let a = run_terminal(&p, sb(), containers.clone());
            assert_eq!(
                a,
                PodActions {
                    kill_pod: true,
                    ..Default::default()
                },
                "{policy:?} {containers:?}"
            );
            let none = run_terminal(&p, vec![], containers);
            assert!(none.start.is_empty() && none.create_sandbox.is_none());
        }
    }
    // Not terminal, the same pod would be started again: the rule is what stops it.
    let p = pod(&[], &["a"], RestartPolicy::OnFailure);
    assert_eq!(started(&run(&p, vec![], vec![])), [("a", 0)]);
    // Running containers of a terminal pod (a deadline) are stopped, nothing more.
    let p = pod(&["i1"], &["a"], RestartPolicy::Never);
    let a = run_terminal(
        &p,
        vec![sandbox("s1", true, 0, 1)],
        vec![ctr("x", "i1", State::Exited, 2, 0, 2)],
    );
    assert!(a.kill_pod && a.init_failed && a.start.is_empty());
}

#[test]
fn a_fresh_unstarted_container_is_started_as_it_is() {
    let sb = || vec![sandbox("s1", true, 0, 1)];
    let p = pod(&[], &["a", "b"], RestartPolicy::Always);
    let a = run(
        &p,
        sb(),
        vec![
            unstarted("c1", "a", 0, now_ns()),
            ctr("c2", "b", State::Running, 0, 0, 2),
        ],
    );
    let r = Start {
        index: 0,
        init: false,
        name: "a".into(),
        restart_count: 0,
        reason: StartReason::Made { id: "c1".into() },
    };
    assert_eq!(a.resume, [r]);
    assert!(a.start.is_empty() && a.remove.is_empty() && a.kill.is_empty() && !a.kill_pod);
    // Under Never too: it never ran, so this is its first start.
    let never = run(
        &pod(&[], &["a"], RestartPolicy::Never),
        sb(),
        vec![unstarted("c1", "a", 0, now_ns())],
    );
    assert_eq!(never.resume.len(), 1, "{never:?}");
    assert!(!never.kill_pod);
    // An init container, in its turn.
    let p = pod(&["i1", "i2"], &["a"], RestartPolicy::Always);
    let a = run(
        &p,
        sb(),
        vec![
            ctr("x", "i1", State::Exited, 0, 0, 2),
            unstarted("y", "i2", 3, now_ns()),
        ],
    );
    let r = &a.resume[..];
    assert_eq!(
        (r.len(), r[0].index, r[0].init, r[0].restart_count),
        (1, 1, true, 3)
    );
    assert_eq!(r[0].reason, StartReason::Made { id: "y".into() });
    assert!(a.start.is_empty());
}

#[test]
fn an_unstarted_container_that_cannot_start_now_is_removed_and_replaced() {
    let sb = || vec![sandbox("s1", true, 0, 1)];
    let p = pod(&[], &["a"], RestartPolicy::Never);
    let stale = unstarted("c1", "a", 0, now_ns() - 120_000_000_000);
    let mut old_sandbox = unstarted("c1", "a", 0, now_ns());
    old_sandbox.sandbox_id = "s0".into();
    let mut old_spec = unstarted("c1", "a", 0, now_ns());
    old_spec.hash = "img-old".into();
    for c in [stale, old_sandbox, old_spec] {
        let a = run(&p, sb(), vec![c.clone()]);
        assert_eq!(ids(&a.remove), ["c1"], "{c:?}");
        // A first start even under Never; the next attempt, as kubelet counts.
        assert_eq!(started(&a), [("a", 1)], "{c:?}");
        assert_eq!(a.start[0].reason, StartReason::NeverStarted);
        assert!(a.resume.is_empty());
    }
    // An older instance never started, a newer one runs: the old one goes.
    let p = pod(&[], &["a"], RestartPolicy::Always);
    let a = run(
        &p,
        sb(),
        vec![
            unstarted("c0", "a", 0, now_ns() - 1000),
            ctr("c1", "a", State::Running, 0, 1, now_ns()),
        ],
    );
    assert_eq!(ids(&a.remove), ["c0"]);
    assert!(a.start.is_empty() && a.resume.is_empty());
    // The sandbox is made anew: every unstarted container goes with the old one.
    let a = run(
        &p,
        vec![sandbox("s1", false, 0, 1)],
        vec![unstarted("c1", "a", 0, now_ns())],
    );
    assert_eq!(ids(&a.remove), ["c1"]);
    assert_eq!(started(&a), [("a", 1)]);
    assert_eq!(a.create_sandbox, Some(1));
    // Under Never too: a pod whose containers never ran has not run.
    let never = pod(&[], &["a"], RestartPolicy::Never);
    let a = run(
        &never,
        vec![sandbox("s1", false, 0, 1)],
        vec![unstarted("c1", "a", 0, now_ns())],
    );
    assert_eq!(ids(&a.remove), ["c1"]);
    assert_eq!(started(&a), [("a", 1)]);
    assert_eq!(a.create_sandbox, Some(1));
}
