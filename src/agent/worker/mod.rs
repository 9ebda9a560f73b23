//! One task per pod: it alone acts on its pod, so a slow pull or a stuck stop in one pod
//! never delays another, and no two syncs of a pod ever race (no duplicate sandboxes).
//! It syncs when the sync loop wakes it (a PLEG event or a spec change) or when a
//! back-off it is waiting for runs out, and writes the pod's status on change only.
//! It also owns the pod's probes ([`super::probe`]): a probe result that changes wakes
//! it (a failed liveness or startup probe kills the container first), and it runs
//! postStart hooks right after starting a container. Pulls that bring offline
//! containers up to date run beside it ([`super::image_refresh`]) and wake it when done.
//!
//! This file holds the worker's state and its loop: what wakes it and what it does with
//! each message. The rest is split by concern, each a part of one sync or of the end:
//! - `sync`: one pass of kubelet's SyncPod, from observing the pod to carrying out
//!   its actions;
//! - `sandbox`: the sandbox containers start in, made anew with its own back-off;
//! - `start`: starting one container (back-offs, image, config, create and start,
//!   postStart hook);
//! - `deadline`: the pod's `activeDeadlineSeconds`;
//! - `status`: writing the pod's status;
//! - `terminate`: stopping and removing a pod that is no longer desired;
//! - `unanswered`: a create or start that timed out, checked with the runtime.
//!
//! A container that cannot start now waits with kubelet's reason for it
//! (`Worker::cannot_start`, `Worker::backs_off`; for all of the pod's at once,
//! `Worker::pod_cannot_start`, `Worker::pod_waits`), and the worker wakes by itself
//! when it is worth trying again.

mod deadline;
mod sandbox;
mod start;
mod status;
mod sync;
mod terminate;
mod unanswered;

use super::backoff::Backoff;
use super::context::Context;
use super::image_refresh::{Offline, Pulled};
use super::kill;
use super::probe::{self, PodProbes, Verdict};
use crate::kuberuntime::observed::{ObservedPod, State};
use crate::kuberuntime::status::Waiting;
use crate::kuberuntime::SyncError;
use crate::model::status::PodPhase;
use crate::model::{Pod, PodStatus, Reason};
use crate::node::admit::Refusal;
use smol::channel::{Receiver, Sender};
use smol::future;
use smol::Timer;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What the sync loop tells a worker.
#[derive(Debug)]
pub enum Msg {
    /// The pod's spec changed (shared with the sync loop's handle: one copy per pod).
    Update(Rc<Pod>),
    /// Something happened to the pod on the runtime; look again.
    Wake,
    /// The pod is no longer desired: stop it with its grace period and remove it.
    Delete,
    /// The node refused the pod's changed spec: stop it with its grace period and
    /// remove it as on [`Msg::Delete`], and leave its status Failed with the refusal
    /// (the pod stays desired; the spec it was refused is never run).
    Refused(Refusal),
    /// The node is short of memory and chose this pod: it fails (`Evicted`, with this
    /// message), its containers are killed with this grace period and never restarted.
    Evict(String, std::time::Duration),
    /// The pod's desired file was damaged; the agent quarantined it and wrote the last
    /// good spec back. Said in the status (reason and message) until the spec changes.
    DesiredFileRestored(String),
}

/// Retry delay after a failed sync (runtime unreachable, ...).
const RETRY: Duration = Duration::from_secs(2);
/// Retry delay for a pod that cannot be set up (bad hostPath, missing configmap).
const CONFIG_RETRY: Duration = Duration::from_secs(10);

struct Worker {
    ctx: Rc<Context>,
    /// The spec, shared with the sync loop's handle of this worker.
    pod: Rc<Pod>,
    crash: Backoff,
    pulls: Backoff,
    sandbox_backoff: Backoff,
    waiting: BTreeMap<String, Waiting>,
    /// Containers running a local image, their background pulls and what those brought.
    offline: Offline,
    /// Termination-message files of creates whose answer never came (container name,
    /// file): the runtime may have made the container, which mounts the file, so it is
    /// kept until that container is started or another one is made. Rarely any.
    unanswered: Vec<(String, PathBuf)>,
    init_failed: bool,
    last_status: Option<PodStatus>,
    /// The terminal phase (Succeeded or Failed) the pod has reached. kubelet never
    /// leaves one: nothing of the pod is started or made again, and its status keeps
    /// this phase.
    terminal: Option<PodPhase>,
    wake_at: Option<Instant>,
    probes: PodProbes,
    /// The pod is past its activeDeadlineSeconds: Failed, killed, never restarted.
    deadline_exceeded: bool,
    /// The node evicted the pod (the message): Failed, killed, never restarted.
    evicted: Option<String>,
    /// The grace period the eviction gave (kubelet's override of the pod's own).
    evict_grace: Option<std::time::Duration>,
    /// The sync loop's last relist showed nothing of this pod on the runtime, and only
    /// this worker makes things for its uid: the first sync needs not ask again.
    known_absent: bool,
    /// The first sync is still to come (it takes a terminal phase over from the status
    /// file when the runtime shows it is this pod's).
    first_sync: bool,
    /// What happened to the pod's desired file, for the status ([`Msg::DesiredFileRestored`]).
    store_note: Option<String>,
    /// The worker's own messages (a clone of what `run` reads), and those taken from
    /// it during a sync to see whether a new spec came (`run` handles them next).
    inbox: Receiver<Msg>,
    early: Vec<Msg>,
    /// Shared with the sync loop: the pod has reached a terminal phase, or was stopped
    /// and removed, so it no longer counts toward the node's pods and resources (known
    /// by uid: this worker's own state, not a status file found by name).
    finished: Rc<Cell<bool>>,
}

