//! Container resources to Linux cgroup settings, and the pod's QoS class with the
//! oom_score_adj it implies, with kubelet's formulas.

use crate::cri::pb;
use crate::model::{Container, Pod};

/// CFS period kubelet uses, in microseconds.
pub const CPU_PERIOD_US: i64 = 100_000;
const MIN_SHARES: i64 = 2;
const MAX_SHARES: i64 = 262_144;
const SHARES_PER_CPU: i64 = 1024;
/// kubelet's smallest quota: 1 ms per period.
const MIN_QUOTA_US: i64 = 1000;
/// The kernel's largest CFS quota (`max_cfs_runtime`, 2^44-1 us); a larger one is EINVAL.
const MAX_QUOTA_US: i64 = (1 << 44) - 1;

/// The pod's quality-of-service class (`status.qosClass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    /// Every container has equal limits and requests for CPU and memory.
    Guaranteed,
    /// Some container has a request or a limit.
    Burstable,
    /// No container has any request or limit.
    BestEffort,
}

impl QosClass {
    /// The class as written in the status.
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }
}

pub(crate) fn milli(c: &Container, which: &str, name: &str) -> Option<i64> {
    let map = if which == "limits" {
        &c.resources.limits
    } else {
        &c.resources.requests
    };
    map.get(name).map(|q| q.milli_value())
}

pub(crate) fn bytes(c: &Container, which: &str, name: &str) -> Option<i64> {
    let map = if which == "limits" {
        &c.resources.limits
    } else {
        &c.resources.requests
    };
    map.get(name).map(|q| q.value())
}

/// A request defaults to the limit when only the limit is given (API server defaulting).
pub(crate) fn request_milli(c: &Container, name: &str) -> Option<i64> {
    milli(c, "requests", name).or_else(|| milli(c, "limits", name))
}

/// The resources the QoS class is computed from (upstream's `isSupportedQoSComputeResource`):
/// an ephemeral-storage or extended-resource request makes no pod Burstable.
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// Upstream's QoS rules (`ComputePodQOS`), which the API server also applies and from
/// v1.32 holds `status.qosClass` to: only cpu and memory quantities above zero count;
/// BestEffort when there are none; Guaranteed when every container (init ones too)
/// has both a cpu and a memory limit and the summed requests equal the summed limits
/// (a request defaults to its limit, as the API server's defaulting does); Burstable
/// otherwise. Pod-level `spec.resources`, when set, replaces the containers'. The
/// cgroup tier, the oom_score_adj and the status all take the class from here.
pub fn qos_class(pod: &Pod) -> QosClass {
    let mut sums = QosSums::default();
    match pod.spec.resources.as_ref().filter(|r| pod_level_set(r)) {
        Some(r) => sums.add(r),
        None => pod.all_containers().for_each(|c| sums.add(&c.resources)),
    }
    if sums.none() {
        QosClass::BestEffort
    } else if sums.every_limit_set && sums.requests == sums.limits {
        QosClass::Guaranteed
    } else {
        QosClass::Burstable
    }
}

/// Upstream's `IsPodLevelResourcesSet`: pod-level resources count only when they name a
/// resource that may be set for the pod (cpu, memory, hugepages).
fn pod_level_set(r: &crate::model::container::ResourceRequirements) -> bool {
    r.requests
        .keys()
        .chain(r.limits.keys())
        .any(|k| QOS_RESOURCES.contains(&k.as_str()) || k.starts_with("hugepages-"))
}

/// The non-zero cpu and memory quantities of a pod, summed by resource in the order of
/// [`QOS_RESOURCES`] (in nanos, so cpu and bytes alike are exact; 0 is none).
struct QosSums {
    requests: [i128; 2],
    limits: [i128; 2],
    /// Every resource set so far had both a cpu and a memory limit above zero.
    every_limit_set: bool,
}

