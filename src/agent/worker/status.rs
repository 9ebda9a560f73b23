//! The pod's status as the worker writes it: kubelet's status of what the runtime shows
//! ([`crate::kuberuntime::status`]) with what only the worker knows (waiting reasons,
//! probe results, a deadline or an init container that failed the pod, containers on
//! their local image, a restored desired file). The store writes it only when it
//! changed. A phase once Succeeded or Failed is kept (`Worker::terminal`).
//!
//! Before a step that may take a while, [`Worker::unstale_status`] makes sure no reader
//! sees a container `Running` that is gone.

use super::Worker;
use crate::agent::deadline;
use crate::kuberuntime::observed::{ObservedPod, State};
use crate::kuberuntime::status::{pod_status, StatusInput, Waiting};
use crate::model::status::PodPhase;
use crate::model::time::now_rfc3339;
use crate::model::{PodStatus, Reason};

impl Worker {
    /// Before a step that may take a while (a new sandbox, a pull): when the last status
    /// written shows a container running that the runtime does not run (the pod's
    /// containers are gone after a reboot, or one died), writes what is observed now,
    /// with `starting` containers waiting in ContainerCreating, so that no reader sees
    /// `Running` for a container that does not exist while the step lasts.
    pub(super) fn unstale_status(&mut self, observed: &ObservedPod, starting: &[String]) {
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
                reason: Reason::ContainerCreating,
                message: String::new(),
            });
        }
        self.write_status(observed);
        self.waiting = waiting;
    }

    /// Computes the pod's status from `observed` and writes it (when it changed). A
    /// finished pod of which the runtime holds nothing keeps the status it finished
    /// with (its containers' last states, or the reason the node refused it): there is
    /// nothing left to tell it from.
    pub(super) fn write_status(&mut self, observed: &ObservedPod) {
        let nothing_left = observed.sandboxes.is_empty() && observed.containers.is_empty();
        let kept = self
            .last_status
            .as_ref()
            .filter(|last| self.terminal.is_some() && last.phase == self.terminal);
        if nothing_left && kept.is_some() {
            return;
        }
        let status = self.status(observed);
        if matches!(status.phase, Some(PodPhase::Succeeded | PodPhase::Failed)) {
            self.terminal = status.phase;
        }
        let (ns, name) = (&self.pod.metadata.namespace, &self.pod.metadata.name);
        match self.ctx.store.borrow_mut().write_status(ns, name, &status) {
            Ok(true) => log::debug!("pod {ns}/{name}: status written ({:?})", status.phase),
            Ok(false) => {}
            Err(e) => log::warn!("pod {ns}/{name}: cannot write status: {e}"),
        }
        self.last_status = Some(status);
    }

    /// The pod's status now.
    fn status(&self, observed: &ObservedPod) -> PodStatus {
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
            failed: match &self.evicted {
                Some(message) => Some((Reason::Evicted, message.as_str())),
                None => self
                    .deadline_exceeded
                    .then_some((deadline::REASON, deadline::MESSAGE)),
            },
            terminal: self.terminal,
        });
        if let Some(message) = self.offline.status_message() {
            status.reason = Reason::OfflineImage.into();
            status.message = message;
        }
        if let Some(note) = &self.store_note {
            note_desired_file(&mut status, note);
        }
        status
    }
}

/// Adds what happened to the pod's desired file to its status: reason
/// `DesiredFileQuarantined` unless another reason is set, the note in the message.
fn note_desired_file(status: &mut PodStatus, note: &str) {
    if status.reason.is_empty() {
        status.reason = Reason::DesiredFileQuarantined.into();
    }
    status.message = if status.message.is_empty() {
        note.to_string()
    } else {
        format!("{}; {note}", status.message)
    };
}
