//! One probe of one container instance as a task: one timer ticking every
//! `periodSeconds` from the container's start plus `initialDelaySeconds`, one attempt
//! per tick bounded by `timeoutSeconds`, and a message to the pod's worker when the
//! result changes, an attempt fails (kubelet records an `Unhealthy` event for each
//! failed attempt) or an attempt succeeds with a warning. A passing probe's cost is
//! exactly the probing the manifest asks for; the task ends when its verdict makes
//! further probing pointless (see [`ProbeState::finished`]) or when the worker drops
//! it (the container stopped or was replaced).

use super::state::{Kind, ProbeState};
use crate::agent::context::Context;
use crate::agent::handler::{self, HandlerError, Target};
use crate::model::container::Probe;
use smol::channel::Sender;
use smol::stream::StreamExt;
use smol::{Task, Timer};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A probe's result changed, an attempt failed, or one succeeded with a warning.
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
    /// The result changed (else only the failed attempt or `warning` is news).
    pub changed: bool,
    /// The attempt succeeded with this warning (an httpGet redirect).
    pub warning: Option<String>,
    /// Why the last attempt failed ("" on success), for the log.
    pub detail: String,
    /// The failed attempt's output as kubelet words it in its `Unhealthy` event.
    pub output: String,
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
        if let Some(ev) = report(&run, &mut state, outcome) {
            if tx.send(ev).await.is_err() {
                return;
            }
        }
        if state.finished() {
            return;
        }
    }
}

/// Counts one attempt's outcome; what the worker is to hear of it: every failed attempt
/// (its `Unhealthy` event), every warning (kubelet warns at each such attempt, not only on
/// a change) and every change of the result; nothing of a plain success.
fn report(
    run: &ProbeRun,
    state: &mut ProbeState,
    outcome: Result<Option<String>, HandlerError>,
) -> Option<Event> {
    let ok = outcome.is_ok();
    let changed = state.record(ok).is_some();
    let (warning, detail, output) = match outcome {
        Ok(None) if !changed => return None,
        Ok(warning) => (warning, String::new(), String::new()),
        Err(e) => (None, e.to_string(), e.probe_output()),
    };
    Some(Event {
        container: run.container.clone(),
        container_id: run.target.container_id.clone(),
        kind: run.kind,
        ok,
        changed,
        warning,
        detail,
        output,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::handler::Target;

    fn run(kind: Kind) -> ProbeRun {
        ProbeRun {
            kind,
            probe: Probe::default(),
            target: Target {
                container_id: "c1".into(),
                pod_ip: String::new(),
                ports: Vec::new(),
            },
            container: "app".into(),
            pod: "ns/p".into(),
            started_at: Instant::now(),
        }
    }

    fn failed(output: &str) -> Result<Option<String>, HandlerError> {
        Err(HandlerError::ExitStatus {
            code: 1,
            output: output.into(),
        })
    }

    #[test]
    fn every_failed_attempt_is_reported_but_only_the_first_change_is_a_change() {
        let r = run(Kind::Readiness);
        let mut s = ProbeState::new(Kind::Readiness, 1, 3);
        // Ready first; then it fails every time: each attempt is news for its event.
        assert!(report(&r, &mut s, Ok(None)).is_some_and(|e| e.changed && e.ok));
        let evs: Vec<Event> = (0..5)
            .filter_map(|_| report(&r, &mut s, failed("db down")))
            .collect();
        assert_eq!(evs.len(), 5);
        assert!(evs.iter().all(|e| !e.ok && e.output == "db down"));
        assert_eq!(evs[0].detail, "exit status 1: db down");
        let changes: Vec<bool> = evs.iter().map(|e| e.changed).collect();
        // failureThreshold 3: the result turns on the third failure, once.
        assert_eq!(changes, [false, false, true, false, false]);
        assert_eq!(s.result(), Some(false));
    }

    #[test]
    fn a_plain_success_is_no_news_a_warning_always_is() {
        let r = run(Kind::Liveness);
        let mut s = ProbeState::new(Kind::Liveness, 1, 3);
        // Liveness starts as success: passing attempts tell the worker nothing.
        assert!(report(&r, &mut s, Ok(None)).is_none());
        let warned = |s: &mut ProbeState| report(&r, s, Ok(Some("redirect".into())));
        for _ in 0..3 {
            let e = warned(&mut s).expect("a warning at every attempt");
            assert!(e.ok && !e.changed);
            assert_eq!(e.warning.as_deref(), Some("redirect"));
        }
        // A startup probe's failures before its verdict are each reported too.
        let r = run(Kind::Startup);
        let mut s = ProbeState::new(Kind::Startup, 1, 30);
        let e = report(&r, &mut s, failed("")).expect("reported");
        assert!(!e.ok && !e.changed && e.output.is_empty());
    }
}
