//! The worker's side of `activeDeadlineSeconds` ([`crate::agent::deadline`] decides):
//! on each sync, whether the pod is past it, and when not yet, a wake-up at the
//! deadline, so the pod fails on time with no timer but the worker's own.

use super::Worker;
use crate::agent::deadline::{self, Deadline};
use crate::model::status::PodPhase;
use crate::model::time::now_rfc3339;
use std::time::{Instant, SystemTime};

impl Worker {
    /// Whether the pod is past its activeDeadlineSeconds; when not yet, the worker's
    /// timer is set to wake it at the deadline.
    pub(super) fn check_deadline(&mut self) -> bool {
        // A pod that has succeeded stays Succeeded (kubelet refuses terminal-phase changes).
        let succeeded = self
            .last_status
            .as_ref()
            .is_some_and(|s| s.phase == Some(PodPhase::Succeeded));
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
}