impl Default for QosSums {
    fn default() -> Self {
        QosSums {
            requests: [0; 2],
            limits: [0; 2],
            every_limit_set: true,
        }
    }
}

impl QosSums {
    fn add(&mut self, r: &crate::model::container::ResourceRequirements) {
        for (i, name) in QOS_RESOURCES.iter().enumerate() {
            let positive = |q: &crate::model::Quantity| Some(q.nanos()).filter(|&n| n > 0);
            let limit = r.limits.get(*name).and_then(positive);
            // The API server defaults an absent request to the limit.
            let request = match r.requests.get(*name) {
                Some(q) => positive(q),
                None => limit,
            };
            self.requests[i] = self.requests[i].saturating_add(request.unwrap_or(0));
            self.limits[i] = self.limits[i].saturating_add(limit.unwrap_or(0));
            self.every_limit_set &= limit.is_some();
        }
    }

    fn none(&self) -> bool {
        self.requests == [0; 2] && self.limits == [0; 2]
    }
}

/// kubelet's oom_score_adj: Guaranteed -997, BestEffort 1000, Burstable scaled by the
/// share of the node's memory the container requests, kept within [2, 999].
pub fn oom_score_adj(qos: QosClass, c: &Container, mem_capacity: i64) -> i64 {
    match qos {
        QosClass::Guaranteed => -997,
        QosClass::BestEffort => 1000,
        QosClass::Burstable => {
            let req = bytes(c, "requests", "memory")
                .or_else(|| bytes(c, "limits", "memory"))
                .unwrap_or(0);
            let adj = if mem_capacity > 0 {
                1000 - (1000 * i128::from(req) / i128::from(mem_capacity)) as i64
            } else {
                999
            };
            adj.clamp(2, 999)
        }
    }
}

/// kubelet's `MilliCPUToShares`: `milli x 1024 / 1000` within [2, 262144] (2 is the
/// kernel's minimum, what no request gets). Saturating: validation bounds CPU
/// quantities, and nothing here may wrap whatever it is given.
pub(crate) fn cpu_shares(milli: i64) -> i64 {
    (milli.saturating_mul(SHARES_PER_CPU) / 1000).clamp(MIN_SHARES, MAX_SHARES)
}

/// kubelet's `milliCPUToQuota`: a limit of 0 is no quota; otherwise `milli x period /
/// 1000`, at least 1 ms, saturating and at most what the kernel accepts.
pub(crate) fn cpu_quota(milli: i64) -> i64 {
    if milli <= 0 {
        return 0;
    }
    (milli.saturating_mul(CPU_PERIOD_US) / 1000).clamp(MIN_QUOTA_US, MAX_QUOTA_US)
}

/// The container's Linux resources for CRI.
pub fn linux_resources(pod: &Pod, c: &Container, mem_capacity: i64) -> pb::LinuxContainerResources {
    let shares = request_milli(c, "cpu").map_or(MIN_SHARES, cpu_shares);
    let quota = milli(c, "limits", "cpu").map_or(0, cpu_quota);
    pb::LinuxContainerResources {
        cpu_period: if quota > 0 { CPU_PERIOD_US } else { 0 },
        cpu_quota: quota,
        cpu_shares: shares,
        memory_limit_in_bytes: bytes(c, "limits", "memory").unwrap_or(0),
        oom_score_adj: oom_score_adj(qos_class(pod), c, mem_capacity),
        ..Default::default()
    }
}

/// Total memory of this machine in bytes, from /proc/meminfo (0 when unreadable).
pub fn mem_capacity() -> i64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    parse_mem_total(&text)
}

