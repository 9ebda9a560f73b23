//! Starting one container, as kubelet's `startContainer`: the crash-loop back-off of a
//! container that exited, its image per pull policy (with the offline rule of
//! [`crate::agent::image`]), its CRI config (runAsNonRoot checked against the image's
//! user, a fresh termination-message file mounted), CreateContainer and
//! StartContainer, then its postStart hook. Each step that fails leaves the container
//! waiting with kubelet's reason for it and a time to try again; the next steps are not
//! taken.
//!
//! Also the start of a container the runtime made earlier and never started
//! ([`crate::agent::actions::StartReason::Made`]): a create whose answer never came. Its
//! termination-message file is kept for it (`Worker::unanswered`).

use super::sandbox::SandboxRef;
use super::{Worker, CONFIG_RETRY, RETRY};
use crate::agent::actions::{Start, StartReason};
use crate::agent::handler::{self, Target};
use crate::agent::observe::Effects;
use crate::agent::{hooks, image, kill};
use crate::cri::{pb, CriError};
use crate::kuberuntime::container::{container_config, ContainerContext};
use crate::kuberuntime::env::PodFacts;
use crate::kuberuntime::non_root::{self, ImageUser};
use crate::kuberuntime::observed::ObservedPod;
use crate::kuberuntime::security::SeccompPolicy;
use crate::kuberuntime::status::Waiting;
use crate::kuberuntime::time::instant_of;
use crate::kuberuntime::{termination, SyncError};
use crate::model::container::PullPolicy;
use crate::model::reason::EventReason;
use crate::model::{Container, Reason};
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

impl Worker {
    /// Starts one container (respecting crash-loop and pull back-off), recording in
    /// `effects` what it made. Each step that fails leaves it waiting and returns.
    pub(super) async fn start_container(
        &mut self,
        c: &Container,
        s: &Start,
        at: &SandboxRef<'_>,
        observed: &ObservedPod,
        effects: &mut Effects,
    ) {
        let made = match &s.reason {
            StartReason::Made { id } => {
                // Its termination-message file is its own now (or was never kept).
                self.take_unanswered(&c.name);
                self.log_start(c, s);
                Some((id.clone(), None))
            }
            _ => self.create(c, s, at, observed, effects).await,
        };
        let Some((id, message_file)) = made else {
            return;
        };
        let started = match self.ctx.cri.runtime.start_container(&id).await {
            Err(e) if e.is_deadline_exceeded() && self.started_after_all(c, &id).await => Ok(()),
            r => r,
        };
        match started {
            Ok(()) => {
                let name = &c.name;
                self.ctx
                    .event(&self.pod, name, false, EventReason::Started, || {
                        format!("Started container {name}")
                    });
                if self.post_start(c, &id, at.pod_ip).await {
                    effects.unknown = true;
                }
                effects.started.push((id, at.id.to_string()));
            }
            Err(e) => {
                self.start_failed(c, Reason::RunContainerError, &e, message_file);
                // A container was made, not started.
                effects.unknown = true;
            }
        }
    }

    /// Creates `c`'s next instance: its id and termination-message file, or `None`
    /// when it cannot be made now (it waits).
    async fn create(
        &mut self,
        c: &Container,
        s: &Start,
        at: &SandboxRef<'_>,
        observed: &ObservedPod,
        effects: &mut Effects,
    ) -> Option<(String, Option<PathBuf>)> {
        if self.crash_loop_holds(c, s, observed) {
            return None;
        }
        if image::policy(c) == PullPolicy::Always {
            // The pull may take a while.
            self.unstale_status(observed, std::slice::from_ref(&c.name));
        }
        let ensured = match image::ensure(&self.ctx, &self.pod, c, &mut self.pulls).await {
            Ok(e) => e,
            Err(w) => return self.pull_failed(c, w),
        };
        self.offline.note(&c.name, ensured.offline);
        let image_ref = &ensured.image_ref;
        let checked = match self.check_non_root(c, image_ref).await {
            Ok(()) => self.config(c, s, image_ref, at),
            Err(e) => Err(e),
        };
        let mut config = match checked {
            Ok(config) => config,
            Err(e) => {
                let retry = Instant::now() + CONFIG_RETRY;
                self.cannot_start(&c.name, e.reason, e.message, retry);
                return None;
            }
        };
        let message_file = self.termination_file(c);
        if let Some(f) = &message_file {
            config
                .mounts
                .push(termination::mount(f, &c.termination_message_path));
        }
        self.log_start(c, s);
        let rt = &self.ctx.cri.runtime;
        let made = match rt.create_container(at.id, config, at.config.clone()).await {
            Err(e) if e.is_deadline_exceeded() => {
                match self.made_after_all(c, at.id, s.restart_count).await {
                    Some(id) => Ok(id),
                    None => Err(e),
                }
            }
            r => r,
        };
        match made {
            Ok(id) => {
                let name = &c.name;
                self.ctx
                    .event(&self.pod, name, false, EventReason::Created, || {
                        format!("Created container {name}")
                    });
                // Made: what an earlier create without an answer left serves nothing.
                if let Some(old) = self.take_unanswered(&c.name) {
                    let _ = std::fs::remove_file(old);
                }
                Some((id, message_file))
            }
            Err(e) => {
                self.start_failed(c, Reason::CreateContainerError, &e, message_file);
                // A container may have been made (created, not started).
                effects.unknown = true;
                None
            }
        }
    }

