//! The v1 PodStatus kubelet would report, computed from the pod spec, what the runtime
//! shows (`ObservedPod`) and the waiting reasons the worker knows (back-off, pull and
//! config errors). Pure: the caller passes the clock and the previous status, so
//! transition times only move when something changed, and an unchanged pod yields an
//! identical status (the status file is then not rewritten).

use super::observed::{ObservedContainer, ObservedPod, State};
use super::time::rfc3339_of;
use crate::model::pod::RestartPolicy;
use crate::model::status::{
    ConditionStatus, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, PodCondition, PodConditionType, PodIp, PodPhase,
    PodStatus,
};
use crate::model::{Container, Pod, Reason};
use std::collections::BTreeMap;

/// What a running container's probes say (kubelet's `started` and `ready`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeStatus {
    /// Its startup probe has succeeded (or it has none).
    pub started: bool,
    /// Started, and its readiness probe succeeds (or it has none).
    pub ready: bool,
}

/// A reason a container is not running that only the worker knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// What the container's waiting state shows.
    pub reason: Reason,
    /// The detail.
    pub message: String,
}

/// What [`pod_status`] computes the status from.
pub struct StatusInput<'a> {
    /// The pod's spec.
    pub pod: &'a Pod,
    /// What the runtime shows of it.
    pub observed: &'a ObservedPod,
    /// By container name.
    pub waiting: &'a BTreeMap<String, Waiting>,
    /// The status written last, if any.
    pub previous: Option<&'a PodStatus>,
    /// The host's IP (`status.hostIP`).
    pub host_ip: &'a str,
    /// Runtime name for container ids (`containerd://ID`).
    pub runtime_name: &'a str,
    /// RFC 3339 "now", used for new transitions and the start time.
    pub now: &'a str,
    /// Set when an init container failed under `restartPolicy: Never`.
    pub init_failed: bool,
    /// Probe results by container id. A running container without an entry is started
    /// and ready unless its spec has a startup or readiness probe (whose first verdict
    /// has not come yet).
    pub probes: &'a BTreeMap<String, ProbeStatus>,
    /// Set when the pod as a whole has failed (activeDeadlineSeconds): phase Failed with
    /// this reason and message, whatever its containers do.
    pub failed: Option<(Reason, &'a str)>,
    /// The terminal phase (Succeeded or Failed) the pod has already reached: kept,
    /// whatever its containers show now (kubelet never leaves one).
    pub terminal: Option<PodPhase>,
}

/// Computes the pod's status.
pub fn pod_status(input: &StatusInput) -> PodStatus {
    let pod = input.pod;
    let init: Vec<ContainerStatus> = pod
        .spec
        .init_containers
        .iter()
        .map(|c| init_container_status(input, c))
        .collect();
    let apps: Vec<ContainerStatus> = pod
        .spec
        .containers
        .iter()
        .map(|c| container_status(input, c))
        .collect();
    let phase = match (input.terminal, input.failed) {
        (Some(p), _) => p,
        (None, Some(_)) => PodPhase::Failed,
        (None, None) => phase(pod.spec.restart_policy, &init, &apps, input.init_failed),
    };
    let pod_ip = if pod.spec.host_network {
        input.host_ip.to_string()
    } else {
        input
            .observed
            .latest_sandbox()
            .map(|s| s.ip.clone())
            .unwrap_or_default()
    };
    let mut status = PodStatus {
        phase: Some(phase),
        host_ip: input.host_ip.to_string(),
        pod_ips: if pod_ip.is_empty() {
            vec![]
        } else {
            vec![PodIp { ip: pod_ip.clone() }]
        },
        pod_ip,
        start_time: Some(
            input
                .previous
                .and_then(|p| p.start_time.clone())
                .unwrap_or_else(|| input.now.to_string()),
        ),
        qos_class: super::resources::qos_class(pod).as_str().to_string(),
        ..Default::default()
    };
    if let Some((reason, message)) = input.failed {
        status.reason = reason.into();
        status.message = message.to_string();
    }
    status.conditions = conditions(input, phase, &init, &apps);
    status.init_container_statuses = init;
    status.container_statuses = apps;
    status
}