fn parse_mem_total(meminfo: &str) -> i64 {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        .map_or(0, |kb| kb.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Quantity;

    fn c(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        let mut c = Container {
            name: "c".into(),
            image: "i".into(),
            ..Default::default()
        };
        for (k, v) in requests {
            c.resources
                .requests
                .insert(k.to_string(), Quantity::parse(v).unwrap());
        }
        for (k, v) in limits {
            c.resources
                .limits
                .insert(k.to_string(), Quantity::parse(v).unwrap());
        }
        c
    }

    fn pod(cs: Vec<Container>) -> Pod {
        let mut p = Pod::default();
        p.spec.containers = cs;
        p
    }

    #[test]
    fn qos_classes() {
        assert_eq!(qos_class(&pod(vec![c(&[], &[])])), QosClass::BestEffort);
        assert_eq!(
            qos_class(&pod(vec![c(&[], &[("cpu", "1"), ("memory", "64Mi")])])),
            QosClass::Guaranteed
        );
        assert_eq!(
            qos_class(&pod(vec![c(
                &[("cpu", "500m")],
                &[("cpu", "1"), ("memory", "64Mi")]
            )])),
            QosClass::Burstable
        );
        assert_eq!(
            qos_class(&pod(vec![
                c(&[], &[("cpu", "1"), ("memory", "1Gi")]),
                c(&[], &[])
            ])),
            QosClass::Burstable
        );
    }

    /// Upstream's edges: only non-zero cpu and memory count, requests default to
    /// limits, init containers count, pod-level resources replace the containers'.
    #[test]
    fn qos_counts_only_nonzero_cpu_and_memory() {
        let storage = c(
            &[("ephemeral-storage", "1Gi")],
            &[("ephemeral-storage", "2Gi")],
        );
        assert_eq!(qos_class(&pod(vec![storage])), QosClass::BestEffort);
        let ext = c(&[], &[("example.com/dongle", "1")]);
        assert_eq!(qos_class(&pod(vec![ext])), QosClass::BestEffort);
        let zero = c(&[("cpu", "0"), ("memory", "0")], &[]);
        assert_eq!(qos_class(&pod(vec![zero])), QosClass::BestEffort);
        // An explicit zero request is not defaulted to the limit: not equal.
        let zero_req = c(&[("cpu", "0")], &[("cpu", "1"), ("memory", "1Gi")]);
        assert_eq!(qos_class(&pod(vec![zero_req])), QosClass::Burstable);
        // Defaulted requests, an extra ephemeral-storage request: still Guaranteed.
        let g = c(
            &[("ephemeral-storage", "1Gi")],
            &[("cpu", "1"), ("memory", "1Gi")],
        );
        assert_eq!(qos_class(&pod(vec![g.clone()])), QosClass::Guaranteed);
        // 1000m and 1 are the same quantity.
        let same = c(&[("cpu", "1000m")], &[("cpu", "1"), ("memory", "1Gi")]);
        assert_eq!(qos_class(&pod(vec![same])), QosClass::Guaranteed);
        // A zero cpu limit is no limit.
        let no_cpu = c(&[], &[("cpu", "0"), ("memory", "1Gi")]);
        assert_eq!(qos_class(&pod(vec![no_cpu])), QosClass::Burstable);
    }

    #[test]
    fn qos_counts_init_containers_and_pod_resources() {
        let g = c(&[], &[("cpu", "1"), ("memory", "1Gi")]);
        let mut p = pod(vec![g.clone()]);
        p.spec.init_containers = vec![c(&[("memory", "8Mi")], &[])];
        assert_eq!(qos_class(&p), QosClass::Burstable);
        p.spec.init_containers = vec![g.clone()];
        assert_eq!(qos_class(&p), QosClass::Guaranteed);
        let mut p = pod(vec![c(&[("cpu", "1")], &[])]);
        p.spec.init_containers = vec![c(&[("ephemeral-storage", "1")], &[])];
        assert_eq!(qos_class(&p), QosClass::Burstable);
        // Pod-level resources replace the containers' (upstream from v1.32).
        let mut p = pod(vec![c(&[], &[]), c(&[("cpu", "100m")], &[])]);
        p.spec.resources = Some(g.resources.clone());
        assert_eq!(qos_class(&p), QosClass::Guaranteed);
        p.spec.resources = Some(c(&[("memory", "1Gi")], &[]).resources);
        assert_eq!(qos_class(&p), QosClass::Burstable);
        // Without cpu, memory or hugepages they are not set: the containers count.
        p.spec.resources = Some(c(&[("ephemeral-storage", "1")], &[]).resources);
        assert_eq!(qos_class(&p), QosClass::Burstable);
        p.spec.containers.pop();
        assert_eq!(qos_class(&p), QosClass::BestEffort);
    }

    #[test]
    fn cgroup_numbers() {
        let ct = c(
            &[("cpu", "250m"), ("memory", "32Mi")],
            &[("cpu", "500m"), ("memory", "64Mi")],
        );
        let r = linux_resources(&pod(vec![ct.clone()]), &ct, 1 << 30);
        assert_eq!(
            (
                r.cpu_shares,
                r.cpu_quota,
                r.cpu_period,
                r.memory_limit_in_bytes
            ),
            (256, 50_000, 100_000, 64 << 20)
        );
        // 1000 - 1000 * 32Mi / 1Gi = 1000 - 31 (integer division, as kubelet).
        assert_eq!(r.oom_score_adj, 969);
        let none = c(&[], &[]);
        let r = linux_resources(&pod(vec![none.clone()]), &none, 1 << 30);
        assert_eq!(
            (
                r.cpu_shares,
                r.cpu_quota,
                r.memory_limit_in_bytes,
                r.oom_score_adj
            ),
            (2, 0, 0, 1000)
        );
        let g = c(&[], &[("cpu", "1m"), ("memory", "8Mi")]);
        let r = linux_resources(&pod(vec![g.clone()]), &g, 1 << 30);
        assert_eq!(
            (r.cpu_shares, r.cpu_quota, r.oom_score_adj),
            (2, 1000, -997)
        );
    }

    /// No CPU quantity makes the arithmetic wrap; kubelet's clamps
    /// hold at both ends.
    #[test]
    fn cpu_numbers_at_the_edges() {
        for (milli, shares, quota) in [
            (0, 2, 0),
            (1, 2, 1000),
            (2, 2, 1000),
            (9, 9, 1000),
            (10, 10, 1000),
            (1000, 1024, 100_000),
            (256_000, 262_144, 25_600_000),
            (1_000_000_000, 262_144, 100_000_000_000),
            (i64::MAX, 262_144, MAX_QUOTA_US),
        ] {
            assert_eq!(
                (cpu_shares(milli), cpu_quota(milli)),
                (shares, quota),
                "{milli}m"
            );
        }
        // Through the container: the largest limit validation accepts, a limit of 0
        // (no quota, as kubelet) and the saturated value of a huge quantity.
        for (limit, quota) in [
            ("1000000", 100_000_000_000),
            ("0", 0),
            ("1e15", MAX_QUOTA_US),
        ] {
            let ct = c(&[], &[("cpu", limit)]);
            let r = linux_resources(&pod(vec![ct.clone()]), &ct, 1 << 30);
            assert_eq!(r.cpu_quota, quota, "{limit}");
            assert_eq!(r.cpu_period, if quota > 0 { CPU_PERIOD_US } else { 0 });
        }
    }

    #[test]
    fn burstable_adj_is_clamped() {
        let big = c(&[("memory", "2Gi")], &[]);
        assert_eq!(oom_score_adj(QosClass::Burstable, &big, 1 << 30), 2);
        assert_eq!(
            oom_score_adj(QosClass::Burstable, &c(&[("cpu", "1")], &[]), 1 << 30),
            999
        );
    }

    #[test]
    fn meminfo() {
        assert_eq!(
            parse_mem_total("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            24_576_000 * 1024
        );
        assert_eq!(parse_mem_total("garbage"), 0);
        assert!(mem_capacity() > 0);
    }
}
