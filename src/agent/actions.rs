//! What to do to bring one pod from what the runtime shows to what its spec asks, as
//! kubelet's `computePodActions`: recreate the sandbox when it is missing, not ready or
//! its sandbox-level spec changed; run init containers one at a time, in order; start or
//! restart app containers according to `restartPolicy`; replace containers whose spec
//! changed or whose image the registry replaced; kill what no longer belongs. Pure: the
//! caller supplies the hashes of the desired spec, and applies backoff when it carries
//! the actions out.
//!
//! Two rules kubelet has that its `computePodActions` alone does not show:
//! - A pod in a terminal phase (Succeeded, or Failed) stays there: nothing of it is
//!   started or made again, whatever the runtime shows ([`Desired::terminal`]).
//! - A container the runtime made but never started (its CreateContainer timed out on
//!   the client and did succeed, or the agent stopped between create and start) is
//!   started as it is while it is fresh, in the current sandbox and of the current
//!   spec: it is what a create now would make, and making another instead would count
//!   a restart that never was (and on a board whose creates outlast the timeout, never
//!   end). Any other such container is removed, and a new one made in its place.

use crate::kuberuntime::observed::{ObservedContainer, ObservedPod, State};
use crate::kuberuntime::time::unix_nanos;
use crate::model::pod::RestartPolicy;
use crate::model::{Container, Pod};
use std::time::SystemTime;

/// The desired spec's hashes, computed by the caller (kuberuntime's hash functions).
pub struct Desired<'a> {
    /// The pod as desired.
    pub pod: &'a Pod,
    /// Hash of its sandbox spec.
    pub sandbox_hash: &'a str,
    /// Hash of a container spec (init or app).
    pub container_hash: &'a dyn Fn(&Container) -> String,
    /// Ids of running app containers to replace because the registry now has another
    /// image under their image reference (see [`super::image_refresh`]).
    pub outdated: &'a [String],
    /// The pod has reached Succeeded or Failed: only stop what still runs.
    pub terminal: bool,
}

/// Why a container is (re)started; shown in logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartReason {
    /// Its first instance.
    FirstStart,
    /// The last instance exited (and the restart policy restarts it).
    Exited {
        /// The exit code of that instance.
        exit_code: i32,
    },
    /// The spec changed since the running instance was made.
    SpecChanged,
    /// The registry's image for its reference differs from the one it ran.
    ImageChanged,
    /// The pod's sandbox was made anew: every container starts again in it.
    SandboxRecreated,
    /// Its last instance was made but never started and cannot be started now (too old,
    /// in an old sandbox, or of an older spec): a new one replaces it.
    NeverStarted,
    /// Made earlier and never started, container `id` is started as it is (see the
    /// module doc); only in [`PodActions::resume`].
    Made {
        /// The container made earlier.
        id: String,
    },
}

/// A container instance to make and start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// Index into `spec.initContainers` (when `init`) or `spec.containers`.
    pub index: usize,
    /// An init container (else an app container).
    pub init: bool,
    /// The container's name.
    pub name: String,
    /// The restart count the new instance gets (its CRI attempt).
    pub restart_count: u32,
    /// Why it is (re)started.
    pub reason: StartReason,
}

/// A container instance to stop (or remove).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kill {
    /// Its runtime id.
    pub id: String,
    /// The container's name.
    pub name: String,
    /// Why, for the log.
    pub reason: String,
}

/// What one sync of a pod does to the runtime, in the order of its fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodActions {
    /// Stop every container and sandbox of the pod before anything else.
    pub kill_pod: bool,
    /// Make a new sandbox (after `kill_pod`), with this attempt number.
    pub create_sandbox: Option<u32>,
    /// The ready sandbox to start containers in when none is created.
    pub sandbox_id: Option<String>,
    /// Running containers to stop (spec changed, image changed, done pod, ...).
    pub kill: Vec<Kill>,
    /// Containers made but never started that will not be started: removed before
    /// anything new is made.
    pub remove: Vec<Kill>,
    /// Containers made but never started, to start as they are (reason
    /// [`StartReason::Made`], their own restart count).
    pub resume: Vec<Start>,
    /// Containers to make and start now.
    pub start: Vec<Start>,
    /// An init container failed under `restartPolicy: Never`: the pod has failed.
    pub init_failed: bool,
}

