use super::*;
use crate::kuberuntime::observed::ObservedSandbox;

fn pod(init: &[&str], apps: &[&str], policy: RestartPolicy) -> Pod {
    let mk = |n: &&str| Container {
        name: n.to_string(),
        image: "busybox:1".into(),
        ..Default::default()
    };
    let mut p = Pod::default();
    p.spec.init_containers = init.iter().map(mk).collect();
    p.spec.containers = apps.iter().map(mk).collect();
    p.spec.restart_policy = policy;
    p
}

fn ctr(id: &str, name: &str, state: State, exit: i32, restarts: u32, t: i64) -> ObservedContainer {
    ObservedContainer {
        id: id.into(),
        sandbox_id: "s".into(),
        name: name.into(),
        state,
        exit_code: exit,
        reason: String::new(),
        message: String::new(),
        created_at: t,
        started_at: if state == State::Created { 0 } else { t + 1 },
        finished_at: if state == State::Exited { t + 2 } else { 0 },
        hash: String::new(),
        restart_count: restarts,
        image: String::new(),
        image_ref: "sha256:img".into(),
    }
}

fn sandbox() -> Vec<ObservedSandbox> {
    vec![ObservedSandbox {
        id: "s".into(),
        ready: true,
        attempt: 0,
        created_at: 1,
        hash: String::new(),
        ip: "10.1.0.7".into(),
    }]
}

struct Case {
    pod: Pod,
    observed: ObservedPod,
    waiting: BTreeMap<String, Waiting>,
    init_failed: bool,
    probes: BTreeMap<String, ProbeStatus>,
    failed: Option<(&'static str, &'static str)>,
    terminal: Option<PodPhase>,
}

impl Case {
    fn new(pod: Pod, containers: Vec<ObservedContainer>) -> Case {
        Case {
            pod,
            observed: ObservedPod::new(sandbox(), containers),
            waiting: BTreeMap::new(),
            init_failed: false,
            probes: BTreeMap::new(),
            failed: None,
            terminal: None,
        }
    }
    fn wait(mut self, name: &str, reason: &str) -> Case {
        self.waiting.insert(
            name.into(),
            Waiting {
                reason: Reason::parse(reason).expect("a known reason"),
                message: format!("{reason} msg"),
            },
        );
        self
    }
    fn status(&self, previous: Option<&PodStatus>, now: &str) -> PodStatus {
        pod_status(&StatusInput {
            pod: &self.pod,
            observed: &self.observed,
            waiting: &self.waiting,
            previous,
            host_ip: "192.0.2.10",
            runtime_name: "containerd",
            now,
            init_failed: self.init_failed,
            probes: &self.probes,
            failed: self
                .failed
                .map(|(r, m)| (Reason::parse(r).expect("a known reason"), m)),
            terminal: self.terminal,
        })
    }
}

const NOW: &str = "2026-11-29T10:00:00Z";
const LATER: &str = "2026-11-29T11:00:00Z";

fn cond(s: &PodStatus, t: PodConditionType) -> &PodCondition {
    s.conditions.iter().find(|c| c.type_ == t).unwrap()
}

#[test]
fn running_pod() {
    let s = Case::new(
        pod(&[], &["a"], RestartPolicy::Always),
        vec![ctr(
            "c1",
            "a",
            State::Running,
            0,
            0,
            1_700_000_000_000_000_000,
        )],
    )
    .status(None, NOW);
    assert_eq!(s.phase, Some(PodPhase::Running));
    assert_eq!(s.pod_ip, "10.1.0.7");
    assert_eq!(s.host_ip, "192.0.2.10");
    let cs = &s.container_statuses[0];
    assert!(cs.ready && cs.state.running.is_some());
    assert_eq!(cs.container_id, "containerd://c1");
    assert_eq!(cs.image_id, "sha256:img");
    assert_eq!(
        cs.state.running.as_ref().unwrap().started_at.as_deref(),
        Some("2023-11-14T22:13:20Z")
    );
    assert_eq!(
        cond(&s, PodConditionType::Ready).status,
        ConditionStatus::True
    );
    assert_eq!(s.start_time.as_deref(), Some(NOW));
    assert_eq!(s.qos_class, "BestEffort", "no requests or limits");
}

#[test]
fn creating_and_pull_errors_are_pending() {
    let s = Case::new(pod(&[], &["a"], RestartPolicy::Always), vec![]).status(None, NOW);
    assert_eq!(s.phase, Some(PodPhase::Pending));
    assert_eq!(
        s.container_statuses[0]
            .state
            .waiting
            .as_ref()
            .unwrap()
            .reason,
        "ContainerCreating"
    );
    let s = Case::new(pod(&[], &["a"], RestartPolicy::Always), vec![])
        .wait("a", "ImagePullBackOff")
        .status(None, NOW);
    assert_eq!(
        s.container_statuses[0]
            .state
            .waiting
            .as_ref()
            .unwrap()
            .reason,
        "ImagePullBackOff"
    );
    let r = cond(&s, PodConditionType::Ready);
    assert_eq!(
        (r.status, r.reason.as_str(), r.message.as_str()),
        (
            ConditionStatus::False,
            "ContainersNotReady",
            "containers with unready status: [a]"
        )
    );
}

