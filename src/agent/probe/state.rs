//! The result of one probe over time, as kubelet's prober worker keeps it: a result
//! changes only after `successThreshold` consecutive successes or `failureThreshold`
//! consecutive failures. Initial results are kubelet's: liveness starts as success
//! (a container is alive until proven otherwise), readiness as failure (not ready until
//! a probe succeeds), startup as unknown. Pure: the caller feeds attempt outcomes.

/// Which of the three probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Restarts the container when it fails.
    Liveness,
    /// Takes the container out of `ready` when it fails.
    Readiness,
    /// Holds the other probes back until it succeeds once.
    Startup,
}

impl Kind {
    /// The manifest's field name, for logs.
    pub fn field(self) -> &'static str {
        match self {
            Kind::Liveness => "livenessProbe",
            Kind::Readiness => "readinessProbe",
            Kind::Startup => "startupProbe",
        }
    }
}

/// Consecutive-outcome counting for one probe of one container instance.
#[derive(Debug, Clone)]
pub struct ProbeState {
    kind: Kind,
    success_threshold: u32,
    failure_threshold: u32,
    /// The outcome of the last attempt and how many in a row had it.
    last: Option<bool>,
    run: u32,
    /// The current result; `None` while unknown (startup before its verdict).
    result: Option<bool>,
}

impl ProbeState {
    /// A fresh state; thresholds below 1 count as 1.
    pub fn new(kind: Kind, success_threshold: i32, failure_threshold: i32) -> ProbeState {
        let at_least_one = |n: i32| u32::try_from(n).unwrap_or(0).max(1);
        ProbeState {
            kind,
            success_threshold: at_least_one(success_threshold),
            failure_threshold: at_least_one(failure_threshold),
            last: None,
            run: 0,
            result: match kind {
                Kind::Liveness => Some(true),
                Kind::Readiness => Some(false),
                Kind::Startup => None,
            },
        }
    }

    /// The current result (`None`: unknown).
    pub fn result(&self) -> Option<bool> {
        self.result
    }

    /// Records one attempt's outcome; returns the new result when it changed.
    pub fn record(&mut self, ok: bool) -> Option<bool> {
        if self.last == Some(ok) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(ok);
            self.run = 1;
        }
        let needed = if ok {
            self.success_threshold
        } else {
            self.failure_threshold
        };
        if self.run < needed || self.result == Some(ok) {
            return None;
        }
        self.result = Some(ok);
        Some(ok)
    }

    /// Whether probing this container instance is over: a startup probe that has
    /// given its verdict either way, or a liveness probe that failed (the container is
    /// killed; the next instance gets a fresh probe). Readiness probes run to the end.
    pub fn finished(&self) -> bool {
        match self.kind {
            Kind::Startup => self.result.is_some(),
            Kind::Liveness => self.result == Some(false),
            Kind::Readiness => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(s: &mut ProbeState, outcomes: &[bool]) -> Vec<Option<bool>> {
        outcomes.iter().map(|&ok| s.record(ok)).collect()
    }

    #[test]
    fn liveness_fails_after_failure_threshold_consecutive_failures() {
        let mut s = ProbeState::new(Kind::Liveness, 1, 3);
        assert_eq!(s.result(), Some(true));
        // Two failures, a success in between resets the run: no change yet.
        assert_eq!(
            feed(&mut s, &[false, false, true, false, false]),
            [None, None, None, None, None]
        );
        assert!(!s.finished());
        assert_eq!(s.record(false), Some(false));
        assert!(s.finished());
        // Further failures do not report again.
        assert_eq!(s.record(false), None);
    }

    #[test]
    fn readiness_starts_unready_and_flips_both_ways_with_thresholds() {
        let mut s = ProbeState::new(Kind::Readiness, 2, 2);
        assert_eq!(s.result(), Some(false));
        // A failure while already unready is no change.
        assert_eq!(feed(&mut s, &[false, false, false]), [None, None, None]);
        // successThreshold 2: the second success in a row makes it ready.
        assert_eq!(
            feed(&mut s, &[true, false, true, true]),
            [None, None, None, Some(true)]
        );
        assert_eq!(s.record(true), None);
        assert_eq!(feed(&mut s, &[false, false]), [None, Some(false)]);
        assert!(!s.finished(), "readiness keeps probing");
        assert_eq!(feed(&mut s, &[true, true]), [None, Some(true)]);
    }

    #[test]
    fn default_readiness_is_ready_on_first_success() {
        let mut s = ProbeState::new(Kind::Readiness, 1, 3);
        assert_eq!(s.record(true), Some(true));
        assert_eq!(
            feed(&mut s, &[false, false, false]),
            [None, None, Some(false)]
        );
    }

    #[test]
    fn startup_is_unknown_until_success_or_failure_threshold() {
        let mut s = ProbeState::new(Kind::Startup, 1, 3);
        assert_eq!(s.result(), None);
        assert_eq!(feed(&mut s, &[false, false]), [None, None]);
        assert!(!s.finished());
        assert_eq!(s.record(true), Some(true));
        assert!(s.finished());

        let mut s = ProbeState::new(Kind::Startup, 1, 2);
        assert_eq!(feed(&mut s, &[false, false]), [None, Some(false)]);
        assert!(
            s.finished(),
            "a failed startup probe ends: the container is killed"
        );
    }

    #[test]
    fn nonsense_thresholds_count_as_one() {
        let mut s = ProbeState::new(Kind::Liveness, 0, -4);
        assert_eq!(s.record(false), Some(false));
        let mut s = ProbeState::new(Kind::Readiness, i32::MIN, i32::MAX);
        assert_eq!(s.record(true), Some(true));
    }

    #[test]
    fn long_runs_do_not_overflow() {
        let mut s = ProbeState::new(Kind::Readiness, 1, 1);
        s.run = u32::MAX - 1;
        s.last = Some(true);
        s.result = Some(true);
        for _ in 0..4 {
            assert_eq!(s.record(true), None);
        }
    }
}