fn terminated(input: &StatusInput, c: &ObservedContainer) -> ContainerStateTerminated {
    let reason = match c.reason.as_str() {
        "" if c.exit_code == 0 => Reason::Completed.into(),
        "" => Reason::Error.into(),
        r => r.to_string(),
    };
    ContainerStateTerminated {
        exit_code: c.exit_code,
        signal: 0,
        reason,
        message: c.message.clone(),
        started_at: rfc3339_of(c.started_at),
        finished_at: rfc3339_of(c.finished_at),
        container_id: container_id(input, c),
    }
}

fn container_id(input: &StatusInput, c: &ObservedContainer) -> String {
    format!("{}://{}", input.runtime_name, c.id)
}

/// An init container's status: as an app container's, but `ready` says it completed
/// (exited 0), as kubelet reports it, not what a probe says while it runs.
fn init_container_status(input: &StatusInput, spec: &Container) -> ContainerStatus {
    let mut st = container_status(input, spec);
    st.ready = st
        .state
        .terminated
        .as_ref()
        .is_some_and(|t| t.exit_code == 0);
    st
}

/// The reason a container that has none of its own waits with: kubelet's
/// `PodInitializing` in a pod with init containers (for them and the app containers
/// alike), else `ContainerCreating`.
fn default_waiting(pod: &Pod) -> Reason {
    if pod.spec.init_containers.is_empty() {
        Reason::ContainerCreating
    } else {
        Reason::PodInitializing
    }
}

fn container_status(input: &StatusInput, spec: &Container) -> ContainerStatus {
    let latest = input.observed.latest(&spec.name);
    let waiting = input.waiting.get(&spec.name);
    let mut st = ContainerStatus {
        name: spec.name.clone(),
        image: spec.image.clone(),
        ..Default::default()
    };
    let Some(l) = latest else {
        // Being made (a sandbox, volumes, a token) is no reason of its own: kubelet
        // shows its default, `PodInitializing` in a pod with init containers.
        let (reason, message) = waiting.map_or(
            (default_waiting(input.pod).into(), String::new()),
            |w| match w.reason {
                Reason::ContainerCreating => (default_waiting(input.pod).into(), w.message.clone()),
                r => (r.into(), w.message.clone()),
            },
        );
        st.state.waiting = Some(ContainerStateWaiting { reason, message });
        st.started = Some(false);
        return st;
    };
    st.restart_count = l.restart_count.min(i32::MAX as u32) as i32;
    st.image_id = l.image_ref.clone();
    st.container_id = container_id(input, l);
    match (l.state, waiting) {
        (State::Running, _) => {
            st.state.running = Some(ContainerStateRunning {
                started_at: rfc3339_of(l.started_at),
            });
            let p = input.probes.get(&l.id).copied().unwrap_or_else(|| {
                let started = spec.startup_probe.is_none();
                ProbeStatus {
                    started,
                    ready: started && spec.readiness_probe.is_none(),
                }
            });
            st.ready = p.ready;
            st.started = Some(p.started);
            st.last_state = input
                .observed
                .previous(&spec.name)
                .map(|p| terminated_state(input, p))
                .unwrap_or_default();
        }
        // Exited and being held back (CrashLoopBackOff, ...): waiting now, last run terminated.
        (State::Exited, Some(w)) => {
            st.state.waiting = Some(ContainerStateWaiting {
                reason: w.reason.into(),
                message: w.message.clone(),
            });
            st.last_state = terminated_state(input, l);
            st.started = Some(false);
        }
        (State::Exited, None) => {
            st.state.terminated = Some(terminated(input, l));
            st.last_state = input
                .observed
                .previous(&spec.name)
                .map(|p| terminated_state(input, p))
                .unwrap_or_default();
            st.started = Some(false);
        }
        (State::Created | State::Unknown, w) => {
            let (reason, message) = w
                .map_or((Reason::ContainerCreating.into(), String::new()), |w| {
                    (w.reason.into(), w.message.clone())
                });
            st.state.waiting = Some(ContainerStateWaiting { reason, message });
            st.last_state = input
                .observed
                .previous(&spec.name)
                .map(|p| terminated_state(input, p))
                .unwrap_or_default();
            st.started = Some(false);
        }
    }
    st
}