#[test]
fn crash_loop_is_running_phase_with_waiting_and_last_state() {
    let s = Case::new(
        pod(&[], &["a"], RestartPolicy::Always),
        vec![ctr("c2", "a", State::Exited, 3, 2, 10)],
    )
    .wait("a", "CrashLoopBackOff")
    .status(None, NOW);
    assert_eq!(s.phase, Some(PodPhase::Running));
    let cs = &s.container_statuses[0];
    assert_eq!(
        cs.state.waiting.as_ref().unwrap().reason,
        "CrashLoopBackOff"
    );
    let last = cs.last_state.terminated.as_ref().unwrap();
    assert_eq!((last.exit_code, last.reason.as_str()), (3, "Error"));
    assert_eq!(cs.restart_count, 2);
}

#[test]
fn terminal_phases() {
    let ok = Case::new(
        pod(&[], &["a", "b"], RestartPolicy::Never),
        vec![
            ctr("1", "a", State::Exited, 0, 0, 1),
            ctr("2", "b", State::Exited, 0, 0, 1),
        ],
    )
    .status(None, NOW);
    assert_eq!(ok.phase, Some(PodPhase::Succeeded));
    assert_eq!(
        ok.container_statuses[0]
            .state
            .terminated
            .as_ref()
            .unwrap()
            .reason,
        "Completed"
    );
    assert_eq!(cond(&ok, PodConditionType::Ready).reason, "PodCompleted");
    let bad = Case::new(
        pod(&[], &["a", "b"], RestartPolicy::Never),
        vec![
            ctr("1", "a", State::Exited, 0, 0, 1),
            ctr("2", "b", State::Exited, 1, 0, 1),
        ],
    )
    .status(None, NOW);
    assert_eq!(bad.phase, Some(PodPhase::Failed));
    let on_failure = Case::new(
        pod(&[], &["a"], RestartPolicy::OnFailure),
        vec![ctr("1", "a", State::Exited, 1, 0, 1)],
    )
    .status(None, NOW);
    assert_eq!(on_failure.phase, Some(PodPhase::Running));
}

#[test]
fn a_failed_pod_is_failed_with_its_reason_whatever_its_containers_do() {
    let mut c = Case::new(
        pod(&[], &["a"], RestartPolicy::Always),
        vec![ctr("1", "a", State::Running, 0, 0, 1)],
    );
    c.failed = Some(("DeadlineExceeded", "too long"));
    let s = c.status(None, NOW);
    assert_eq!(s.phase, Some(PodPhase::Failed));
    assert_eq!(
        (s.reason.as_str(), s.message.as_str()),
        ("DeadlineExceeded", "too long")
    );
    assert_eq!(cond(&s, PodConditionType::Ready).reason, "PodCompleted");
    assert!(s.container_statuses[0].state.running.is_some());
}

#[test]
fn init_containers() {
    let p = pod(&["i1", "i2"], &["a"], RestartPolicy::Never);
    let mid = Case::new(
        p.clone(),
        vec![
            ctr("1", "i1", State::Exited, 0, 0, 1),
            ctr("2", "i2", State::Running, 0, 0, 2),
        ],
    )
    .status(None, NOW);
    assert_eq!(mid.phase, Some(PodPhase::Pending));
    // kubelet's `ready` of an init container: it completed (exited 0), not that it runs.
    let ready: Vec<bool> = mid
        .init_container_statuses
        .iter()
        .map(|s| s.ready)
        .collect();
    assert_eq!(ready, [true, false]);
    // The app container waits for the init containers: PodInitializing.
    let app = &mid.container_statuses[0].state.waiting;
    assert_eq!(
        app.as_ref().map(|w| w.reason.as_str()),
        Some("PodInitializing")
    );
    // So does a pending init container, and one whose pod is still being set up
    // (sandbox, volumes, a token: ContainerCreating is no reason of its own).
    let early = Case::new(p.clone(), vec![])
        .wait("i1", "ContainerCreating")
        .status(None, NOW);
    let reasons: Vec<&str> = early
        .init_container_statuses
        .iter()
        .chain(&early.container_statuses)
        .map(|s| s.state.waiting.as_ref().map_or("", |w| w.reason.as_str()))
        .collect();
    assert_eq!(reasons, ["PodInitializing"; 3]);
    let init = cond(&mid, PodConditionType::Initialized);
    assert_eq!(
        (init.status, init.reason.as_str(), init.message.as_str()),
        (
            ConditionStatus::False,
            "ContainersNotInitialized",
            "containers with incomplete status: [i2]"
        )
    );
    let mut failed = Case::new(p.clone(), vec![ctr("1", "i1", State::Exited, 7, 0, 1)]);
    failed.init_failed = true;
    assert_eq!(failed.status(None, NOW).phase, Some(PodPhase::Failed));
    let done = Case::new(
        p,
        vec![
            ctr("1", "i1", State::Exited, 0, 0, 1),
            ctr("2", "i2", State::Exited, 0, 0, 2),
            ctr("3", "a", State::Running, 0, 0, 3),
        ],
    )
    .status(None, NOW);
    assert_eq!(done.phase, Some(PodPhase::Running));
    assert_eq!(
        cond(&done, PodConditionType::Initialized).status,
        ConditionStatus::True
    );
}

