//! One task per pod: it alone acts on its pod, so a slow pull or a stuck stop in one pod
//! never delays another, and no two syncs of a pod ever race (no duplicate sandboxes).
//! It syncs when the sync loop wakes it (a PLEG event or a spec change) or when a
//! back-off it is waiting for runs out, and writes the pod's status on change only.
//! It also owns the pod's probes ([`super::probe`]): a probe result that changes wakes
//! it (a failed liveness or startup probe kills the container first), and it runs
//! postStart hooks right after starting a container. Pulls that bring offline
//! containers up to date run beside it ([`super::image_refresh`]) and wake it when done.

use super::actions::{self, Desired, StartReason};
use super::backoff::Backoff;
use super::context::Context;
use super::deadline::{self, Deadline};
use super::handler::{self, Target};
use super::image::PullError;
use super::image_refresh::{self, Pulled, Refreshes};
use super::observe::{self, Effects};
use super::probe::{self, PodProbes, Verdict};
use super::{hooks, image, kill};
use crate::cri::pb;
use crate::kuberuntime::container::{container_config, ContainerContext};
use crate::kuberuntime::env::PodFacts;
use crate::kuberuntime::hash::{container_hash, sandbox_hash};
use crate::kuberuntime::non_root::{self, ImageUser};
use crate::kuberuntime::observed::{ObservedPod, ObservedSandbox, State};
use crate::kuberuntime::sandbox::{log_directory, sandbox_config};
use crate::kuberuntime::security::SeccompPolicy;
use crate::kuberuntime::status::{pod_status, StatusInput, Waiting};
use crate::kuberuntime::{pod_dir, termination, volumes, SyncError};
use crate::model::container::PullPolicy;
use crate::model::time::now_rfc3339;
use crate::model::{Container, Pod, PodStatus};
use smol::channel::{Receiver, Sender};
use smol::future;
use smol::Timer;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

/// What the sync loop tells a worker.
#[derive(Debug)]
pub enum Msg {
    /// The pod's spec changed.
    Update(Box<Pod>),
    /// Something happened to the pod on the runtime; look again.
    Wake,
    /// The pod is no longer desired: stop it with its grace period and remove it.
    Delete,
    /// The pod's desired file was damaged; the agent quarantined it and wrote the last
    /// good spec back. Said in the status (reason and message) until the spec changes.
    DesiredFileRestored(String),
}

/// The sandbox containers are started in.
struct SandboxRef<'a> {
    id: &'a str,
    config: &'a pb::PodSandboxConfig,
    pod_ip: &'a str,
}

/// Retry delay after a failed sync (runtime unreachable, ...).
const RETRY: Duration = Duration::from_secs(2);
/// Retry delay for a pod that cannot be set up (bad hostPath, missing configmap).
const CONFIG_RETRY: Duration = Duration::from_secs(10);

struct Worker {
    ctx: Rc<Context>,
    pod: Pod,
    crash: Backoff,
    pulls: Backoff,
    sandbox_backoff: Backoff,
    waiting: BTreeMap<String, Waiting>,
    /// Containers running a local image because the pull failed: name -> error.
    offline: BTreeMap<String, String>,
    /// Background pulls of the offline containers' images.
    refreshes: Refreshes,
    /// Image ids that background pulls brought (image reference -> id), for the next
    /// sync to compare with what the containers run.
    fresh_images: BTreeMap<String, String>,
    init_failed: bool,
    last_status: Option<PodStatus>,
    wake_at: Option<Instant>,
    probes: PodProbes,
    /// The pod is past its activeDeadlineSeconds: Failed, killed, never restarted.
    deadline_exceeded: bool,
    /// The sync loop's last relist showed nothing of this pod on the runtime, and only
    /// this worker makes things for its uid: the first sync needs not ask again.
    known_absent: bool,
    /// What happened to the pod's desired file, for the status ([`Msg::DesiredFileRestored`]).
    store_note: Option<String>,
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
/// its uid, if any, was gone).
pub fn spawn(ctx: Rc<Context>, pod: Pod, known_absent: bool) -> (Sender<Msg>, smol::Task<()>) {
    let (tx, rx) = smol::channel::unbounded();
    let last_status = ctx
        .store
        .borrow()
        .read_status(&pod.metadata.namespace, &pod.metadata.name);
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
        offline: BTreeMap::new(),
        refreshes: Refreshes::default(),
        fresh_images: BTreeMap::new(),
        init_failed: false,
        last_status,
        wake_at: None,
        probes: PodProbes::default(),
        deadline_exceeded: false,
        known_absent,
        store_note: None,
    };
    (tx, crate::rt::spawn(w.run(rx)))
}

