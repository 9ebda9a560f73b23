//! Which pod goes when memory runs short, with kubelet's ranking for memory pressure:
//! pods whose usage exceeds their request first, then lower priority, then the larger
//! usage above the request. So best-effort pods (request 0) go before burstable ones
//! over their requests, and a pod within its request goes last. Critical pods
//! (`system-node-critical`, `system-cluster-critical`, the firmware's own) are never
//! chosen. One pod per pass, as kubelet evicts one per interval. A hard threshold
//! stops the pod at once; a soft one gives it its own grace period, at most
//! `evictionMaxPodGracePeriod`.

use crate::kuberuntime::resources::bytes;
use crate::model::Pod;
use std::time::Duration;

/// kubelet's lowest critical priority (`system-cluster-critical`).
const CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// Whether the pod must never be evicted.
pub fn is_critical(pod: &Pod) -> bool {
    matches!(
        pod.spec.priority_class_name.as_str(),
        "system-node-critical" | "system-cluster-critical"
    ) || pod.spec.priority.is_some_and(|p| p >= CRITICAL_PRIORITY)
}

/// The pod's memory request: the sum over app containers, or the largest init
/// container's (a request defaults to the limit).
pub fn memory_request(pod: &Pod) -> i64 {
    let req = |c| bytes(c, "requests", "memory").or_else(|| bytes(c, "limits", "memory"));
    let apps = pod
        .spec
        .containers
        .iter()
        .filter_map(req)
        .fold(0i64, i64::saturating_add);
    pod.spec
        .init_containers
        .iter()
        .filter_map(req)
        .fold(apps, i64::max)
}

/// A pod that may be evicted, with its memory working set.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// Its cgroup's working set in bytes.
    pub usage: i64,
}

/// The pod to evict first under memory pressure, if any may go.
pub fn choose<'a>(candidates: &[Candidate<'a>]) -> Option<Candidate<'a>> {
    candidates
        .iter()
        .filter(|c| !is_critical(c.pod))
        .min_by_key(|c| {
            let over = c.usage - memory_request(c.pod);
            (
                over <= 0,
                c.pod.spec.priority.unwrap_or(0),
                std::cmp::Reverse(over),
            )
        })
        .copied()
}

/// How long an evicted pod is given to stop: nothing on a hard threshold (kubelet's
/// override 0); on a soft one the pod's own grace period, at most `max_secs`
/// (`evictionMaxPodGracePeriod`; kubelet before 1.27 gave the maximum even to a pod
/// that asked for less, later ones the smaller of the two, as here).
pub fn grace_period(pod_grace: Duration, soft: bool, max_secs: i64) -> Duration {
    if !soft {
        return Duration::ZERO;
    }
    pod_grace.min(Duration::from_secs(max_secs.max(0) as u64))
}

/// kubelet's eviction message for `c` when `available` bytes are left of `threshold`.
pub fn message(c: &Candidate, available: i64, threshold: i64) -> String {
    format!(
        "The node was low on resource: memory. Threshold quantity: {}Ki, available: {}Ki. \
         Pod was using {}Ki, which exceeds its request of {}Ki.",
        threshold / 1024,
        available / 1024,
        c.usage / 1024,
        memory_request(c.pod) / 1024
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Container, Quantity};

    fn pod(name: &str, request: Option<&str>) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = name.into();
        let mut c = Container::default();
        if let Some(r) = request {
            c.resources
                .requests
                .insert("memory".into(), Quantity::parse(r).unwrap());
        }
        p.spec.containers = vec![c];
        p
    }

    #[test]
    fn best_effort_then_burstable_over_request_never_critical() {
        let be = pod("be", None);
        let bur = pod("bur", Some("10Mi"));
        let within = pod("within", Some("100Mi"));
        let mut crit = pod("crit", None);
        crit.spec.priority_class_name = "system-node-critical".into();
        let c = |pod, usage| Candidate { pod, usage };
        let all = [
            c(&within, 50 << 20),
            c(&bur, 12 << 20),
            c(&crit, 900 << 20),
            c(&be, 4 << 20),
        ];
        assert_eq!(choose(&all).unwrap().pod.metadata.name, "be");
        assert_eq!(choose(&all[..3]).unwrap().pod.metadata.name, "bur");
        assert_eq!(choose(&all[..1]).unwrap().pod.metadata.name, "within");
        assert!(choose(&all[2..3]).is_none());
        let mut low = pod("low", Some("10Mi"));
        low.spec.priority = Some(-5);
        let both = [c(&be, 4 << 20), c(&low, 11 << 20)];
        assert_eq!(choose(&both).unwrap().pod.metadata.name, "low");
        let m = message(&all[1], 1 << 20, 100 << 20);
        assert!(
            m.starts_with("The node was low on resource: memory."),
            "{m}"
        );
        let thirty = Duration::from_secs(30);
        assert_eq!(grace_period(thirty, false, 60), Duration::ZERO);
        assert_eq!(grace_period(thirty, true, 60), thirty);
        assert_eq!(grace_period(thirty, true, 10), Duration::from_secs(10));
        assert_eq!(grace_period(thirty, true, 0), Duration::ZERO);
    }
}
