//! A create or start whose answer never came is checked with the runtime before it is
//! counted as a failure: on a loaded board the runtime often carried the
//! call out after the agent stopped waiting. What it made is adopted: a container
//! the create made is started now, a container the start started runs on as it is. No
//! restart is counted for either, and nothing is made twice. A container made while
//! a message waits for the worker (maybe a new spec) is left to the next sync, which
//! starts it only if it is still of the current spec (see [`crate::agent::actions`]).

use super::{Msg, Worker};
use crate::cri::pb;
use crate::kuberuntime::labels;
use crate::model::Container;
use std::collections::BTreeMap;

impl Worker {
    /// The id of the instance `attempt` of `c` in sandbox `sandbox_id` that the
    /// runtime made and that has not run yet, if there is one (asked after a
    /// CreateContainer got no answer).
    pub(super) async fn made_after_all(
        &mut self,
        c: &Container,
        sandbox_id: &str,
        attempt: u32,
    ) -> Option<String> {
        if self.new_spec_waits() {
            return None;
        }
        let filter = pb::ContainerFilter {
            pod_sandbox_id: sandbox_id.into(),
            label_selector: BTreeMap::from([
                (labels::POD_UID.into(), self.pod.metadata.uid.clone()),
                (labels::CONTAINER_NAME.into(), c.name.clone()),
            ]),
            ..Default::default()
        };
        let rt = &self.ctx.cri.runtime;
        let found = rt.list_containers(Some(filter)).await.ok()?;
        let made = found.into_iter().find(|x| {
            x.metadata.as_ref().is_some_and(|m| m.attempt == attempt)
                && x.state == pb::ContainerState::ContainerCreated as i32
        })?;
        self.adopted(c, "CreateContainer", &made.id);
        Some(made.id)
    }

    /// Whether container `id`, whose StartContainer got no answer, was started by the
    /// runtime after all (it runs, or ran).
    pub(super) async fn started_after_all(&self, c: &Container, id: &str) -> bool {
        let Ok(st) = self.ctx.cri.runtime.container_status(id).await else {
            return false;
        };
        let started = st.state == pb::ContainerState::ContainerRunning as i32 || st.started_at != 0;
        if started {
            self.adopted(c, "StartContainer", id);
        }
        started
    }

    /// Whether a new spec (or a delete, or a refusal) came for the pod during this
    /// sync; what came is kept for `run`.
    fn new_spec_waits(&mut self) -> bool {
        while let Ok(m) = self.inbox.try_recv() {
            self.early.push(m);
        }
        self.early
            .iter()
            .any(|m| matches!(m, Msg::Update(_) | Msg::Delete | Msg::Refused(_)))
    }

    fn adopted(&self, c: &Container, call: &str, id: &str) {
        log::info!(
            "pod {}: container {}: {call} got no answer in time, but the runtime carried it out: adopting {id}",
            self.name(),
            c.name
        );
    }
}

impl Worker {
    /// The id of the pod's ready sandbox of `attempt`, if the runtime made it after
    /// all (asked after a RunPodSandbox got no answer).
    pub(super) async fn sandbox_made_after_all(&self, attempt: u32) -> Option<String> {
        let filter = pb::PodSandboxFilter {
            state: Some(pb::PodSandboxStateValue {
                state: pb::PodSandboxState::SandboxReady as i32,
            }),
            label_selector: BTreeMap::from([(
                labels::POD_UID.into(),
                self.pod.metadata.uid.clone(),
            )]),
            ..Default::default()
        };
        let found = self.ctx.cri.runtime.list_pod_sandbox(Some(filter)).await;
        let made = found
            .ok()?
            .into_iter()
            .find(|s| s.metadata.as_ref().is_some_and(|m| m.attempt == attempt))?;
        log::info!(
            "pod {}: RunPodSandbox got no answer in time, but the runtime made it: adopting {}",
            self.name(),
            made.id
        );
        Some(made.id)
    }
}
