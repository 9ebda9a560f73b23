//! Container probes of one pod, as kubelet's prober: for each running app container
//! with probes, a startup probe first; once it succeeds (or when there is none) the
//! liveness and readiness probes. Each probe is its own task with its own timer
//! ([`task`]); results reach the pod's worker over a channel: changes, failed attempts
//! (each an `Unhealthy` event) and warnings, so a healthy pod costs its probes'
//! attempts and nothing else, and a failing one no sync or status write per attempt.
//!
//! The worker owns a [`PodProbes`]: after each sync it calls [`PodProbes::reconcile`]
//! (probes follow the container instances the runtime shows: a new instance gets fresh
//! probes, a stopped one loses them), feeds every event to [`PodProbes::apply`], and
//! reads [`PodProbes::status`] for the `started`/`ready` fields of the pod status.

pub mod state;
pub mod task;

use super::context::Context;
use super::handler::{self, Target};
use crate::kuberuntime::observed::{ObservedPod, State};
use crate::kuberuntime::status::ProbeStatus;
use crate::kuberuntime::time::instant_of;
use crate::model::reason::EventReason;
use crate::model::{Container, Pod};
use smol::channel::{Receiver, Sender};
use smol::Task;
use state::Kind;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};
pub use task::Event;

/// The probes of one running container instance.
struct Probed {
    id: String,
    status: ProbeStatus,
    started_at: Instant,
    target: Target,
    tasks: Vec<Task<()>>,
}

/// What the worker must do after a probe event.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Stale or no change that matters.
    Nothing,
    /// `started`/`ready` changed: write the status.
    StatusChanged,
    /// A liveness or startup probe failed: kill the container (the restart policy and
    /// the crash-loop back-off decide what follows).
    Kill {
        /// The container's runtime id.
        id: String,
        /// The container's name.
        name: String,
        /// Why, for the log.
        reason: String,
        /// The probe's own terminationGracePeriodSeconds, if set.
        grace: Option<Duration>,
        /// The pod's IP (for a preStop hook's httpGet).
        pod_ip: String,
    },
}

/// The probes of one pod's running containers: one task per probe, their results, and what
/// they mean for the pod.
pub struct PodProbes {
    tx: Sender<Event>,
    rx: Receiver<Event>,
    /// By container name.
    containers: BTreeMap<String, Probed>,
}

impl Default for PodProbes {
    fn default() -> Self {
        let (tx, rx) = smol::channel::unbounded();
        PodProbes {
            tx,
            rx,
            containers: BTreeMap::new(),
        }
    }
}

/// Whether the container has any probe.
fn has_probes(c: &Container) -> bool {
    c.liveness_probe.is_some() || c.readiness_probe.is_some() || c.startup_probe.is_some()
}

impl PodProbes {
    /// The next result change of any probe of the pod (pending forever when none come).
    pub async fn next(&self) -> Event {
        match self.rx.recv().await {
            Ok(ev) => ev,
            // Never closed: this struct holds a sender.
            Err(_) => std::future::pending().await,
        }
    }

    /// Stops every probe (the pod is being deleted).
    pub fn stop_all(&mut self) {
        self.containers.clear();
    }

    /// Follows the runtime: fresh probes for container instances newly running,
    /// none for those that stopped, were replaced or left the spec.
    pub fn reconcile(&mut self, ctx: &Rc<Context>, pod: &Pod, observed: &ObservedPod) {
        let running = |name: &str| observed.latest(name).filter(|l| l.state == State::Running);
        self.containers.retain(|name, p| {
            let in_spec = pod
                .spec
                .containers
                .iter()
                .any(|c| &c.name == name && has_probes(c));
            in_spec && running(name).is_some_and(|l| l.id == p.id)
        });
        let pod_ip = handler::pod_ip(ctx, pod, observed);
        for c in pod.spec.containers.iter().filter(|c| has_probes(c)) {
            let Some(l) = running(&c.name) else { continue };
            if self.containers.contains_key(&c.name) {
                continue;
            }
            let mut p = Probed {
                id: l.id.clone(),
                status: ProbeStatus {
                    started: false,
                    ready: false,
                },
                started_at: instant_of(l.started_at, Instant::now(), SystemTime::now()),
                target: Target {
                    container_id: l.id.clone(),
                    pod_ip: pod_ip.clone(),
                    ports: c.ports.clone(),
                },
                tasks: Vec::new(),
            };
            match &c.startup_probe {
                Some(sp) => {
                    let t = self.spawn(ctx, pod, c, &p, Kind::Startup, sp);
                    p.tasks.push(t);
                }
                None => self.after_startup(ctx, pod, c, &mut p),
            }
            self.containers.insert(c.name.clone(), p);
        }
    }

