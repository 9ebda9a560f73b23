//! One pass of kubelet's SyncPod: observe the pod on the runtime, prepare its volumes,
//! compute its actions ([`crate::agent::actions`]) and carry them out (kill, remove,
//! sandbox, start), then write its status. A pod past its deadline, or in a terminal
//! phase, only has what still runs stopped. Every failure ends the pass with a wake-up
//! set, so the next pass tries again; nothing here waits for the runtime in a loop.

use super::sandbox::SandboxRef;
use super::{Worker, CONFIG_RETRY, RETRY};
use crate::agent::actions::{self, Desired, Kill};
use crate::agent::handler;
use crate::agent::kill;
use crate::agent::observe::{self, Effects};
use crate::cri::CriError;
use crate::kuberuntime::hash::{container_hash, sandbox_hash};
use crate::kuberuntime::observed::{ObservedPod, State};
use crate::kuberuntime::{volumes, SyncError};
use crate::model::reason::{EventReason, Reason};
use crate::model::status::PodPhase;
use crate::model::{Container, Pod};
use std::time::Instant;

/// What a sync does after observing the pod.
enum Step {
    /// Stop the pod (past its deadline).
    Stop,
    /// Carry out its actions.
    Act,
    /// Nothing now: it cannot be set up (the containers wait, the worker wakes later).
    Wait,
}