/// Computes the actions for one pod.
pub fn compute(desired: &Desired, observed: &ObservedPod) -> PodActions {
    if desired.terminal {
        return PodActions {
            kill_pod: true,
            init_failed: init_failed(desired, observed),
            ..Default::default()
        };
    }
    let spec = &desired.pod.spec;
    let sandbox = observed.latest_sandbox();
    let sandbox_ok = sandbox.is_some_and(|s| s.ready && s.hash == desired.sandbox_hash);
    if !sandbox_ok {
        return recreate(desired, observed);
    }
    let sandbox_id = sandbox.map(|s| s.id.clone());
    let mut acts = PodActions {
        sandbox_id: sandbox_id.clone(),
        ..Default::default()
    };
    let sandbox_id = sandbox_id.as_deref().unwrap_or("");
    kill_strays(desired, observed, sandbox_id, &mut acts);
    remove_unstarted(desired, observed, Some(sandbox_id), &mut acts);
    if !init_done(desired, observed, sandbox_id, &mut acts) {
        return acts;
    }
    let mut keep = 0;
    for (index, c) in spec.containers.iter().enumerate() {
        match app_container_action(desired, observed, sandbox_id, index, c) {
            AppAction::Keep => keep += 1,
            AppAction::Resume(r) => acts.resume.push(r),
            AppAction::Start(s) => acts.start.push(s),
            AppAction::Replace(k, s) => {
                acts.kill.push(k);
                acts.start.push(s);
            }
            AppAction::Done => {}
        }
    }
    if keep == 0 && acts.start.is_empty() && acts.resume.is_empty() {
        // Every container is finished for good: stop the sandbox too (kubelet does).
        acts.kill_pod = true;
    }
    acts
}

/// The sandbox is missing, dead or outdated: kill everything, and make a new one unless
/// the pod has already run to completion under a policy that forbids restarts.
fn recreate(desired: &Desired, observed: &ObservedPod) -> PodActions {
    let spec = &desired.pod.spec;
    let attempt = observed.latest_sandbox().map_or(0, |s| s.attempt + 1);
    // A container made and never started did not run.
    let ran_before =
        observed.latest_sandbox().is_some() && observed.containers.iter().any(|c| !unstarted(c));
    let mut acts = PodActions {
        kill_pod: observed.latest_sandbox().is_some(),
        ..Default::default()
    };
    remove_unstarted(desired, observed, None, &mut acts);
    if ran_before && spec.restart_policy == RestartPolicy::Never {
        // Finished for good; a failed init container has failed the pod, whether or
        // not its sandbox is still up.
        acts.init_failed = init_failed(desired, observed);
        return acts;
    }
    let reason = if observed.latest_sandbox().is_some() {
        StartReason::SandboxRecreated
    } else {
        StartReason::FirstStart
    };
    let restart = |name: &str| observed.latest(name).map_or(0, |c| c.restart_count + 1);
    if let Some(first) = spec.init_containers.first() {
        acts.start.push(Start {
            index: 0,
            init: true,
            name: first.name.clone(),
            restart_count: restart(&first.name),
            reason,
        });
    } else {
        for (index, c) in spec.containers.iter().enumerate() {
            let done = observed.latest(&c.name).is_some_and(succeeded);
            if done && spec.restart_policy == RestartPolicy::OnFailure {
                continue;
            }
            acts.start.push(Start {
                index,
                init: false,
                name: c.name.clone(),
                restart_count: restart(&c.name),
                reason: reason.clone(),
            });
        }
    }
    acts.create_sandbox = Some(attempt);
    acts
}

/// Running containers that are not part of the spec, or live in an older sandbox.
fn kill_strays(desired: &Desired, observed: &ObservedPod, sandbox_id: &str, acts: &mut PodActions) {
    for c in observed
        .containers
        .iter()
        .filter(|c| c.state == State::Running)
    {
        let in_spec = desired.pod.all_containers().any(|s| s.name == c.name);
        let reason = if !in_spec {
            "container is not in the pod spec"
        } else if !c.sandbox_id.is_empty() && c.sandbox_id != sandbox_id {
            "container belongs to an old sandbox"
        } else if observed.latest(&c.name).is_some_and(|l| l.id != c.id) {
            "a newer instance of the container exists"
        } else {
            continue;
        };
        acts.kill.push(Kill {
            id: c.id.clone(),
            name: c.name.clone(),
            reason: reason.into(),
        });
    }
}

/// Containers made but never started that will not be started as they are: all but the
/// latest instance of each spec container when it is [`resumable`] in `sandbox_id`
/// (none when the sandbox is to be made anew).
fn remove_unstarted(
    desired: &Desired,
    observed: &ObservedPod,
    sandbox_id: Option<&str>,
    acts: &mut PodActions,
) {
    for c in observed.containers.iter().filter(|c| unstarted(c)) {
        let spec = desired.pod.all_containers().find(|s| s.name == c.name);
        let latest = observed.latest(&c.name).is_some_and(|l| l.id == c.id);
        let keep = match (spec, sandbox_id) {
            (Some(s), Some(sb)) => latest && resumable(desired, s, c, sb),
            _ => false,
        };
        if !keep {
            acts.remove.push(Kill {
                id: c.id.clone(),
                name: c.name.clone(),
                reason: "created but never started".into(),
            });
        }
    }
}

/// Whether an init container failed under `restartPolicy: Never`: the first one that
/// has not succeeded has exited. It never runs again, and the pod has failed.
fn init_failed(desired: &Desired, observed: &ObservedPod) -> bool {
    let spec = &desired.pod.spec;
    spec.restart_policy == RestartPolicy::Never
        && spec
            .init_containers
            .iter()
            .map(|c| observed.latest(&c.name))
            .find(|l| !l.is_some_and(succeeded))
            .flatten()
            .is_some_and(|l| l.state == State::Exited)
}