    /// The container has started (its startup probe succeeded, or it has none): it is
    /// ready unless a readiness probe says otherwise; liveness and readiness begin.
    fn after_startup(&self, ctx: &Rc<Context>, pod: &Pod, c: &Container, p: &mut Probed) {
        p.status.started = true;
        p.status.ready = c.readiness_probe.is_none();
        for (kind, probe) in [
            (Kind::Liveness, &c.liveness_probe),
            (Kind::Readiness, &c.readiness_probe),
        ] {
            if let Some(probe) = probe {
                let t = self.spawn(ctx, pod, c, p, kind, probe);
                p.tasks.push(t);
            }
        }
    }

    fn spawn(
        &self,
        ctx: &Rc<Context>,
        pod: &Pod,
        c: &Container,
        p: &Probed,
        kind: Kind,
        probe: &crate::model::container::Probe,
    ) -> Task<()> {
        let run = task::ProbeRun {
            kind,
            probe: probe.clone(),
            target: p.target.clone(),
            container: c.name.clone(),
            pod: format!("{}/{}", pod.metadata.namespace, pod.metadata.name),
            started_at: p.started_at,
        };
        task::spawn(ctx.clone(), run, self.tx.clone())
    }

    /// Takes in one probe event (records its events); says what the worker must do.
    pub fn apply(&mut self, ctx: &Rc<Context>, pod: &Pod, ev: Event) -> Verdict {
        let Some(c) = pod.spec.containers.iter().find(|c| c.name == ev.container) else {
            return Verdict::Nothing;
        };
        // An event of an instance already replaced must leave the new one's probes be.
        let current = self.containers.get(&ev.container);
        if current.is_none_or(|p| p.id != ev.container_id) {
            return Verdict::Nothing;
        }
        let Some(mut p) = self.containers.remove(&ev.container) else {
            return Verdict::Nothing;
        };
        let name = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        let kind = match ev.kind {
            Kind::Liveness => "Liveness",
            Kind::Readiness => "Readiness",
            Kind::Startup => "Startup",
        };
        if let Some(w) = &ev.warning {
            ctx.event(pod, &c.name, true, EventReason::ProbeWarning, || {
                format!("{kind} probe warning: {w}")
            });
        }
        // kubelet records every failed attempt, not only the one that turns the result;
        // the correlator makes repeats one event with a count.
        if !ev.ok {
            ctx.event(pod, &c.name, true, EventReason::Unhealthy, || {
                format!("{kind} probe failed: {}", ev.output)
            });
        }
        if !ev.changed {
            self.containers.insert(ev.container, p);
            return Verdict::Nothing;
        }
        let verdict = match (ev.kind, ev.ok) {
            (Kind::Startup, true) => {
                log::info!("pod {name}: container {} started (startupProbe)", c.name);
                self.after_startup(ctx, pod, c, &mut p);
                Verdict::StatusChanged
            }
            (Kind::Readiness, ok) => {
                let word = if ok { "ready" } else { "not ready" };
                let why = if ok {
                    String::new()
                } else {
                    format!(": {}", ev.detail)
                };
                log::info!(
                    "pod {name}: container {} {word} (readinessProbe){why}",
                    c.name
                );
                p.status.ready = ok;
                Verdict::StatusChanged
            }
            (Kind::Liveness, true) => Verdict::Nothing,
            (kind @ (Kind::Liveness | Kind::Startup), false) => {
                let probe = if kind == Kind::Liveness {
                    &c.liveness_probe
                } else {
                    &c.startup_probe
                };
                let grace = probe
                    .as_ref()
                    .and_then(|p| p.termination_grace_period_seconds)
                    .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)));
                // The instance's probes end here; the next instance gets new ones.
                return Verdict::Kill {
                    id: p.id,
                    name: c.name.clone(),
                    reason: format!(
                        "failed its {}, will be restarted per restartPolicy: {}",
                        kind.field(),
                        ev.detail
                    ),
                    grace,
                    pod_ip: p.target.pod_ip,
                };
            }
        };
        self.containers.insert(ev.container, p);
        verdict
    }

    /// `started`/`ready` of every probed running container instance, by container id.
    pub fn status(&self) -> BTreeMap<String, ProbeStatus> {
        self.containers
            .values()
            .map(|p| (p.id.clone(), p.status))
            .collect()
    }
}