/// A pod as the logs name it: `namespace/name`.
struct PodName<'a>(&'a Pod);

impl std::fmt::Display for PodName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = &self.0.metadata;
        write!(f, "{}/{}", m.namespace, m.name)
    }
}

/// What ended a worker's wait.
enum Woken {
    Msg(Result<Msg, smol::channel::RecvError>),
    Probe(probe::Event),
    Pulled(Pulled),
    Timer,
}

/// Starts the worker of `pod`; the returned sender drives it. `known_absent`: the
/// runtime is known to hold nothing of this pod (a relist made after the last worker of
/// its uid, if any, was gone). `finished` is kept up to date with whether the pod has
/// reached a terminal phase; until the first sync says, a status file of the pod's name
/// that says so is believed only when the runtime may hold the pod (a restart, before
/// the first relist): a new pod never takes an older one's.
pub fn spawn(
    ctx: Rc<Context>,
    pod: Rc<Pod>,
    known_absent: bool,
    finished: Rc<Cell<bool>>,
) -> (Sender<Msg>, smol::Task<()>) {
    // Only an admitted pod gets a worker: the uplink may now fetch what it references.
    #[cfg(feature = "uplink")]
    ctx.verdicts.set(&pod.metadata.uid, true);
    let (tx, rx) = smol::channel::unbounded();
    let last_status = ctx
        .store
        .borrow()
        .read_status(&pod.metadata.namespace, &pod.metadata.name);
    let ended = |s: &PodStatus| matches!(s.phase, Some(PodPhase::Succeeded | PodPhase::Failed));
    finished.set(!known_absent && last_status.as_ref().is_some_and(ended));
    let w = Worker {
        ctx,
        pod,
        crash: Backoff::crash_loop(),
        pulls: Backoff::crash_loop(),
        sandbox_backoff: Backoff::new(
            Duration::from_secs(1),
            Duration::from_secs(60),
            Duration::from_secs(600),
        ),
        waiting: BTreeMap::new(),
        offline: Offline::default(),
        unanswered: Vec::new(),
        init_failed: false,
        last_status,
        terminal: None,
        wake_at: None,
        probes: PodProbes::default(),
        deadline_exceeded: false,
        evicted: None,
        evict_grace: None,
        known_absent,
        first_sync: true,
        store_note: None,
        inbox: rx.clone(),
        early: Vec::new(),
        finished,
    };
    (tx, crate::rt::spawn(w.run(rx)))
}

