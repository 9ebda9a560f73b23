//! `activeDeadlineSeconds`, as kubelet's active-deadline handler: once the pod has been
//! active longer than that since `status.startTime`, it fails (phase Failed, reason
//! `DeadlineExceeded`) and its containers are killed and never restarted. The worker
//! checks on every sync and sets its own wake-up timer to the deadline, so each pod has
//! one timer and nothing polls. The start time is in the pod's status file, so the
//! deadline survives an agent restart.

use crate::model::time::parse_rfc3339;
use crate::model::{Pod, Reason};
use std::time::{Duration, SystemTime};

/// The pod status reason of a pod past its deadline.
pub const REASON: Reason = Reason::DeadlineExceeded;
/// Its message (kubelet's words).
pub const MESSAGE: &str = "Pod was active on the node longer than the specified deadline";

/// Where a pod stands with its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// No `activeDeadlineSeconds`, or no start time yet.
    None,
    /// Not reached; it is at this wall-clock time.
    At(SystemTime),
    /// Reached: the pod has failed.
    Exceeded,
}

/// The pod's deadline given its `status.startTime` (RFC 3339) and the wall clock `now`.
/// A start time that does not parse counts as none (the agent writes it itself).
pub fn check(pod: &Pod, start_time: Option<&str>, now: SystemTime) -> Deadline {
    let (Some(secs), Some(start)) = (pod.spec.active_deadline_seconds, start_time) else {
        return Deadline::None;
    };
    let Ok(start) = parse_rfc3339(start) else {
        return Deadline::None;
    };
    let at = start + Duration::from_secs(u64::try_from(secs).unwrap_or(0));
    if now >= at {
        Deadline::Exceeded
    } else {
        Deadline::At(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn deadline_counts_from_the_start_time() {
        let mut pod = Pod::default();
        let start = "2026-01-01T00:00:00Z";
        let t0 = parse_rfc3339(start).unwrap();
        assert_eq!(check(&pod, Some(start), t0), Deadline::None);
        pod.spec.active_deadline_seconds = Some(30);
        assert_eq!(check(&pod, None, t0), Deadline::None, "not started");
        assert_eq!(check(&pod, Some("garbage"), t0), Deadline::None);
        let at = t0 + Duration::from_secs(30);
        assert_eq!(check(&pod, Some(start), t0), Deadline::At(at));
        assert_eq!(
            check(&pod, Some(start), at - Duration::from_millis(1)),
            Deadline::At(at)
        );
        assert_eq!(check(&pod, Some(start), at), Deadline::Exceeded);
        assert_eq!(
            check(&pod, Some(start), UNIX_EPOCH + Duration::from_secs(1 << 40)),
            Deadline::Exceeded
        );
    }
}