impl Worker {
    /// One pass of kubelet's SyncPod.
    pub(super) async fn sync(&mut self) {
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
            Err(e) => return self.cannot_observe(&e),
        };
        if std::mem::take(&mut self.first_sync) {
            self.terminal = self.terminal_before(&observed);
        }
        // The API's word that the pod finished (a cluster pod) holds whatever the
        // runtime shows: what still runs is stopped, nothing is started again.
        if self.terminal.is_none() {
            self.terminal = self.pod.finished();
        }
        let mut effects = Effects::default();
        match self.next_step(&observed) {
            Step::Stop => effects.unknown = self.kill_pod(&observed).await,
            Step::Act => {
                let outdated = self.outdated(&observed).await;
                self.act(&observed, &outdated, &mut effects).await
            }
            Step::Wait => {}
        }
        let observed = observe::after(&self.ctx, &uid, observed, effects).await;
        if !self.deadline_exceeded && self.evicted.is_none() && self.terminal.is_none() {
            let (ctx, pod) = (&self.ctx, &self.pod);
            if let Some(at) = self.offline.schedule(ctx, pod, &self.pulls) {
                self.wake_no_later_than(at);
            }
        }
        self.probes.reconcile(&self.ctx, &self.pod, &observed);
        self.write_status(&observed);
        self.finished.set(self.terminal.is_some());
    }

    /// The runtime could not say what it holds of the pod: try again shortly.
    fn cannot_observe(&mut self, e: &CriError) {
        log::warn!(
            "pod {}: cannot read its state from the runtime: {e}",
            self.name()
        );
        self.wake_no_later_than(Instant::now() + RETRY);
    }

    /// What to do with the pod: past its deadline, stop it; in a terminal phase, act
    /// (the actions stop what still runs, nothing more); otherwise prepare its volumes
    /// (without them no container can start) and act.
    fn next_step(&mut self, observed: &ObservedPod) -> Step {
        if self.terminal.is_none() {
            self.deadline_exceeded = self.check_deadline();
        }
        if self.deadline_exceeded || self.evicted.is_some() {
            return Step::Stop;
        }
        if self.terminal.is_some() {
            return Step::Act;
        }
        if let Err(e) = self.prepare_volumes() {
            self.pod_cannot_start(observed, &e, Instant::now() + CONFIG_RETRY);
            return Step::Wait;
        }
        Step::Act
    }

    /// The terminal phase the status file holds, when it is this pod's: the runtime
    /// still shows one of the containers it names. (A file left by an earlier pod of
    /// the same name must not keep this one from starting.)
    fn terminal_before(&self, observed: &ObservedPod) -> Option<PodPhase> {
        let last = self.last_status.as_ref()?;
        let phase = last
            .phase
            .filter(|p| matches!(p, PodPhase::Succeeded | PodPhase::Failed))?;
        let ours = last
            .init_container_statuses
            .iter()
            .chain(&last.container_statuses)
            .map(|s| s.container_id.rsplit("://").next().unwrap_or_default())
            .any(|id| !id.is_empty() && observed.containers.iter().any(|c| c.id == id));
        ours.then_some(phase)
    }

    /// Makes every volume ready; a volume that cannot be is kubelet's `FailedMount`
    /// event (not while the cluster's token is merely awaited: no fault).
    fn prepare_volumes(&self) -> Result<(), SyncError> {
        let cfg = &self.ctx.cfg;
        for v in &self.pod.spec.volumes {
            let prepared = self.claim_allowed(v).and_then(|()| {
                volumes::prepare_one(
                    &self.pod,
                    v,
                    &cfg.pods_dir,
                    &cfg.allowed_host_paths,
                    &*self.ctx,
                )
            });
            if let Err(e) = prepared {
                if e.reason != Reason::ContainerCreating {
                    self.ctx
                        .event(&self.pod, "", true, EventReason::FailedMount, || {
                            format!(
                                "MountVolume.SetUp failed for volume {:?} : {}",
                                v.name, e.message
                            )
                        });
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// A claim bound to a host directory, judged as the hostPath it is (policy, the
    /// volume's node affinity: `node::admit::volume_claims`) here, before anything of
    /// the pod is made, since the uplink resolves claims only after admission.
    #[cfg(feature = "uplink")]
    fn claim_allowed(&self, v: &crate::model::pod::Volume) -> Result<(), SyncError> {
        let Some(claim) = &v.persistent_volume_claim else {
            return Ok(());
        };
        let name = &claim.claim_name;
        let bound = self.ctx.claims.lookup(&self.pod, name)?;
        let labels = crate::agent::admission::node_labels(&self.ctx);
        let node = &self.ctx.host.node_name;
        let judged = crate::node::admit::volume_claims::check(
            &self.pod,
            name,
            &bound,
            &self.ctx.cfg,
            node,
            &labels,
        );
        judged.map_err(|r| {
            let reason = if r.reason == crate::node::admit::policy::REASON {
                Reason::HostPathNotAllowed
            } else {
                Reason::CreateContainerConfigError
            };
            SyncError::new(reason, format!("{}: {}", r.reason, r.message))
        })
    }

    /// Without the uplink no pod has a resolved claim.
    #[cfg(not(feature = "uplink"))]
    fn claim_allowed(&self, _: &crate::model::pod::Volume) -> Result<(), SyncError> {
        Ok(())
    }

    /// Running containers to replace because a background pull brought an image other
    /// than the one they run (see [`crate::agent::image_refresh::outdated`]).
    async fn outdated(&mut self, observed: &ObservedPod) -> Vec<String> {
        let Some(check) = self.offline.outdated(&self.ctx, &self.pod, observed) else {
            return Vec::new();
        };
        let ids = check.await;
        if self.offline.undecided() {
            self.wake_no_later_than(Instant::now() + RETRY);
        }
        ids
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
            terminal: self.terminal.is_some(),
        };
        let acts = actions::compute(&desired, observed);
        // Once failed, failed for good (also when a later pass would not say so).
        self.init_failed |= acts.init_failed;
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
        if !acts.remove.is_empty() {
            self.remove_unstarted(&acts.remove).await;
            effects.unknown = true;
        }
        if acts.start.is_empty() && acts.resume.is_empty() {
            return;
        }
        let Some((sandbox_id, sandbox_cfg, pod_ip)) = self.sandbox(&acts, observed, effects).await
        else {
            return;
        };
        let at = SandboxRef {
            id: &sandbox_id,
            config: &sandbox_cfg,
            pod_ip: &pod_ip,
        };
        for s in acts.resume.iter().chain(&acts.start) {
            let Some(c) = spec_container(&self.pod, s.init, s.index).cloned() else {
                continue;
            };
            self.start_container(&c, s, &at, observed, effects).await;
        }
    }

    /// Removes the containers made but never started that will not be (before anything
    /// new is made in their place).
    async fn remove_unstarted(&mut self, remove: &[Kill]) {
        for r in remove {
            log::info!(
                "pod {}: removing container {} ({}): {}",
                self.name(),
                r.name,
                r.id,
                r.reason
            );
            match self.ctx.cri.runtime.remove_container(&r.id).await {
                Err(e) if !e.is_not_found() => {
                    log::warn!("pod {}: removing container {}: {e}", self.name(), r.id)
                }
                _ => {}
            }
        }
    }

    /// Stops the pod's containers and sandbox with its grace period, when anything of it
    /// still runs; true when it did.
    pub(super) async fn kill_pod(&self, observed: &ObservedPod) -> bool {
        let running = observed.containers.iter().any(|c| c.state != State::Exited);
        let ready_sandbox = observed.sandboxes.iter().any(|s| s.ready);
        if !running && !ready_sandbox {
            return false;
        }
        log::info!(
            "pod {}: stopping the pod's containers and sandbox",
            self.name()
        );
        let grace = self
            .evict_grace
            .unwrap_or_else(|| kill::grace_period(&self.pod));
        kill::stop_pod(&self.ctx, Some(&self.pod), observed, grace).await;
        true
    }
}

/// The init (`init`) or app container at `index` of the pod's spec.
fn spec_container(pod: &Pod, init: bool, index: usize) -> Option<&Container> {
    let list = if init {
        &pod.spec.init_containers
    } else {
        &pod.spec.containers
    };
    list.get(index)
}