impl Worker {
    fn name(&self) -> String {
        format!("{}/{}", self.pod.metadata.namespace, self.pod.metadata.name)
    }

    async fn run(mut self, rx: Receiver<Msg>) {
        // A cluster pod already being deleted when its worker starts is only stopped.
        if self.pod.terminating() {
            return Box::pin(self.terminate()).await;
        }
        loop {
            // Boxed: a sync's state (CRI calls in flight, configs) lives on the heap
            // only while it runs, so a waiting worker's task holds little more than
            // the Worker itself (about 8 KB less per pod than the sync inlined).
            Box::pin(self.sync()).await;
            let wake_at = self.wake_at;
            let (probes, refreshes) = (&mut self.probes, &mut self.refreshes);
            let woken = future::or(async { Woken::Msg(rx.recv().await) }, async {
                future::or(async { Woken::Probe(probes.next().await) }, async {
                    future::or(async { Woken::Pulled(refreshes.finished().await) }, async {
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
            .await;
            let mut msgs = match woken {
                Woken::Timer => Vec::new(),
                Woken::Probe(ev) => {
                    self.probe_event(ev).await;
                    Vec::new()
                }
                Woken::Pulled((image, result)) => {
                    self.pulled(image, result);
                    Vec::new()
                }
                Woken::Msg(Ok(m)) => vec![m],
                Woken::Msg(Err(_)) => return,
            };
            // Coalesce whatever else is queued: one sync serves them all.
            while let Ok(m) = rx.try_recv() {
                msgs.push(m);
            }
            for m in msgs {
                match m {
                    Msg::Update(p) => {
                        self.pod = *p;
                        self.store_note = None;
                    }
                    Msg::DesiredFileRestored(note) => self.store_note = Some(note),
                    Msg::Wake => {}
                    Msg::Delete => {
                        self.probes.stop_all();
                        return Box::pin(self.terminate()).await;
                    }
                }
            }
        }
    }

    /// Acts on a probe's changed result: kills the container when its liveness or
    /// startup probe failed. The sync that follows writes the new status (and restarts
    /// the container as the restart policy and back-off allow).
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

    /// One pass of kubelet's SyncPod.
    async fn sync(&mut self) {
        self.wake_at = None;
        self.waiting.clear();
        let uid = self.pod.metadata.uid.clone();
        let observed = if std::mem::take(&mut self.known_absent) {
            Ok(ObservedPod::default())
        } else {
            observe::observe(&self.ctx, &uid).await
        };
        let observed = match observed {
            Ok(o) => o,
            Err(e) => {
                log::warn!(
                    "pod {}: cannot read its state from the runtime: {e}",
                    self.name()
                );
                self.wake_no_later_than(Instant::now() + RETRY);
                return;
            }
        };
        self.deadline_exceeded = self.check_deadline();
        let prepared = if self.deadline_exceeded {
            Err(None)
        } else {
            self.prepare_volumes().map_err(Some)
        };
        let mut effects = Effects::default();
        match prepared {
            Err(None) => effects.unknown = self.kill_pod(&observed).await,
            Ok(()) => {
                let outdated = self.outdated(&observed).await;
                self.act(&observed, &outdated, &mut effects).await
            }
            Err(Some(e)) => {
                log::warn!("pod {}: {e}", self.name());
                self.wait_all(&observed, &e);
                self.wake_no_later_than(Instant::now() + CONFIG_RETRY);
            }
        };
        let observed = observe::after(&self.ctx, &uid, observed, effects).await;
        if !self.deadline_exceeded {
            self.schedule_refreshes();
        }
        self.probes.reconcile(&self.ctx, &self.pod, &observed);
        self.write_status(&observed);
    }

    fn prepare_volumes(&self) -> Result<(), SyncError> {
        let cfg = &self.ctx.cfg;
        volumes::prepare(
            &self.pod,
            &cfg.pods_dir,
            &cfg.allowed_host_paths,
            &*self.ctx,
        )
    }

    /// Marks every container that is not running as waiting for `e`.
    fn wait_all(&mut self, observed: &ObservedPod, e: &SyncError) {
        for c in self.pod.all_containers() {
            let running = observed
                .latest(&c.name)
                .is_some_and(|o| o.state == crate::kuberuntime::observed::State::Running);
            if !running {
                self.waiting.insert(
                    c.name.clone(),
                    Waiting {
                        reason: e.reason.clone(),
                        message: e.message.clone(),
                    },
                );
            }
        }
    }

    /// Computes and carries out the pod's actions, recording what they did in `effects`.
    /// `outdated`: running containers to replace because the registry has a new image.
    async fn act(&mut self, observed: &ObservedPod, outdated: &[String], effects: &mut Effects) {
        let sb_hash = sandbox_hash(&self.pod);
        let desired = Desired {
            pod: &self.pod,
            sandbox_hash: &sb_hash,
            container_hash: &container_hash,
            outdated,
        };
        let acts = actions::compute(&desired, observed);
        self.init_failed = acts.init_failed;
        let grace = kill::grace_period(&self.pod);
        let pod_ip = handler::pod_ip(&self.ctx, &self.pod, observed);
        if acts.kill_pod {
            effects.unknown = self.kill_pod(observed).await;
        }
        for k in &acts.kill {
            log::info!(
                "pod {}: stopping container {} ({}): {}",
                self.name(),
                k.name,
                k.id,
                k.reason
            );
            kill::stop_container(&self.ctx, Some(&self.pod), &k.id, &k.name, grace, &pod_ip).await;
            effects.unknown = true;
        }
        if acts.start.is_empty() {
            return;
        }
        let Some((sandbox_id, sandbox_cfg, pod_ip)) = self.sandbox(&acts, observed, effects).await
        else {
            return;
        };
        for s in &acts.start {
            let c = if s.init {
                self.pod.spec.init_containers.get(s.index)
            } else {
                self.pod.spec.containers.get(s.index)
            };
            let Some(c) = c.cloned() else { continue };
            let at = SandboxRef {
                id: &sandbox_id,
                config: &sandbox_cfg,
                pod_ip: &pod_ip,
            };
            self.start_container(&c, s, &at, observed, effects).await;
        }
    }

    /// Stops the pod's containers and sandbox with its grace period, when anything of it
    /// still runs; true when it did.
    async fn kill_pod(&self, observed: &ObservedPod) -> bool {
        let running = observed
            .containers
            .iter()
            .any(|c| c.state != crate::kuberuntime::observed::State::Exited);
        let ready_sandbox = observed.sandboxes.iter().any(|s| s.ready);
        if !running && !ready_sandbox {
            return false;
        }
        log::info!(
            "pod {}: stopping the pod's containers and sandbox",
            self.name()
        );
        let grace = kill::grace_period(&self.pod);
        kill::stop_pod(&self.ctx, Some(&self.pod), observed, grace).await;
        true
    }

    /// Whether the pod is past its activeDeadlineSeconds; when not yet, the worker's
    /// timer is set to wake it at the deadline.
    fn check_deadline(&mut self) -> bool {
        // A pod that has succeeded stays Succeeded (kubelet refuses terminal-phase changes).
        let succeeded = self
            .last_status
            .as_ref()
            .is_some_and(|s| s.phase == Some(crate::model::status::PodPhase::Succeeded));
        if succeeded && !self.deadline_exceeded {
            return false;
        }
        let now = SystemTime::now();
        let start = self
            .last_status
            .as_ref()
            .and_then(|s| s.start_time.clone())
            .unwrap_or_else(now_rfc3339);
        match deadline::check(&self.pod, Some(&start), now) {
            Deadline::None => false,
            Deadline::At(at) => {
                let left = at.duration_since(now).unwrap_or_default();
                self.wake_no_later_than(Instant::now() + left);
                false
            }
            Deadline::Exceeded => {
                if !self.deadline_exceeded {
                    log::info!(
                        "pod {}: active longer than its activeDeadlineSeconds ({}s since {start}); failing it",
                        self.name(),
                        self.pod.spec.active_deadline_seconds.unwrap_or_default()
                    );
                }
                true
            }
        }
    }

    /// The sandbox to start containers in: a new one when the actions say so.
    async fn sandbox(
        &mut self,
        acts: &actions::PodActions,
        observed: &ObservedPod,
        effects: &mut Effects,
    ) -> Option<(String, pb::PodSandboxConfig, String)> {
        let cfg = &self.ctx.cfg;
        let attempt = acts
            .create_sandbox
            .unwrap_or_else(|| observed.latest_sandbox().map_or(0, |s| s.attempt));
        let sb_cfg = sandbox_config(&self.pod, attempt, &cfg.pod_logs_dir, &self.ctx.host.resolv);
        if acts.create_sandbox.is_none() {
            let latest = observed.latest_sandbox()?;
            return Some((
                acts.sandbox_id.clone().unwrap_or_else(|| latest.id.clone()),
                sb_cfg,
                latest.ip.clone(),
            ));
        }
        let key = self.pod.metadata.uid.clone();
        let now = Instant::now();
        if let Some(until) = self.sandbox_backoff.until(&key, now) {
            self.wake_no_later_than(until);
            return None;
        }
        let starting: Vec<String> = acts.start.iter().map(|s| s.name.clone()).collect();
        self.unstale_status(observed, &starting);
        let log_dir = log_directory(&self.ctx.cfg.pod_logs_dir, &self.pod);
        if let Err(e) = std::fs::create_dir_all(&log_dir) {
            log::warn!(
                "pod {}: cannot create log directory {}: {e}",
                self.name(),
                log_dir.display()
            );
        }
        log::info!("pod {}: creating sandbox (attempt {attempt})", self.name());
        let id = match self
            .ctx
            .cri
            .runtime
            .run_pod_sandbox(sb_cfg.clone(), "")
            .await
        {
            Ok(id) => id,
            Err(e) => {
                let delay = self.sandbox_backoff.fail(&key, now);
                log::warn!(
                    "pod {}: creating the sandbox failed (retry in {delay:?}): {e}",
                    self.name()
                );
                let err = SyncError::new(
                    "ContainerCreating",
                    format!("failed to create pod sandbox: {e}"),
                );
                self.wait_all(observed, &err);
                self.wake_no_later_than(now + delay);
                // A failed RunPodSandbox may leave a sandbox behind.
                effects.unknown = true;
                return None;
            }
        };
        self.sandbox_backoff.reset(&key);
        let ip = match self.ctx.cri.runtime.pod_sandbox_status(&id).await {
            Ok(st) => {
                let o = ObservedSandbox::from(&st);
                let ip = o.ip.clone();
                effects.sandbox = Some(o);
                ip
            }
            Err(e) => {
                log::warn!("pod {}: sandbox {id} status: {e}", self.name());
                effects.unknown = true;
                String::new()
            }
        };
        Some((id, sb_cfg, ip))
    }

    /// Starts one container (respecting crash-loop and pull back-off), recording in
    /// `effects` what it made.
    async fn start_container(
        &mut self,
        c: &Container,
        s: &actions::Start,
        at: &SandboxRef<'_>,
        observed: &ObservedPod,
        effects: &mut Effects,
    ) {
        let key = format!("{}/{}", self.pod.metadata.uid, c.name);
        let now = Instant::now();
        if matches!(s.reason, StartReason::Exited { .. }) {
            let exited_at = observed.latest(&c.name).map_or(0, |o| o.finished_at);
            let exited = instant_of(exited_at, now);
            if let Some(until) = self.crash.until_since(&key, exited, now) {
                let delay = self.crash.delay(&key).unwrap_or_default();
                let m = &self.pod.metadata;
                let message = format!(
                    "back-off {} restarting failed container={} pod={}_{}({})",
                    crate::config::format_duration(delay),
                    c.name,
                    m.name,
                    m.namespace,
                    m.uid
                );
                self.waiting.insert(
                    c.name.clone(),
                    Waiting {
                        reason: "CrashLoopBackOff".into(),
                        message,
                    },
                );
                self.wake_no_later_than(until);
                return;
            }
            self.crash.fail(&key, exited);
        }
        if image::policy(c) == PullPolicy::Always {
            // The pull may take a while.
            self.unstale_status(observed, std::slice::from_ref(&c.name));
        }
        let ensured = match image::ensure(&self.ctx, &self.pod, c, &mut self.pulls).await {
            Ok(e) => e,
            Err(w) => {
                log::warn!(
                    "pod {}: container {}: {}: {}",
                    self.name(),
                    c.name,
                    w.reason,
                    w.message
                );
                let fresh_failure = w.reason == "ErrImagePull";
                self.waiting.insert(c.name.clone(), w);
                let now = Instant::now();
                let until = self
                    .pulls
                    .until(&image::backoff_key(&self.pod.metadata.uid, &c.image), now);
                // A fresh failure shows as ErrImagePull; look again shortly so that the
                // status then says ImagePullBackOff while the back-off lasts (kubelet's
                // pod resync does the same), instead of sleeping through it.
                let next = match until {
                    Some(u) if fresh_failure => u.min(now + RETRY),
                    Some(u) => u,
                    None => now + CONFIG_RETRY,
                };
                self.wake_no_later_than(next);
                return;
            }
        };
        match ensured.offline {
            Some(err) => self.offline.insert(c.name.clone(), err),
            None => self.offline.remove(&c.name),
        };
        let facts = PodFacts {
            node_name: self.ctx.host.node_name.clone(),
            host_ip: self.ctx.host.host_ip.clone(),
            pod_ip: at.pod_ip.to_string(),
        };
        let cfg = &self.ctx.cfg;
        let cctx = ContainerContext {
            pods_dir: &cfg.pods_dir,
            allowed_host_paths: &cfg.allowed_host_paths,
            facts: &facts,
            objects: &*self.ctx,
            mem_capacity: self.ctx.host.mem_capacity,
            seccomp: SeccompPolicy {
                default_runtime: cfg.seccomp_default,
                profile_root: &cfg.seccomp_profile_root,
            },
        };
        let checked = match self.check_non_root(c, &ensured.image_ref).await {
            Ok(()) => container_config(&self.pod, c, s.restart_count, &ensured.image_ref, &cctx),
            Err(e) => Err(e),
        };
        let mut config = match checked {
            Ok(cfg) => cfg,
            Err(e) => {
                log::warn!("pod {}: container {}: {e}", self.name(), c.name);
                self.waiting.insert(
                    c.name.clone(),
                    Waiting {
                        reason: e.reason,
                        message: e.message,
                    },
                );
                self.wake_no_later_than(Instant::now() + CONFIG_RETRY);
                return;
            }
        };
        let message_file = self.termination_file(c);
        if let Some(f) = &message_file {
            config
                .mounts
                .push(termination::mount(f, &c.termination_message_path));
        }
        log::info!(
            "pod {}: starting container {} ({:?}, restart {})",
            self.name(),
            c.name,
            s.reason,
            s.restart_count
        );
        let rt = &self.ctx.cri.runtime;
        let result = match rt.create_container(at.id, config, at.config.clone()).await {
            Ok(id) => rt
                .start_container(&id)
                .await
                .map(|()| id)
                .map_err(|e| ("RunContainerError", e)),
            Err(e) => Err(("CreateContainerError", e)),
        };
        let id = match result {
            Ok(id) => id,
            Err((reason, e)) => {
                if let Some(f) = &message_file {
                    let _ = std::fs::remove_file(f);
                }
                log::warn!("pod {}: container {}: {reason}: {e}", self.name(), c.name);
                self.waiting.insert(
                    c.name.clone(),
                    Waiting {
                        reason: reason.into(),
                        message: e.to_string(),
                    },
                );
                self.wake_no_later_than(Instant::now() + RETRY);
                // A container may have been made (created, not started).
                effects.unknown = true;
                return;
            }
        };
        if self.post_start(c, &id, at.pod_ip).await {
            effects.unknown = true;
        }
        effects.started.push((id, at.id.to_string()));
    }

    /// kubelet's runAsNonRoot check; asks the runtime for the image's user only when
    /// it matters (runAsNonRoot without runAsUser).
    async fn check_non_root(&self, c: &Container, image_ref: &str) -> Result<(), SyncError> {
        let mut user = ImageUser::default();
        if non_root::needs_image_user(&self.pod, c) {
            let img = self
                .ctx
                .cri
                .image
                .image_status(image_ref)
                .await
                .map_err(|e| {
                    SyncError::new(
                        "CreateContainerConfigError",
                        format!("failed to get image user of {image_ref:?}: {e}"),
                    )
                })?
                .unwrap_or_default();
            user = ImageUser {
                uid: img.uid.map(|u| u.value),
                username: img.username,
            };
        }
        non_root::verify(&self.pod, c, &user)
            .map_err(|m| SyncError::new("CreateContainerConfigError", m))
    }

    /// A fresh termination-message file for the container's next instance, or `None`
    /// (no path, or the file cannot be made: logged, and the container runs without
    /// one, as kubelet does).
    fn termination_file(&self, c: &Container) -> Option<std::path::PathBuf> {
        if c.termination_message_path.is_empty() {
            return None;
        }
        let (pods_dir, uid) = (&self.ctx.cfg.pods_dir, &self.pod.metadata.uid);
        match termination::create_file(pods_dir, uid, &c.name) {
            Ok(f) => Some(f),
            Err(e) => {
                log::warn!(
                    "pod {}: container {}: cannot create its termination-message file in {}: {e}",
                    self.name(),
                    c.name,
                    termination::container_dir(pods_dir, uid, &c.name).display()
                );
                None
            }
        }
    }

    /// Runs the container's postStart hook, if any; kills the container when it fails
    /// (kubelet's FailedPostStartHook), leaving the restart to the policy and back-off.
    /// True when it killed the container.
    async fn post_start(&mut self, c: &Container, id: &str, pod_ip: &str) -> bool {
        let Some(h) = c.lifecycle.as_ref().and_then(|l| l.post_start.as_ref()) else {
            return false;
        };
        let pod_ip = if self.pod.spec.host_network || pod_ip.is_empty() {
            handler::pod_ip(&self.ctx, &self.pod, &ObservedPod::default())
        } else {
            pod_ip.to_string()
        };
        let target = Target {
            container_id: id.to_string(),
            pod_ip: pod_ip.clone(),
            ports: c.ports.clone(),
        };
        if let Err(e) = hooks::run(&self.ctx, h, &target, hooks::POST_START_LIMIT).await {
            log::warn!(
                "pod {}: container {} ({id}): postStart hook failed, killing it: {e}",
                self.name(),
                c.name
            );
            let grace = kill::grace_period(&self.pod);
            kill::stop_container(&self.ctx, Some(&self.pod), id, &c.name, grace, &pod_ip).await;
            return true;
        }
        false
    }

    /// Running containers to replace because a background pull brought an image other
    /// than the one they run (see [`image_refresh::outdated`]).
    async fn outdated(&mut self, observed: &ObservedPod) -> Vec<String> {
        if self.fresh_images.is_empty() {
            return Vec::new();
        }
        let ids =
            image_refresh::outdated(&self.ctx, &self.pod, observed, &mut self.fresh_images).await;
        if !self.fresh_images.is_empty() {
            self.wake_no_later_than(Instant::now() + RETRY);
        }
        ids
    }

    /// Containers running a local copy: pull their images again in the background
    /// when the back-off allows, so the pod is current again once the registry is back.
    /// Pulls of images no offline container needs any longer are cancelled.
    fn schedule_refreshes(&mut self) {
        let mut images: Vec<String> = Vec::new();
        for c in self.pod.all_containers() {
            if self.offline.contains_key(&c.name) && !images.contains(&c.image) {
                images.push(c.image.clone());
            }
        }
        self.offline
            .retain(|n, _| self.pod.all_containers().any(|c| &c.name == n));
        self.refreshes.retain(|i| images.iter().any(|w| w == i));
        let now = Instant::now();
        for image in &images {
            if self.refreshes.is_running(image) {
                continue;
            }
            let key = image::backoff_key(&self.pod.metadata.uid, image);
            match self.pulls.until(&key, now) {
                Some(until) => self.wake_no_later_than(until),
                None => self.refreshes.start(&self.ctx, &self.pod, image),
            }
        }
    }

    /// A background pull of `image` finished: the registry answered with an image
    /// (the offline containers using it are current again, and the next sync replaces
    /// those that run another image), or it failed (back-off, then again).
    fn pulled(&mut self, image: String, result: Result<String, PullError>) {
        image::note_outcome(&self.ctx, &image, &result);
        let key = image::backoff_key(&self.pod.metadata.uid, &image);
        let names: Vec<String> = self
            .pod
            .all_containers()
            .filter(|c| c.image == image && self.offline.contains_key(&c.name))
            .map(|c| c.name.clone())
            .collect();
        match result {
            Ok(id) => {
                log::info!(
                    "pod {}: image {image} pulled ({id}); no longer running offline",
                    self.name()
                );
                self.pulls.reset(&key);
                for n in &names {
                    self.offline.remove(n);
                }
                self.fresh_images.insert(image, id);
            }
            Err(e) => {
                let delay = self.pulls.fail(&key, Instant::now());
                log::info!(
                    "pod {}: {} (again in {})",
                    self.name(),
                    e.message,
                    crate::config::format_duration(delay)
                );
                for n in names {
                    self.offline.insert(n, e.message.clone());
                }
            }
        }
    }

    /// Before a step that may take a while (a new sandbox, a pull): when the last status
    /// written shows a container running that the runtime does not run (the pod's
    /// containers are gone after a reboot, or one died), writes what is observed now,
    /// with `starting` containers waiting in ContainerCreating, so that no reader sees
    /// `Running` for a container that does not exist while the step lasts.
    fn unstale_status(&mut self, observed: &ObservedPod, starting: &[String]) {
        let Some(last) = &self.last_status else {
            return;
        };
        let runs = |id: &str| {
            observed
                .containers
                .iter()
                .any(|c| c.id == id && c.state == State::Running)
        };
        let stale = last
            .init_container_statuses
            .iter()
            .chain(&last.container_statuses)
            .filter(|s| s.state.running.is_some())
            .any(|s| !runs(s.container_id.rsplit("://").next().unwrap_or_default()));
        if !stale {
            return;
        }
        // Only for this write: a container started later in this sync may have exited
        // by its end, and must then show as terminated, not waiting.
        let waiting = self.waiting.clone();
        for name in starting {
            self.waiting.entry(name.clone()).or_insert_with(|| Waiting {
                reason: "ContainerCreating".into(),
                message: String::new(),
            });
        }
        self.write_status(observed);
        self.waiting = waiting;
    }

    fn write_status(&mut self, observed: &ObservedPod) {
        let now = now_rfc3339();
        let runtime_name = self.ctx.runtime_name.borrow().clone();
        let mut status = pod_status(&StatusInput {
            pod: &self.pod,
            observed,
            waiting: &self.waiting,
            previous: self.last_status.as_ref(),
            host_ip: &self.ctx.host.host_ip,
            runtime_name: &runtime_name,
            now: &now,
            init_failed: self.init_failed,
            probes: &self.probes.status(),
            failed: self
                .deadline_exceeded
                .then_some((deadline::REASON, deadline::MESSAGE)),
        });
        if !self.offline.is_empty() {
            status.reason = "OfflineImage".into();
            let parts: Vec<String> = self
                .offline
                .iter()
                .map(|(n, e)| format!("container {n} runs its local image: {e}"))
                .collect();
            status.message = parts.join("; ");
        }
        if let Some(note) = &self.store_note {
            note_desired_file(&mut status, note);
        }
        let (ns, name) = (
            self.pod.metadata.namespace.clone(),
            self.pod.metadata.name.clone(),
        );
        match self
            .ctx
            .store
            .borrow_mut()
            .write_status(&ns, &name, &status)
        {
            Ok(true) => log::debug!("pod {ns}/{name}: status written ({:?})", status.phase),
            Ok(false) => {}
            Err(e) => log::warn!("pod {ns}/{name}: cannot write status: {e}"),
        }
        self.last_status = Some(status);
    }

    /// Stops the pod with its grace period, removes it from the runtime and forgets its
    /// status and volumes. Retries while the runtime is unreachable.
    async fn terminate(mut self) {
        // Background pulls are of no use any more.
        self.refreshes = Refreshes::default();
        let uid = self.pod.metadata.uid.clone();
        let grace = kill::grace_period(&self.pod);
        log::info!("pod {}: deleting (grace period {grace:?})", self.name());
        loop {
            match observe::observe(&self.ctx, &uid).await {
                Ok(o) => {
                    kill::stop_pod(&self.ctx, Some(&self.pod), &o, grace).await;
                    let after = observe::observe(&self.ctx, &uid).await.unwrap_or(o);
                    kill::remove_pod(&self.ctx, &after).await;
                    break;
                }
                Err(e) => {
                    log::warn!("pod {}: delete waits for the runtime: {e}", self.name());
                    Timer::after(RETRY).await;
                }
            }
        }
        let (ns, name) = (&self.pod.metadata.namespace, &self.pod.metadata.name);
        if let Err(e) = self.ctx.store.borrow_mut().remove_status(ns, name) {
            log::warn!("pod {ns}/{name}: cannot remove status: {e}");
        }
        let dir = self.ctx.cfg.pods_dir.join(&uid);
        match pod_dir::remove(&dir) {
            Ok(done) => done
                .iter()
                .for_each(|d| log::info!("pod {ns}/{name}: unmounted {}", d.display())),
            Err(e) => log::warn!("pod {ns}/{name}: cannot remove {}: {e}", dir.display()),
        }
        log::info!("pod {ns}/{name}: deleted");
    }
}

/// Adds what happened to the pod's desired file to its status: reason
/// `DesiredFileQuarantined` unless another reason is set, the note in the message.
fn note_desired_file(status: &mut PodStatus, note: &str) {
    if status.reason.is_empty() {
        status.reason = "DesiredFileQuarantined".into();
    }
    status.message = if status.message.is_empty() {
        note.to_string()
    } else {
        format!("{}; {note}", status.message)
    };
}

/// The monotonic instant of a runtime timestamp (nanoseconds since the epoch); `now`
/// for 0 (unknown) or a time in the future.
pub(super) fn instant_of(unix_nanos: i64, now: Instant) -> Instant {
    let Ok(nanos) = u64::try_from(unix_nanos) else {
        return now;
    };
    if nanos == 0 {
        return now;
    }
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let ago = wall.saturating_sub(Duration::from_nanos(nanos));
    now.checked_sub(ago).unwrap_or(now)
}