impl Worker {
    /// The pod as the logs name it (`namespace/name`), without allocating.
    fn name(&self) -> PodName<'_> {
        PodName(&self.pod)
    }

    async fn run(mut self, rx: Receiver<Msg>) {
        // A cluster pod already being deleted when its worker starts is only stopped.
        if self.pod.terminating() {
            return Box::pin(self.terminate(None)).await;
        }
        let mut must_sync = true;
        loop {
            // Boxed: a sync's state (CRI calls in flight, configs) lives on the heap
            // only while it runs, so a waiting worker's task holds little more than
            // the Worker itself (about 8 KB less per pod than the sync inlined).
            if must_sync {
                Box::pin(self.sync()).await;
            }
            must_sync = true;
            let early = std::mem::take(&mut self.early);
            let woken = match early.is_empty() {
                true => self.wait(&rx).await,
                false => Woken::Timer,
            };
            let mut msgs = match woken {
                Woken::Timer => early,
                Woken::Probe(ev) => {
                    // A failed attempt or a warning alone (its event recorded) changes
                    // nothing a sync would act on.
                    must_sync = ev.changed;
                    // Boxed as the sync: a liveness kill's StopContainer call would
                    // otherwise size every waiting worker's task.
                    Box::pin(self.probe_event(ev)).await;
                    Vec::new()
                }
                Woken::Pulled(done) => {
                    let (ctx, pod) = (&self.ctx, &self.pod);
                    self.offline.pulled(ctx, pod, &mut self.pulls, done);
                    Vec::new()
                }
                Woken::Msg(Ok(m)) => vec![m],
                Woken::Msg(Err(_)) => return,
            };
            // Coalesce whatever else is queued: one sync serves them all.
            while let Ok(m) = rx.try_recv() {
                msgs.push(m);
            }
            must_sync |= !msgs.is_empty();
            for m in msgs {
                match m {
                    Msg::Update(p) => {
                        self.pod = p;
                        self.store_note = None;
                    }
                    Msg::DesiredFileRestored(note) => self.store_note = Some(note),
                    Msg::Wake => {}
                    Msg::Evict(message, grace) => {
                        if self.evicted.is_none() && self.terminal.is_none() {
                            log::warn!("pod {}: evicted: {message}", self.name());
                            self.probes.stop_all();
                            self.evicted = Some(message);
                            self.evict_grace = Some(grace);
                        }
                    }
                    Msg::Delete => {
                        self.probes.stop_all();
                        return Box::pin(self.terminate(None)).await;
                    }
                    Msg::Refused(r) => {
                        self.probes.stop_all();
                        return Box::pin(self.terminate(Some(r))).await;
                    }
                }
            }
        }
    }

    /// Waits for a message, a probe event, a finished background pull or the wake-up
    /// time, whichever comes first.
    fn wait<'a>(&'a mut self, rx: &'a Receiver<Msg>) -> impl Future<Output = Woken> + 'a {
        let wake_at = self.wake_at;
        let (probes, offline) = (&mut self.probes, &mut self.offline);
        future::or(async { Woken::Msg(rx.recv().await) }, async move {
            future::or(async { Woken::Probe(probes.next().await) }, async {
                future::or(async { Woken::Pulled(offline.finished().await) }, async {
                    match wake_at {
                        Some(at) => Timer::at(at).await,
                        None => future::pending().await,
                    };
                    Woken::Timer
                })
                .await
            })
            .await
        })
    }

    /// Acts on a probe's changed result (or records the event of a failed attempt or a
    /// warning): kills the container when its liveness or startup probe failed. The sync
    /// that follows writes the new status (and restarts the container as the restart
    /// policy and back-off allow).
    async fn probe_event(&mut self, ev: probe::Event) {
        let verdict = self.probes.apply(&self.ctx, &self.pod, ev);
        if let Verdict::Kill {
            id,
            name,
            reason,
            grace,
            pod_ip,
        } = verdict
        {
            log::info!("pod {}: container {name} {reason}", self.name());
            let grace = grace.unwrap_or_else(|| kill::grace_period(&self.pod));
            kill::stop_container(&self.ctx, Some(&self.pod), &id, &name, grace, &pod_ip).await;
        }
    }

    fn wake_no_later_than(&mut self, at: Instant) {
        self.wake_at = Some(self.wake_at.map_or(at, |w| w.min(at)));
    }

    /// Takes the termination-message file kept for a create of container `name` that
    /// got no answer, if any.
    fn take_unanswered(&mut self, name: &str) -> Option<PathBuf> {
        let i = self.unanswered.iter().position(|(n, _)| n == name)?;
        Some(self.unanswered.swap_remove(i).1)
    }

    /// Container `name` cannot start now: logs why, and leaves it waiting with `reason`
    /// and `message` until `retry_at`, when the worker wakes to try again.
    fn cannot_start(&mut self, name: &str, reason: Reason, message: String, retry_at: Instant) {
        log::warn!("pod {}: container {name}: {reason}: {message}", self.name());
        self.backs_off(name, reason, message, retry_at);
    }

    /// Container `name` waits with `reason` and `message` until `until` (a back-off:
    /// not logged, as it says the same on every sync while it lasts).
    fn backs_off(&mut self, name: &str, reason: Reason, message: String, until: Instant) {
        self.waiting
            .insert(name.to_string(), Waiting { reason, message });
        self.wake_no_later_than(until);
    }

    /// No container of the pod can start now (`e` says why: its volumes cannot be
    /// set up, ...): logs it, and leaves every container that is not running waiting
    /// with it until `retry_at`.
    fn pod_cannot_start(&mut self, observed: &ObservedPod, e: &SyncError, retry_at: Instant) {
        // Waiting a moment for the cluster's token is no fault.
        let level = match e.reason {
            Reason::ContainerCreating => log::Level::Info,
            _ => log::Level::Warn,
        };
        log::log!(level, "pod {}: {e}", self.name());
        self.pod_waits(observed, e, retry_at);
    }

    /// Every container of the pod that is not running waits with `e` until `until`
    /// (not logged: the caller says why in its own words).
    fn pod_waits(&mut self, observed: &ObservedPod, e: &SyncError, until: Instant) {
        for c in self.pod.all_containers() {
            let running = observed
                .latest(&c.name)
                .is_some_and(|o| o.state == State::Running);
            if !running {
                let (reason, message) = (e.reason, e.message.clone());
                self.waiting
                    .insert(c.name.clone(), Waiting { reason, message });
            }
        }
        self.wake_no_later_than(until);
    }
}