    /// Says which instance of `c` is started, and why.
    fn log_start(&self, c: &Container, s: &Start) {
        log::info!(
            "pod {}: starting container {} ({:?}, restart {})",
            self.name(),
            c.name,
            s.reason,
            s.restart_count
        );
    }

    /// Whether the crash-loop back-off of `c` (which exited) holds its restart; it
    /// then waits in CrashLoopBackOff. Otherwise the restart counts as a failure.
    fn crash_loop_holds(&mut self, c: &Container, s: &Start, observed: &ObservedPod) -> bool {
        if !matches!(s.reason, StartReason::Exited { .. }) {
            return false;
        }
        let key = format!("{}/{}", self.pod.metadata.uid, c.name);
        let now = Instant::now();
        let exited_at = observed.latest(&c.name).map_or(0, |o| o.finished_at);
        let exited = instant_of(exited_at, now, SystemTime::now());
        let Some(until) = self.crash.until_since(&key, exited, now) else {
            self.crash.fail(&key, exited);
            return false;
        };
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
        self.ctx
            .event(&self.pod, &c.name, true, EventReason::BackOff, || {
                format!(
                    "Back-off restarting failed container {} in pod {}_{}({})",
                    c.name, m.name, m.namespace, m.uid
                )
            });
        self.backs_off(&c.name, Reason::CrashLoopBackOff, message, until);
        true
    }

    /// `c`'s image cannot be had now: it waits until the pull back-off ends.
    fn pull_failed<T>(&mut self, c: &Container, w: Waiting) -> Option<T> {
        let fresh_failure = w.reason == Reason::ErrImagePull;
        let now = Instant::now();
        let until = self
            .pulls
            .until(&image::backoff_key(&self.pod.metadata.uid, &c.image), now);
        // A fresh failure shows as ErrImagePull; look again shortly so that the status
        // then says ImagePullBackOff while the back-off lasts (kubelet's pod resync
        // does the same), instead of sleeping through it.
        let next = match until {
            Some(u) if fresh_failure => u.min(now + RETRY),
            Some(u) => u,
            None => now + CONFIG_RETRY,
        };
        self.cannot_start(&c.name, w.reason, w.message, next);
        None
    }

    /// The CRI config of `c`'s next instance from `image_ref` (an error names what is
    /// missing, e.g. a configMap key).
    fn config(
        &self,
        c: &Container,
        s: &Start,
        image_ref: &str,
        at: &SandboxRef<'_>,
    ) -> Result<pb::ContainerConfig, SyncError> {
        let facts = PodFacts {
            node_name: self.ctx.host.node_name.clone(),
            host_ip: self.ctx.host.host_ip.clone(),
            pod_ip: at.pod_ip.to_string(),
        };
        let cfg = &self.ctx.cfg;
        let mark = crate::kuberuntime::agent_mark::mark(&cfg.state_dir);
        let cctx = ContainerContext {
            pods_dir: &cfg.pods_dir,
            allowed_host_paths: &cfg.allowed_host_paths,
            facts: &facts,
            objects: &*self.ctx,
            mem_capacity: self.ctx.host.mem_capacity,
            cluster_domain: &cfg.cluster_domain,
            seccomp: SeccompPolicy {
                default_runtime: cfg.seccomp_default,
                profile_root: &cfg.seccomp_profile_root,
            },
            agent_mark: &mark,
        };
        container_config(&self.pod, c, s.restart_count, image_ref, &cctx)
    }

    /// CreateContainer (or StartContainer, `reason` says which) failed with `e`: the
    /// container waits. Its termination-message file goes, unless the create got no
    /// answer: it may have made the container, which mounts the file, and the next
    /// sync starts that one (at most one file is kept per container).
    fn start_failed(
        &mut self,
        c: &Container,
        reason: Reason,
        e: &CriError,
        message_file: Option<PathBuf>,
    ) {
        let unanswered = reason == Reason::CreateContainerError && e.is_deadline_exceeded();
        let gone = match message_file {
            Some(f) if unanswered => {
                let older = self.take_unanswered(&c.name);
                self.unanswered.push((c.name.clone(), f));
                older
            }
            f => f,
        };
        if let Some(f) = gone {
            let _ = std::fs::remove_file(f);
        }
        self.ctx
            .event(&self.pod, &c.name, true, EventReason::Failed, || {
                format!("Error: {e}")
            });
        self.cannot_start(&c.name, reason, e.to_string(), Instant::now() + RETRY);
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
                        Reason::CreateContainerConfigError,
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
            .map_err(|e| SyncError::new(Reason::CreateContainerConfigError, e.to_string()))
    }

    /// A fresh termination-message file for the container's next instance, or `None`
    /// (no path, or the file cannot be made: logged, and the container runs without
    /// one, as kubelet does).
    fn termination_file(&self, c: &Container) -> Option<PathBuf> {
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
}