/// Walks the init containers in order. Returns true when all have succeeded; otherwise
/// records the next one to start (or the pod's failure) in `acts`.
fn init_done(
    desired: &Desired,
    observed: &ObservedPod,
    sandbox_id: &str,
    acts: &mut PodActions,
) -> bool {
    let spec = &desired.pod.spec;
    for (index, c) in spec.init_containers.iter().enumerate() {
        let latest = observed.latest(&c.name);
        let start = |reason| Start {
            index,
            init: true,
            name: c.name.clone(),
            restart_count: latest.map_or(0, |l| l.restart_count + 1),
            reason,
        };
        match latest {
            Some(l) if succeeded(l) => continue,
            Some(l) if l.state == State::Running => return false,
            Some(l) if resumable(desired, c, l, sandbox_id) => {
                acts.resume.push(resume(l, index, true));
            }
            Some(l) if unstarted(l) => acts.start.push(start(StartReason::NeverStarted)),
            Some(l) if l.state == State::Exited && spec.restart_policy == RestartPolicy::Never => {
                acts.init_failed = true;
                acts.kill_pod = true;
                return false;
            }
            Some(l) => acts.start.push(start(StartReason::Exited {
                exit_code: l.exit_code,
            })),
            None => acts.start.push(start(StartReason::FirstStart)),
        }
        return false;
    }
    true
}

enum AppAction {
    Keep,
    Resume(Start),
    Start(Start),
    Replace(Kill, Start),
    /// Finished and must not be restarted.
    Done,
}

fn app_container_action(
    desired: &Desired,
    observed: &ObservedPod,
    sandbox_id: &str,
    index: usize,
    c: &Container,
) -> AppAction {
    let latest = observed.latest(&c.name);
    let start = |reason| Start {
        index,
        init: false,
        name: c.name.clone(),
        restart_count: latest.map_or(0, |l| l.restart_count + 1),
        reason,
    };
    let Some(l) = latest else {
        return AppAction::Start(start(StartReason::FirstStart));
    };
    match l.state {
        State::Running if l.hash != (desired.container_hash)(c) => {
            let kill = Kill {
                id: l.id.clone(),
                name: c.name.clone(),
                reason: "container spec changed".into(),
            };
            AppAction::Replace(kill, start(StartReason::SpecChanged))
        }
        State::Running if desired.outdated.contains(&l.id) => {
            let kill = Kill {
                id: l.id.clone(),
                name: c.name.clone(),
                reason: "the registry has a newer image".into(),
            };
            AppAction::Replace(kill, start(StartReason::ImageChanged))
        }
        State::Running => AppAction::Keep,
        _ if resumable(desired, c, l, sandbox_id) => AppAction::Resume(resume(l, index, false)),
        // Never ran: a first start, whatever the restart policy (kubelet's too).
        _ if unstarted(l) => AppAction::Start(start(StartReason::NeverStarted)),
        _ if should_restart(desired.pod.spec.restart_policy, l) => {
            let reason = if l.hash != (desired.container_hash)(c) {
                StartReason::SpecChanged
            } else {
                StartReason::Exited {
                    exit_code: l.exit_code,
                }
            };
            AppAction::Start(start(reason))
        }
        _ => AppAction::Done,
    }
}

/// Whether an exited container is started again under `policy`.
fn should_restart(policy: RestartPolicy, c: &ObservedContainer) -> bool {
    match policy {
        RestartPolicy::Always => true,
        RestartPolicy::OnFailure => !succeeded(c),
        RestartPolicy::Never => false,
    }
}

fn succeeded(c: &ObservedContainer) -> bool {
    c.state == State::Exited && c.exit_code == 0
}

/// Made but never started.
fn unstarted(c: &ObservedContainer) -> bool {
    c.state == State::Created && c.started_at == 0
}

/// Whether `l`, made but never started, is started as it is: it is fresh, in the
/// current sandbox and of `c`'s current spec.
fn resumable(desired: &Desired, c: &Container, l: &ObservedContainer, sandbox_id: &str) -> bool {
    unstarted(l)
        && is_fresh(l)
        && l.sandbox_id == sandbox_id
        && l.hash == (desired.container_hash)(c)
}

fn resume(l: &ObservedContainer, index: usize, init: bool) -> Start {
    Start {
        index,
        init,
        name: l.name.clone(),
        restart_count: l.restart_count,
        reason: StartReason::Made { id: l.id.clone() },
    }
}

/// A container created but never started is worth starting only for a short while;
/// after that it is a leftover (its spec may be stale: env from objects, pod IP), and a
/// new one replaces it (kubelet makes a new one for a container it finds created).
fn is_fresh(c: &ObservedContainer) -> bool {
    const GRACE_NS: i64 = 60_000_000_000;
    let now = unix_nanos(SystemTime::now());
    now.saturating_sub(c.created_at) < GRACE_NS
}

#[cfg(test)]
mod tests;