fn terminated_state(input: &StatusInput, c: &ObservedContainer) -> ContainerState {
    if c.state != State::Exited {
        return ContainerState::default();
    }
    ContainerState {
        terminated: Some(terminated(input, c)),
        ..Default::default()
    }
}

/// kubelet's getPhase.
fn phase(
    policy: RestartPolicy,
    init: &[ContainerStatus],
    apps: &[ContainerStatus],
    init_failed: bool,
) -> PodPhase {
    if init_failed {
        return PodPhase::Failed;
    }
    let init_pending = init
        .iter()
        .any(|s| s.state.terminated.as_ref().is_none_or(|t| t.exit_code != 0));
    if init_pending {
        return PodPhase::Pending;
    }
    let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for s in apps {
        if s.state.running.is_some() {
            running += 1;
        } else if let Some(t) = &s.state.terminated {
            stopped += 1;
            if t.exit_code == 0 {
                succeeded += 1;
            }
        } else if s.last_state.terminated.is_some() {
            // Waiting to be restarted after having run.
            stopped += 1;
        } else {
            waiting += 1;
        }
    }
    match () {
        _ if waiting > 0 => PodPhase::Pending,
        _ if running > 0 => PodPhase::Running,
        _ if stopped > 0 => match policy {
            RestartPolicy::Always => PodPhase::Running,
            _ if stopped == succeeded => PodPhase::Succeeded,
            RestartPolicy::Never => PodPhase::Failed,
            RestartPolicy::OnFailure => PodPhase::Running,
        },
        _ => PodPhase::Pending,
    }
}

fn conditions(
    input: &StatusInput,
    phase: PodPhase,
    init: &[ContainerStatus],
    apps: &[ContainerStatus],
) -> Vec<PodCondition> {
    let unready: Vec<&str> = apps
        .iter()
        .filter(|s| !s.ready)
        .map(|s| s.name.as_str())
        .collect();
    let finished = matches!(phase, PodPhase::Succeeded | PodPhase::Failed);
    let ready = |_: ()| -> (bool, &str, String) {
        if finished {
            (false, Reason::PodCompleted.as_str(), String::new())
        } else if unready.is_empty() {
            (true, "", String::new())
        } else {
            (
                false,
                Reason::ContainersNotReady.as_str(),
                format!("containers with unready status: [{}]", unready.join(" ")),
            )
        }
    };
    let (r, reason, message) = ready(());
    // kubelet's: the init containers that have not completed (their `ready`).
    let incomplete: Vec<&str> = init
        .iter()
        .filter(|s| !s.ready)
        .map(|s| s.name.as_str())
        .collect();
    let init_cond = if incomplete.is_empty() {
        (true, "", String::new())
    } else {
        (
            false,
            Reason::ContainersNotInitialized.as_str(),
            format!(
                "containers with incomplete status: [{}]",
                incomplete.join(" ")
            ),
        )
    };
    let list = [
        (
            PodConditionType::Initialized,
            init_cond.0,
            init_cond.1,
            init_cond.2,
        ),
        (PodConditionType::Ready, r, reason, message.clone()),
        (PodConditionType::ContainersReady, r, reason, message),
        (PodConditionType::PodScheduled, true, "", String::new()),
    ];
    list.into_iter()
        .map(|(t, ok, reason, message)| condition(input, t, ok, reason, message))
        .collect()
}

/// A condition whose transition time is kept from the previous status when its value
/// did not change.
fn condition(
    input: &StatusInput,
    type_: PodConditionType,
    ok: bool,
    reason: &str,
    message: String,
) -> PodCondition {
    let status = if ok {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    let prev = input
        .previous
        .and_then(|p| p.conditions.iter().find(|c| c.type_ == type_));
    let since = match prev {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => Some(input.now.to_string()),
    };
    PodCondition {
        type_,
        status,
        last_probe_time: None,
        last_transition_time: since,
        reason: reason.to_string(),
        message,
    }
}

#[cfg(test)]
mod tests;
