//! Stopping containers and pods with their grace period, as kubelet: the preStop hook
//! first (exec, httpGet or sleep; bounded by the grace period, see [`super::hooks`]),
//! then StopContainer with what is left of it
//! (the runtime sends SIGTERM, then SIGKILL when it runs out). All containers of a pod
//! stop concurrently, then its sandboxes.

use super::context::Context;
use super::handler::{self, Target};
use super::hooks;
use crate::kuberuntime::observed::{ObservedPod, State};
use crate::model::reason::EventReason;
use crate::model::Pod;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Default grace period when the pod gives none.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// The pod's grace period: the one its deletion asked for when the API server is
/// deleting it (`kubectl delete --grace-period`), else its spec's.
pub fn grace_period(pod: &Pod) -> Duration {
    let deletion = pod
        .terminating()
        .then_some(pod.metadata.deletion_grace_period_seconds)
        .flatten();
    deletion
        .or(pod.spec.termination_grace_period_seconds)
        .map_or(DEFAULT_GRACE, |s| Duration::from_secs(s.max(0) as u64))
}

/// Stops one container: preStop hook of `spec_pod`'s container of that name (if any;
/// httpGet hooks go to `pod_ip`), then StopContainer with the remaining grace. Errors
/// are logged; NotFound is success.
pub async fn stop_container(
    ctx: &Context,
    spec_pod: Option<&Pod>,
    id: &str,
    name: &str,
    grace: Duration,
    pod_ip: &str,
) {
    let start = Instant::now();
    if let Some(pod) = spec_pod {
        ctx.event(pod, name, false, EventReason::Killing, || {
            format!("Stopping container {name}")
        });
    }
    let spec = spec_pod.and_then(|p| p.all_containers().find(|c| c.name == name));
    let hook = spec
        .and_then(|c| c.lifecycle.as_ref())
        .and_then(|l| l.pre_stop.as_ref());
    // kubelet skips the hook when there is no grace at all.
    if let (Some(c), Some(h), false) = (spec, hook, grace.is_zero()) {
        let target = Target {
            container_id: id.to_string(),
            pod_ip: pod_ip.to_string(),
            ports: c.ports.clone(),
        };
        match hooks::run(ctx, h, &target, grace).await {
            Ok(()) => log::debug!("container {name} ({id}): preStop hook done"),
            Err(e) => log::warn!("container {name} ({id}): preStop hook failed: {e}"),
        }
    }
    let left = grace.saturating_sub(start.elapsed());
    match ctx.cri.runtime.stop_container(id, left).await {
        Ok(()) => log::info!("stopped container {name} ({id})"),
        Err(e) if e.is_not_found() => {}
        Err(e) => log::warn!("stopping container {name} ({id}): {e}"),
    }
}

/// Stops every running container of the pod concurrently, then its sandboxes.
pub async fn stop_pod(
    ctx: &Rc<Context>,
    spec_pod: Option<&Pod>,
    observed: &ObservedPod,
    grace: Duration,
) {
    let pod_ip = spec_pod.map_or(String::new(), |p| handler::pod_ip(ctx, p, observed));
    let mut tasks = Vec::new();
    for c in observed
        .containers
        .iter()
        .filter(|c| matches!(c.state, State::Running | State::Created | State::Unknown))
    {
        let (ctx, pod, id, name) = (ctx.clone(), spec_pod.cloned(), c.id.clone(), c.name.clone());
        let ip = pod_ip.clone();
        tasks.push(crate::rt::spawn(async move {
            stop_container(&ctx, pod.as_ref(), &id, &name, grace, &ip).await
        }));
    }
    for t in tasks {
        t.await;
    }
    for s in observed.sandboxes.iter() {
        match ctx.cri.runtime.stop_pod_sandbox(&s.id).await {
            Ok(()) => log::debug!("stopped sandbox {}", s.id),
            Err(e) if e.is_not_found() => {}
            Err(e) => log::warn!("stopping sandbox {}: {e}", s.id),
        }
    }
}

/// Removes every container and sandbox of the pod (after [`stop_pod`]).
pub async fn remove_pod(ctx: &Context, observed: &ObservedPod) {
    for c in &observed.containers {
        if let Err(e) = ctx.cri.runtime.remove_container(&c.id).await {
            if !e.is_not_found() {
                log::warn!("removing container {} ({}): {e}", c.name, c.id);
            }
        }
    }
    for s in &observed.sandboxes {
        if let Err(e) = ctx.cri.runtime.remove_pod_sandbox(&s.id).await {
            if !e.is_not_found() {
                log::warn!("removing sandbox {}: {e}", s.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pod::Source;

    #[test]
    fn a_cluster_deletion_grace_wins_over_the_spec() {
        let mut pod = Pod::default();
        assert_eq!(grace_period(&pod), DEFAULT_GRACE);
        pod.spec.termination_grace_period_seconds = Some(60);
        pod.metadata.deletion_grace_period_seconds = Some(4);
        assert_eq!(grace_period(&pod), Duration::from_secs(60), "not deleting");
        pod.metadata.deletion_timestamp = Some("2026-12-01T10:00:00Z".into());
        assert_eq!(grace_period(&pod), Duration::from_secs(60), "a local pod");
        pod.set_source(Source::Api);
        assert_eq!(grace_period(&pod), Duration::from_secs(4));
        pod.metadata.deletion_grace_period_seconds = Some(-1);
        assert_eq!(grace_period(&pod), Duration::ZERO);
    }
}