#[test]
fn unchanged_pod_gives_an_identical_status_later() {
    let case = Case::new(
        pod(&[], &["a"], RestartPolicy::Always),
        vec![ctr("c1", "a", State::Running, 0, 0, 5)],
    );
    let first = case.status(None, NOW);
    assert_eq!(case.status(Some(&first), LATER), first);
    let changed = Case::new(
        pod(&[], &["a"], RestartPolicy::Always),
        vec![ctr("c2", "a", State::Exited, 1, 1, 6)],
    )
    .wait("a", "CrashLoopBackOff");
    let second = changed.status(Some(&first), LATER);
    assert_eq!(
        cond(&second, PodConditionType::Ready)
            .last_transition_time
            .as_deref(),
        Some(LATER)
    );
    assert_eq!(
        cond(&second, PodConditionType::PodScheduled)
            .last_transition_time
            .as_deref(),
        Some(NOW)
    );
    assert_eq!(second.start_time.as_deref(), Some(NOW));
}

#[test]
fn host_network_pod_ip_is_the_host_ip() {
    let mut p = pod(&[], &["a"], RestartPolicy::Always);
    p.spec.host_network = true;
    let s = Case::new(p, vec![ctr("c1", "a", State::Running, 0, 0, 5)]).status(None, NOW);
    assert_eq!(s.pod_ip, "192.0.2.10");
}

#[test]
fn probes_drive_started_ready_and_the_conditions() {
    use crate::model::container::Probe;
    let mut p = pod(&[], &["a", "b"], RestartPolicy::Always);
    p.spec.containers[0].readiness_probe = Some(Probe::default());
    p.spec.containers[1].startup_probe = Some(Probe::default());
    let running = vec![
        ctr("c1", "a", State::Running, 0, 0, 10),
        ctr("c2", "b", State::Running, 0, 0, 10),
    ];
    let mut case = Case::new(p, running);
    // No verdict yet: a readiness probe means not ready, a startup probe not started.
    let s = case.status(None, NOW);
    let (a, b) = (&s.container_statuses[0], &s.container_statuses[1]);
    assert_eq!((a.started, a.ready), (Some(true), false));
    assert_eq!((b.started, b.ready), (Some(false), false));
    assert_eq!(
        cond(&s, PodConditionType::Ready).status,
        ConditionStatus::False
    );
    assert_eq!(
        cond(&s, PodConditionType::ContainersReady).message,
        "containers with unready status: [a b]"
    );
    // The probes have spoken: both ready, the conditions flip, times move.
    let ok = ProbeStatus {
        started: true,
        ready: true,
    };
    case.probes.insert("c1".into(), ok);
    case.probes.insert("c2".into(), ok);
    let s2 = case.status(Some(&s), LATER);
    assert!(s2.container_statuses.iter().all(|c| c.ready));
    let ready = cond(&s2, PodConditionType::Ready);
    assert_eq!(ready.status, ConditionStatus::True);
    assert_eq!(ready.last_transition_time.as_deref(), Some(LATER));
    assert_eq!(
        cond(&s2, PodConditionType::ContainersReady).status,
        ConditionStatus::True
    );
    // Readiness lost again; a result for an old instance id is not used.
    case.probes.insert(
        "c1".into(),
        ProbeStatus {
            started: true,
            ready: false,
        },
    );
    case.probes.remove("c2");
    case.probes.insert("old".into(), ok);
    let s3 = case.status(Some(&s2), NOW);
    assert!(!s3.container_statuses[0].ready && !s3.container_statuses[1].ready);
    assert_eq!(
        cond(&s3, PodConditionType::Ready).status,
        ConditionStatus::False
    );
}

#[test]
fn a_terminal_phase_is_kept_whatever_the_containers_show() {
    // Failed, then its containers are gone (GC, a reboot) or an init container shows
    // waiting again: still Failed, and not ready because it completed.
    let never = || pod(&["init"], &["a"], RestartPolicy::Never);
    for containers in [vec![], vec![ctr("x", "init", State::Exited, 2, 0, 5)]] {
        let mut case = Case::new(never(), containers);
        case.terminal = Some(PodPhase::Failed);
        let s = case.status(None, NOW);
        assert_eq!(s.phase, Some(PodPhase::Failed), "{s:?}");
        let ready = cond(&s, PodConditionType::Ready);
        assert_eq!(ready.status, ConditionStatus::False);
        assert_eq!(ready.reason, "PodCompleted");
    }
    // Succeeded stays Succeeded, even with a container running again.
    let mut case = Case::new(
        pod(&[], &["a"], RestartPolicy::OnFailure),
        vec![ctr("c2", "a", State::Running, 0, 1, 9)],
    );
    case.terminal = Some(PodPhase::Succeeded);
    assert_eq!(case.status(None, NOW).phase, Some(PodPhase::Succeeded));
}
