//! The sandbox a pod's containers start in: the ready one, or a new one when the
//! actions say so. RunPodSandbox fails for reasons that last (a CNI plugin that cannot
//! set up the network), so a failure backs off (1 s doubling to 1 min) while every
//! container waits in `ContainerCreating` naming the error; a wake of the worker in
//! between (a configMap change) does not shorten the back-off. A RunPodSandbox that got
//! no answer is checked with the runtime first: a ready sandbox it made is used.

use super::Worker;
use crate::agent::actions::PodActions;
use crate::agent::observe::Effects;
use crate::cri::{pb, CriError};
use crate::kuberuntime::agent_mark;
use crate::kuberuntime::observed::{ObservedPod, ObservedSandbox};
use crate::kuberuntime::runtime_handler::runtime_handler;
use crate::kuberuntime::sandbox::{log_directory, sandbox_config};
use crate::kuberuntime::SyncError;
use crate::model::Reason;
use std::time::Instant;

/// The sandbox containers are started in.
pub(super) struct SandboxRef<'a> {
    pub id: &'a str,
    pub config: &'a pb::PodSandboxConfig,
    pub pod_ip: &'a str,
}

impl Worker {
    /// The sandbox to start containers in: a new one when the actions say so. `None`
    /// when there is none to use now (the worker then waits, woken as set here).
    pub(super) async fn sandbox(
        &mut self,
        acts: &PodActions,
        observed: &ObservedPod,
        effects: &mut Effects,
    ) -> Option<(String, pb::PodSandboxConfig, String)> {
        let cfg = &self.ctx.cfg;
        let attempt = acts
            .create_sandbox
            .unwrap_or_else(|| observed.latest_sandbox().map_or(0, |s| s.attempt));
        let mark = agent_mark::mark(&cfg.state_dir);
        let mut sb_cfg = sandbox_config(
            &self.pod,
            attempt,
            &cfg.pod_logs_dir,
            &self.ctx.host.resolv,
            &mark,
        );
        if let (Some(cg), Some(linux)) = (&self.ctx.cgroups, sb_cfg.linux.as_mut()) {
            linux.cgroup_parent = cg.cgroup_parent(&self.pod);
        }
        if acts.create_sandbox.is_none() {
            if let Some(cg) = &self.ctx.cgroups {
                cg.note(&self.pod);
            }
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
        self.make_log_directory();
        log::info!("pod {}: creating sandbox (attempt {attempt})", self.name());
        if let Some(Err(e)) = self.ctx.cgroups.as_ref().map(|cg| cg.ensure(&self.pod)) {
            // The pods' parent still bounds it; the runtime makes the cgroup itself.
            log::warn!("pod {}: its cgroup's limits: {e}", self.name());
        }
        let made = match self
            .ctx
            .cri
            .runtime
            .run_pod_sandbox(sb_cfg.clone(), runtime_handler(&self.pod))
            .await
        {
            Err(e) if e.is_deadline_exceeded() => {
                self.sandbox_made_after_all(attempt).await.ok_or(e)
            }
            r => r,
        };
        let id = match made {
            Ok(id) => id,
            Err(e) => {
                // Measured from the failure, as kubelet does: a call that took longer
                // than the back-off to fail still waits the whole back-off.
                let now = Instant::now();
                let delay = self.sandbox_backoff.fail(&key, now);
                log::warn!(
                    "pod {}: creating the sandbox failed (retry in {delay:?}): {e}",
                    self.name()
                );
                let err = SyncError::new(
                    Reason::ContainerCreating,
                    format!("failed to create pod sandbox: {e}"),
                );
                self.pod_waits(observed, &err, now + delay);
                // A failed RunPodSandbox may leave a sandbox behind.
                effects.unknown = true;
                return None;
            }
        };
        self.sandbox_backoff.reset(&key);
        let status = self.ctx.cri.runtime.pod_sandbox_status(&id).await;
        let ip = self.new_sandbox_ip(&id, status, effects);
        Some((id, sb_cfg, ip))
    }

    /// The pod's log directory, made before its sandbox (the runtime expects it); a
    /// failure is logged, and the containers run without logs.
    fn make_log_directory(&self) {
        let log_dir = log_directory(&self.ctx.cfg.pod_logs_dir, &self.pod);
        if let Err(e) = std::fs::create_dir_all(&log_dir) {
            log::warn!(
                "pod {}: cannot create log directory {}: {e}",
                self.name(),
                log_dir.display()
            );
        }
    }

    /// The IP of the sandbox `id` just made, from its `status`, noted in `effects` (so
    /// the state after the sync is known without listing everything again).
    fn new_sandbox_ip(
        &self,
        id: &str,
        status: Result<pb::PodSandboxStatus, CriError>,
        effects: &mut Effects,
    ) -> String {
        match status {
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
        }
    }
}
