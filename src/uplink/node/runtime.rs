//! Whether the container runtime is fit to run pods, by kubelet v1.20's rules
//! (`updateRuntimeUp` and `runtimeState`): CRI Status is asked periodically; a
//! RuntimeReady or NetworkReady condition that is false (or missing) becomes an error
//! with the runtime's own reason and message; a runtime that stops answering is "down"
//! once its last good answer is older than 30 s (kubelet's threshold), so one slow call
//! does not flip the node to NotReady. Until the first answer, the status check "may not
//! have completed yet".

use crate::cri::pb;
use std::time::{Duration, Instant};

/// kubelet's `maxWaitForContainerRuntime`: how stale the last good Status may be.
pub const DOWN_AFTER: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct RuntimeHealth {
    /// The last Status with RuntimeReady true.
    last_sync: Option<Instant>,
    runtime_error: Option<String>,
    network_error: Option<String>,
}

impl Default for RuntimeHealth {
    fn default() -> Self {
        RuntimeHealth {
            last_sync: None,
            runtime_error: None,
            // kubelet starts with the network state unknown.
            network_error: Some("network state unknown".into()),
        }
    }
}

impl RuntimeHealth {
    /// Takes in one answer of CRI Status (`None`: the runtime did not answer; then
    /// nothing is learned and the last good answer only ages).
    pub fn observe(&mut self, status: Option<&pb::RuntimeStatus>, now: Instant) {
        let Some(status) = status else {
            return;
        };
        let find = |kind: &str| status.conditions.iter().find(|c| c.r#type == kind);
        let network = find("NetworkReady");
        self.network_error = match network {
            Some(c) if c.status => None,
            _ => Some(format!("runtime network not ready: {}", describe(network))),
        };
        let runtime = find("RuntimeReady");
        if runtime.is_some_and(|c| c.status) {
            self.runtime_error = None;
            self.last_sync = Some(now);
        } else {
            self.runtime_error = Some(format!(
                "Container runtime not ready: {}",
                describe(runtime)
            ));
        }
    }

    /// kubelet's runtime and network errors at `now`; empty when the runtime is ready.
    pub fn errors(&self, now: Instant) -> Vec<String> {
        let mut errs = Vec::new();
        match self.last_sync {
            None => errs.push("container runtime status check may not have completed yet".into()),
            Some(t) if now.saturating_duration_since(t) >= DOWN_AFTER => {
                errs.push("container runtime is down".into())
            }
            Some(_) => {}
        }
        errs.extend(self.runtime_error.clone());
        errs.extend(self.network_error.clone());
        errs
    }
}

/// A runtime condition as kubelet prints one (`<nil>` when the runtime sent none).
fn describe(c: Option<&pb::RuntimeCondition>) -> String {
    match c {
        Some(c) => format!(
            "{}={} reason:{} message:{}",
            c.r#type, c.status, c.reason, c.message
        ),
        None => "<nil>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(kind: &str, ok: bool, reason: &str, message: &str) -> pb::RuntimeCondition {
        pb::RuntimeCondition {
            r#type: kind.into(),
            status: ok,
            reason: reason.into(),
            message: message.into(),
        }
    }

    fn status(runtime: bool, network: bool) -> pb::RuntimeStatus {
        pb::RuntimeStatus {
            conditions: vec![
                cond("RuntimeReady", runtime, "", ""),
                cond(
                    "NetworkReady",
                    network,
                    if network { "" } else { "NetworkPluginNotReady" },
                    if network {
                        ""
                    } else {
                        "Network plugin returns error: cni plugin not initialized"
                    },
                ),
            ],
        }
    }

    #[test]
    fn kubelets_rules() {
        let t0 = Instant::now();
        let mut h = RuntimeHealth::default();
        assert_eq!(
            h.errors(t0),
            [
                "container runtime status check may not have completed yet",
                "network state unknown"
            ]
        );
        h.observe(Some(&status(true, true)), t0);
        assert!(h.errors(t0).is_empty());
        // No answers: still ready for 30 s, then down.
        h.observe(None, t0 + Duration::from_secs(20));
        assert!(h.errors(t0 + Duration::from_secs(29)).is_empty());
        assert_eq!(
            h.errors(t0 + Duration::from_secs(30)),
            ["container runtime is down"]
        );
        // Answers again, network not ready.
        let t1 = t0 + Duration::from_secs(40);
        h.observe(Some(&status(true, false)), t1);
        assert_eq!(
            h.errors(t1),
            [
                "runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady \
              message:Network plugin returns error: cni plugin not initialized"
            ]
        );
        // The runtime says it is not ready: the last good answer ages meanwhile.
        h.observe(Some(&status(false, true)), t1 + Duration::from_secs(1));
        assert_eq!(
            h.errors(t1 + Duration::from_secs(1)),
            ["Container runtime not ready: RuntimeReady=false reason: message:"]
        );
        assert_eq!(
            h.errors(t1 + Duration::from_secs(31)),
            [
                "container runtime is down",
                "Container runtime not ready: RuntimeReady=false reason: message:"
            ]
        );
        // A Status without conditions.
        h.observe(Some(&pb::RuntimeStatus::default()), t1);
        assert_eq!(
            h.errors(t1),
            [
                "Container runtime not ready: <nil>",
                "runtime network not ready: <nil>"
            ]
        );
    }
}
