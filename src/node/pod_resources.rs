//! A pod's own cgroup limits, as kubelet's `ResourceConfigForPod` computes them: the
//! pod's requests and limits are the sum over its app containers, or the largest init
//! container's when that is more (init containers run one at a time, before the app);
//! a limit is set only when every container declares it.

use super::hierarchy::Limits;
use crate::kuberuntime::resources::{
    bytes, cpu_quota, cpu_shares, milli, request_milli, QosClass, CPU_PERIOD_US,
};
use crate::model::{Container, Pod};

/// `max(sum over app containers, max over init containers)` of `f`, saturating: what a
/// pod needs of a resource, init containers running one at a time before the others.
pub fn pod_total(pod: &Pod, f: impl Fn(&Container) -> i64) -> i64 {
    let apps = pod
        .spec
        .containers
        .iter()
        .map(&f)
        .fold(0i64, i64::saturating_add);
    pod.spec.init_containers.iter().map(&f).fold(apps, i64::max)
}

/// Whether every container (init and app) has a non-zero limit of `resource`.
fn all_limit(pod: &Pod, resource: &str) -> bool {
    pod.all_containers().all(|c| {
        c.resources
            .limits
            .get(resource)
            .is_some_and(|q| !q.is_zero())
    })
}

/// The cgroup limits of a pod of class `qos`.
pub fn pod_limits(pod: &Pod, qos: QosClass) -> Limits {
    if qos == QosClass::BestEffort {
        return Limits {
            cpu_shares: Some(2),
            ..Limits::default()
        };
    }
    let shares = cpu_shares(pod_total(pod, |c| request_milli(c, "cpu").unwrap_or(0)));
    let cpu_limit = pod_total(pod, |c| milli(c, "limits", "cpu").unwrap_or(0));
    let mem_limit = pod_total(pod, |c| bytes(c, "limits", "memory").unwrap_or(0));
    let quota = cpu_quota(cpu_limit);
    Limits {
        cpu_shares: Some(shares),
        cpu_quota: (all_limit(pod, "cpu") && quota > 0).then_some((quota, CPU_PERIOD_US)),
        memory: all_limit(pod, "memory").then_some(mem_limit),
        pids: None,
    }
}

/// The pod's CPU request in millis (the burstable tier's shares are their sum).
pub fn cpu_request_milli(pod: &Pod) -> i64 {
    pod_total(pod, |c| request_milli(c, "cpu").unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kuberuntime::resources::qos_class;
    use crate::model::Quantity;

    fn c(req: &[(&str, &str)], lim: &[(&str, &str)]) -> Container {
        let mut c = Container::default();
        for (k, v) in req {
            c.resources
                .requests
                .insert(k.to_string(), Quantity::parse(v).unwrap());
        }
        for (k, v) in lim {
            c.resources
                .limits
                .insert(k.to_string(), Quantity::parse(v).unwrap());
        }
        c
    }

    fn limits(init: Vec<Container>, apps: Vec<Container>) -> Limits {
        let mut p = Pod::default();
        p.spec.init_containers = init;
        p.spec.containers = apps;
        pod_limits(&p, qos_class(&p))
    }

    #[test]
    fn guaranteed_sums_apps_and_takes_a_bigger_init() {
        let g = |cpu, mem| c(&[], &[("cpu", cpu), ("memory", mem)]);
        let l = limits(vec![], vec![g("250m", "32Mi"), g("250m", "16Mi")]);
        assert_eq!(l.cpu_shares, Some(512));
        assert_eq!(l.cpu_quota, Some((50_000, 100_000)));
        assert_eq!(l.memory, Some(48 << 20));
        let l = limits(vec![g("1", "16Mi")], vec![g("250m", "32Mi")]);
        assert_eq!(l.cpu_shares, Some(1024));
        assert_eq!(l.cpu_quota, Some((100_000, 100_000)));
        assert_eq!(l.memory, Some(32 << 20));
    }

    #[test]
    fn burstable_sets_a_limit_only_when_every_container_has_it() {
        let l = limits(
            vec![],
            vec![
                c(&[("cpu", "100m")], &[("memory", "64Mi")]),
                c(&[("memory", "8Mi")], &[]),
            ],
        );
        assert_eq!(l.cpu_shares, Some(102));
        assert_eq!((l.cpu_quota, l.memory), (None, None));
        let l = limits(vec![], vec![c(&[], &[("memory", "64Mi")])]);
        assert_eq!((l.cpu_shares, l.memory), (Some(2), Some(64 << 20)));
    }

    #[test]
    fn best_effort_gets_the_least_shares() {
        let l = limits(vec![], vec![c(&[], &[])]);
        assert_eq!(
            l,
            Limits {
                cpu_shares: Some(2),
                ..Limits::default()
            }
        );
    }
}
