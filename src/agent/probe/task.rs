//! One probe of one container instance as a task: one timer ticking every
//! `periodSeconds` from the container's start plus `initialDelaySeconds`, one attempt
//! per tick bounded by `timeoutSeconds`, and a message to the pod's worker only when
//! the result changes or an attempt succeeds with a warning. Idle cost is exactly the probing the manifest asks for; the task
//! ends when its verdict makes further probing pointless (see [`ProbeState::finished`])
//! or when the worker drops it (the container stopped or was replaced).

use super::state::{Kind, ProbeState};
use crate::agent::context::Context;
use crate::agent::handler::{self, HandlerError, Target};
use crate::model::container::Probe;
use smol::channel::Sender;
use smol::stream::StreamExt;
use smol::{Task, Timer};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A probe's result changed, or an attempt succeeded with a warning.
#[derive(Debug, Clone)]
pub struct Event {
    /// The container's name.
    pub container: String,
    /// The container's runtime id.
    pub container_id: String,
    /// Which probe.
    pub kind: Kind,
    /// It succeeds now.
    pub ok: bool,
    /// The result changed (else only `warning` is news).
    pub changed: bool,
    /// The attempt succeeded with this warning (an httpGet redirect).
    pub warning: Option<String>,
    /// Why the last attempt failed ("" on success).
    pub detail: String,
}

/// What one probe task needs.
pub struct ProbeRun {
    /// Which probe.
    pub kind: Kind,
    /// The probe's spec.
    pub probe: Probe,
    /// The container it acts on.
    pub target: Target,
    /// The container's name.
    pub container: String,
    /// `namespace/name`, for logs.
    pub pod: String,
    /// When the container started: the initial delay counts from here.
    pub started_at: Instant,
}

/// Whole seconds from a manifest field, `default` when not positive.
pub fn seconds(n: i32, default: u64) -> Duration {
    Duration::from_secs(u64::try_from(n).ok().filter(|n| *n > 0).unwrap_or(default))
}

/// Starts the probe; dropping the task stops it.
pub fn spawn(ctx: Rc<Context>, run: ProbeRun, tx: Sender<Event>) -> Task<()> {
    crate::rt::spawn(probe_loop(ctx, run, tx))
}

async fn probe_loop(ctx: Rc<Context>, run: ProbeRun, tx: Sender<Event>) {
    let p = &run.probe;
    let period = seconds(p.period_seconds, 10);
    let timeout = seconds(p.timeout_seconds, 1);
    let delay = Duration::from_secs(u64::try_from(p.initial_delay_seconds).unwrap_or(0));
    let mut state = ProbeState::new(run.kind, p.success_threshold, p.failure_threshold);
    let mut ticks = Timer::interval_at(run.started_at + delay, period);
    log::debug!(
        "pod {}: container {}: {} every {period:?}",
        run.pod,
        run.container,
        run.kind.field()
    );
    while ticks.next().await.is_some() {
        let outcome = attempt(&ctx, p, &run.target, timeout).await;
        if let Err(e) = &outcome {
            log::debug!(
                "pod {}: container {}: {} failed: {e}",
                run.pod,
                run.container,
                run.kind.field()
            );
        }
        let changed = state.record(outcome.is_ok()).is_some();
        let warning = outcome.as_ref().ok().cloned().flatten();
        // kubelet warns on every attempt that has a warning, not only on a change.
        if changed || warning.is_some() {
            let ev = Event {
                container: run.container.clone(),
                container_id: run.target.container_id.clone(),
                kind: run.kind,
                ok: outcome.is_ok(),
                changed,
                warning,
                detail: outcome.err().map(|e| e.to_string()).unwrap_or_default(),
            };
            if tx.send(ev).await.is_err() {
                return;
            }
        }
        if state.finished() {
            return;
        }
    }
}

/// One attempt of the probe's handler: `Ok` with a warning for a success that has one.
async fn attempt(
    ctx: &Context,
    p: &Probe,
    t: &Target,
    timeout: Duration,
) -> Result<Option<String>, HandlerError> {
    if let Some(e) = &p.exec {
        handler::exec(ctx, t, &e.command, timeout)
            .await
            .map(|()| None)
    } else if let Some(h) = &p.http_get {
        handler::http_probe(t, h, timeout).await
    } else if let Some(s) = &p.tcp_socket {
        handler::tcp_socket(t, s, timeout).await.map(|()| None)
    } else {
        // Validation refuses grpc probes and probes without a handler.
        Err(HandlerError::NoProbeHandler)
    }
}
