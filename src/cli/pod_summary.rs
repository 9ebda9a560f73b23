//! The READY, STATUS and RESTARTS columns of `get pods`, computed from a pod and its
//! status with kubectl's rules, so an operator reads the same words as on a cluster
//! (`CrashLoopBackOff`, `Init:0/1`, `Completed`, `ExitCode:1`, ...).

use crate::model::status::{ContainerStatus, PodConditionType};
use crate::model::{Pod, PodStatus, Reason};
use std::time::SystemTime;

/// The summary columns of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// `ready/total` app containers.
    pub ready: String,
    /// kubectl's STATUS word.
    pub status: String,
    /// Restart count, with `(AGE ago)` of the last restart when known.
    pub restarts: String,
}

/// Summarizes `pod` with `status` (`None`: the agent has not reported yet: Pending).
pub fn summarize(pod: &Pod, status: Option<&PodStatus>, now: SystemTime) -> Summary {
    let total = pod.spec.containers.len();
    let Some(st) = status else {
        return Summary {
            ready: format!("0/{total}"),
            status: "Pending".into(),
            restarts: "0".into(),
        };
    };
    let mut reason = if !st.reason.is_empty() {
        st.reason.clone()
    } else {
        st.phase
            .map(|p| format!("{p:?}"))
            .unwrap_or_else(|| "Pending".into())
    };
    let mut restarts: i64 = 0;
    let mut last_restart: Option<SystemTime> = None;
    let mut ready = 0;
    let init_total = pod.spec.init_containers.len();
    let mut initializing = false;
    for (i, c) in st.init_container_statuses.iter().enumerate() {
        restarts += i64::from(c.restart_count);
        note_restart(c, &mut last_restart);
        match init_reason(c, i, init_total) {
            InitState::Done => continue,
            InitState::Blocking(r) => {
                reason = r;
                initializing = true;
            }
        }
        break;
    }
    if !initializing {
        restarts = 0;
        last_restart = None;
        let mut has_running = false;
        for c in st.container_statuses.iter().rev() {
            restarts += i64::from(c.restart_count);
            note_restart(c, &mut last_restart);
            let (waiting, terminated) = (&c.state.waiting, &c.state.terminated);
            if let Some(w) = waiting.as_ref().filter(|w| !w.reason.is_empty()) {
                reason = w.reason.clone();
            } else if let Some(t) = terminated {
                reason = if !t.reason.is_empty() {
                    t.reason.clone()
                } else if t.signal != 0 {
                    format!("Signal:{}", t.signal)
                } else {
                    format!("ExitCode:{}", t.exit_code)
                };
            } else if c.ready && c.state.running.is_some() {
                has_running = true;
                ready += 1;
            }
        }
        if Reason::Completed.is(&reason) && has_running {
            let pod_ready = st.conditions.iter().any(|c| {
                c.type_ == PodConditionType::Ready
                    && c.status == crate::model::status::ConditionStatus::True
            });
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }
    let restarts = match last_restart {
        Some(t) if restarts > 0 => {
            let ago = now
                .duration_since(t)
                .map(super::output::human_duration)
                .unwrap_or_else(|_| "0s".into());
            format!("{restarts} ({ago} ago)")
        }
        _ => restarts.to_string(),
    };
    Summary {
        ready: format!("{ready}/{total}"),
        status: reason,
        restarts,
    }
}

/// READY and RESTARTS from a status alone, for a pod whose spec cannot be shown
/// (deleted, or its desired file damaged): the containers the status names.
pub fn status_columns(status: Option<&PodStatus>) -> [String; 2] {
    let c = status.map_or(&[][..], |s| &s.container_statuses[..]);
    let ready = c.iter().filter(|s| s.ready).count();
    let restarts: i64 = c.iter().map(|s| i64::from(s.restart_count)).sum();
    [format!("{ready}/{}", c.len()), restarts.to_string()]
}

enum InitState {
    /// Finished successfully: look at the next init container.
    Done,
    /// Still initializing (or failed): the STATUS word.
    Blocking(String),
}

/// kubectl's reading of init container `i` of `total`.
fn init_reason(c: &ContainerStatus, i: usize, total: usize) -> InitState {
    if let Some(t) = &c.state.terminated {
        if t.exit_code == 0 {
            return InitState::Done;
        }
        return InitState::Blocking(if !t.reason.is_empty() {
            format!("Init:{}", t.reason)
        } else if t.signal != 0 {
            format!("Init:Signal:{}", t.signal)
        } else {
            format!("Init:ExitCode:{}", t.exit_code)
        });
    }
    match &c.state.waiting {
        Some(w) if !w.reason.is_empty() && !Reason::PodInitializing.is(&w.reason) => {
            InitState::Blocking(format!("Init:{}", w.reason))
        }
        _ => InitState::Blocking(format!("Init:{i}/{total}")),
    }
}

/// Keeps the latest time a container of the pod last terminated (its last restart).
fn note_restart(c: &ContainerStatus, latest: &mut Option<SystemTime>) {
    let finished = c
        .last_state
        .terminated
        .as_ref()
        .and_then(|t| t.finished_at.as_deref())
        .and_then(|s| crate::model::time::parse_rfc3339(s).ok());
    if let Some(f) = finished {
        if latest.is_none_or(|l| f > l) {
            *latest = Some(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse_pod;

    fn pod(init: usize, containers: usize) -> Pod {
        let c = |n: usize, p: &str| {
            (0..n)
                .map(|i| format!(r#"{{"name":"{p}{i}","image":"busybox"}}"#))
                .collect::<Vec<_>>()
                .join(",")
        };
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p"}},
                "spec":{{"initContainers":[{}],"containers":[{}]}}}}"#,
            c(init, "i"),
            c(containers, "c")
        );
        parse_pod("test", json.as_bytes()).unwrap()
    }

    fn status(json: &str) -> PodStatus {
        serde_json::from_str(json).unwrap()
    }

    fn now() -> SystemTime {
        crate::model::time::parse_rfc3339("2026-11-29T12:00:00Z").unwrap()
    }

    fn sum(p: &Pod, s: &str) -> (String, String, String) {
        let s = summarize(p, Some(&status(s)), now());
        (s.ready, s.status, s.restarts)
    }

    #[test]
    fn no_status_is_pending() {
        let s = summarize(&pod(0, 2), None, now());
        assert_eq!(
            (s.ready.as_str(), s.status.as_str(), s.restarts.as_str()),
            ("0/2", "Pending", "0")
        );
    }

    #[test]
    fn running_and_ready() {
        let p = pod(0, 2);
        let s = r#"{"phase":"Running","containerStatuses":[
            {"name":"c0","ready":true,"restartCount":0,"state":{"running":{}}},
            {"name":"c1","ready":false,"restartCount":0,"state":{"running":{}}}]}"#;
        assert_eq!(sum(&p, s), ("1/2".into(), "Running".into(), "0".into()));
    }

    #[test]
    fn waiting_reason_wins_with_restart_age() {
        let p = pod(0, 1);
        let s = r#"{"phase":"Running","containerStatuses":[
            {"name":"c0","ready":false,"restartCount":4,
             "state":{"waiting":{"reason":"CrashLoopBackOff"}},
             "lastState":{"terminated":{"exitCode":1,"finishedAt":"2026-11-29T11:57:00Z"}}}]}"#;
        assert_eq!(
            sum(&p, s),
            ("0/1".into(), "CrashLoopBackOff".into(), "4 (3m ago)".into())
        );
    }

    #[test]
    fn terminated_without_reason_shows_exit_code_or_signal() {
        let p = pod(0, 1);
        let s = r#"{"phase":"Failed","containerStatuses":[{"name":"c0","restartCount":0,
            "state":{"terminated":{"exitCode":137,"signal":9}}}]}"#;
        assert_eq!(sum(&p, s).1, "Signal:9");
        let s = r#"{"phase":"Failed","containerStatuses":[{"name":"c0","restartCount":0,
            "state":{"terminated":{"exitCode":3}}}]}"#;
        assert_eq!(sum(&p, s).1, "ExitCode:3");
    }

    #[test]
    fn init_containers_block_with_progress_or_reason() {
        let p = pod(2, 1);
        let s = r#"{"phase":"Pending","initContainerStatuses":[
            {"name":"i0","restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed"}}},
            {"name":"i1","restartCount":1,"state":{"running":{}}}],
            "containerStatuses":[{"name":"c0","restartCount":0,"state":{"waiting":{"reason":"PodInitializing"}}}]}"#;
        assert_eq!(sum(&p, s), ("0/1".into(), "Init:1/2".into(), "1".into()));
        let s = r#"{"phase":"Pending","initContainerStatuses":[
            {"name":"i0","restartCount":2,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}"#;
        assert_eq!(sum(&p, s).1, "Init:CrashLoopBackOff");
        let s = r#"{"phase":"Failed","initContainerStatuses":[
            {"name":"i0","restartCount":0,"state":{"terminated":{"exitCode":2}}}]}"#;
        assert_eq!(sum(&p, s).1, "Init:ExitCode:2");
    }

    #[test]
    fn completed_with_a_running_container_reads_running_or_not_ready() {
        let p = pod(0, 2);
        let base = r#""containerStatuses":[
            {"name":"c0","ready":true,"restartCount":0,"state":{"running":{}}},
            {"name":"c1","restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]"#;
        let ready = format!(
            r#"{{"phase":"Running","conditions":[{{"type":"Ready","status":"True"}}],{base}}}"#
        );
        assert_eq!(sum(&p, &ready).1, "Running");
        let not_ready = format!(r#"{{"phase":"Running",{base}}}"#);
        assert_eq!(sum(&p, &not_ready).1, "NotReady");
    }

    #[test]
    fn pod_reason_overrides_phase() {
        let p = pod(0, 1);
        assert_eq!(
            sum(&p, r#"{"phase":"Failed","reason":"Evicted"}"#).1,
            "Evicted"
        );
        assert_eq!(sum(&p, r#"{"phase":"Succeeded"}"#).1, "Succeeded");
    }
}
