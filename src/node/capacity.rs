//! The node's capacity (CPUs, memory, process ids, the pods' filesystem) and its
//! allocatable: capacity less `systemReserved` and `kubeReserved`, what the pods together
//! may use (kubelet's node allocatable). Read once at start.

use crate::config::{reserved, Config};
pub use crate::model::NodeResources;
use std::path::Path;

impl NodeResources {
    /// This machine's capacity; `memory` from /proc/meminfo, given by the caller, and
    /// the size of the filesystem holding pod volumes (`podsDir`, else `stateDir`).
    pub fn capacity(memory: i64, cfg: &Config) -> NodeResources {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
        NodeResources {
            cpu_milli: i64::from(online_cpus(&online).unwrap_or(1)) * 1000,
            memory,
            pids: pid_capacity(),
            ephemeral_storage: [&cfg.pods_dir, &cfg.state_dir]
                .into_iter()
                .find_map(|d| filesystem_size(d))
                .map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX)),
        }
    }

    /// `self` less the config's reservations, never below zero: what the pods' parent
    /// cgroup is limited to (kubelet leaves the eviction threshold out of it).
    pub fn less_reserved(&self, cfg: &Config) -> NodeResources {
        let less = |have: i64, r: &str| have.saturating_sub(reserved(cfg, r)).max(0);
        NodeResources {
            cpu_milli: less(self.cpu_milli, "cpu"),
            memory: less(self.memory, "memory"),
            pids: less(self.pids, "pid"),
            ephemeral_storage: self.ephemeral_storage,
        }
    }

    /// The node's allocatable as the Node reports it, what admission fits pods in and
    /// what the downward API shows for a limit not set: [`NodeResources::less_reserved`],
    /// memory also less the hard eviction threshold (kubelet's rule).
    pub fn allocatable(&self, cfg: &Config) -> NodeResources {
        NodeResources {
            memory: self
                .memory
                .saturating_sub(reserved_memory(cfg, self.memory))
                .max(0),
            ..self.less_reserved(cfg)
        }
    }
}

/// Memory held back from pods in what the node reports as allocatable: both
/// reservations and the hard eviction threshold of `memory.available` (kubelet's rule).
pub fn reserved_memory(cfg: &Config, capacity: i64) -> i64 {
    let hard = crate::config::eviction_threshold(cfg, "memory.available")
        .map_or(0, |t| t.amount(capacity));
    reserved(cfg, "memory").saturating_add(hard)
}

/// Below this much allocatable memory the agent warns at start. A pod needs, while a
/// container is being made, runc's init process in its cgroup (the Go runtime's
/// 6-10 MiB), then its pause container (~1 MiB) and the container itself; the arm-e2e
/// board with 256 MB reservations on 128 MB (a few MiB left) had runc init OOM-killed.
/// 32 MiB keeps room for runc init beside two or three small containers; the board
/// configs leave 50 MiB (128 MB board) and more.
pub const POD_MEMORY_FLOOR: i64 = 32 << 20;

/// Reservations larger than the node: kubelet refuses to start on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverReserved {
    /// `cpu`, `memory` or `pid`.
    pub resource: &'static str,
    /// What is held back, in millis (cpu), bytes or pids.
    pub reserved: i64,
    /// The node's capacity in the same unit.
    pub capacity: i64,
}

impl std::fmt::Display for OverReserved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.resource == "memory" {
            "systemReserved + kubeReserved + evictionHard memory.available"
        } else {
            "systemReserved + kubeReserved"
        };
        write!(
            f,
            "invalid node allocatable: {} reserved ({what}) is {}, more than the node's \
             capacity of {}",
            self.resource, self.reserved, self.capacity
        )
    }
}

impl std::error::Error for OverReserved {}

/// kubelet's start check of the reservations: an error when they exceed the
/// capacity; a warning (to log) when they leave the pods less than
/// [`POD_MEMORY_FLOOR`].
pub fn check_reservations(
    cfg: &Config,
    cap: &NodeResources,
) -> Result<Option<String>, OverReserved> {
    let memory = reserved_memory(cfg, cap.memory);
    for (resource, reserved, capacity) in [
        ("cpu", reserved(cfg, "cpu"), cap.cpu_milli),
        ("memory", memory, cap.memory),
        ("pid", reserved(cfg, "pid"), cap.pids),
    ] {
        if reserved > capacity {
            return Err(OverReserved {
                resource,
                reserved,
                capacity,
            });
        }
    }
    let left = cap.memory - memory;
    Ok((left < POD_MEMORY_FLOOR).then(|| {
        format!(
            "pods are left {} MiB of memory ({} MiB capacity less {} MiB of \
             systemReserved + kubeReserved + evictionHard memory.available), under the \
             {} MiB a pod needs to start beside runc's init: containers may be \
             OOM-killed while they start",
            left >> 20,
            cap.memory >> 20,
            memory >> 20,
            POD_MEMORY_FLOOR >> 20
        )
    }))
}

/// The number of CPUs in a kernel CPU list (`0-3,6`); `None` for a list that is empty
/// or not one. The one CPU count of the agent (the Node's capacity, fit, cgroups): the
/// machine's online CPUs as kubelet counts them, not std's `available_parallelism`,
/// which follows the agent's own affinity and CPU quota (and brings a cgroup parser of
/// its own, kilobytes of flash).
pub fn online_cpus(list: &str) -> Option<u32> {
    let mut n = 0u32;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
        n = n.checked_add(b.checked_sub(a)?.checked_add(1)?)?;
    }
    (n > 0).then_some(n)
}

/// Total size of the filesystem holding `dir` (blocks times fragment size), when known.
fn filesystem_size(dir: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    st.f_blocks.checked_mul(st.f_frsize).filter(|&n| n > 0)
}

/// The most tasks the kernel allows: the smaller of `kernel.pid_max` and
/// `kernel.threads-max` (kubelet's pid capacity).
fn pid_capacity() -> i64 {
    let read = |f: &str| {
        std::fs::read_to_string(f)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
    };
    match (
        read("/proc/sys/kernel/pid_max"),
        read("/proc/sys/kernel/threads-max"),
    ) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b).unwrap_or(32_768),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocatable_is_capacity_less_both_reservations() {
        let cfg = Config::parse(
            r#"{"systemReserved":{"memory":"48Mi","cpu":"200m","pid":"1000"},
                "kubeReserved":{"memory":"16Mi"}}"#,
        )
        .unwrap();
        let cap = NodeResources {
            cpu_milli: 2000,
            memory: 256 << 20,
            pids: 1500,
            ephemeral_storage: 1 << 30,
        };
        let a = cap.less_reserved(&cfg);
        assert_eq!((a.cpu_milli, a.memory, a.pids), (1800, 192 << 20, 500));
        assert_eq!(a.ephemeral_storage, 1 << 30);
        let small = NodeResources {
            memory: 32 << 20,
            ..cap
        };
        assert_eq!(small.less_reserved(&cfg).memory, 0);
        let mut at_root = cfg.clone();
        at_root.pods_dir = "/".into();
        let here = NodeResources::capacity(1, &at_root);
        assert!(here.pids > 0 && here.cpu_milli >= 1000, "{here:?}");
        assert!(here.ephemeral_storage > 0, "the size of /: {here:?}");
    }

    #[test]
    fn allocatable_leaves_out_the_hard_eviction_threshold_too() {
        let cfg = Config::parse(
            r#"{"systemReserved":{"memory":"48Mi","cpu":"200m"},
                "evictionHard":{"memory.available":"16Mi"}}"#,
        )
        .unwrap();
        let cap = NodeResources {
            cpu_milli: 2000,
            memory: 256 << 20,
            pids: 1500,
            ephemeral_storage: 7,
        };
        let a = cap.allocatable(&cfg);
        assert_eq!((a.cpu_milli, a.memory, a.pids), (1800, 192 << 20, 1500));
        assert_eq!(a.ephemeral_storage, 7);
        let tiny = NodeResources {
            memory: 60 << 20,
            ..cap
        };
        assert_eq!(tiny.allocatable(&cfg).memory, 0, "never below zero");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(online_cpus("0-3,6\n"), Some(5));
        assert_eq!(online_cpus("0-1\n"), Some(2));
        assert_eq!(online_cpus("0"), Some(1));
        assert_eq!(online_cpus("0-3,6,8-9"), Some(7));
        // Not a CPU list: no count (the caller says 1), never a negative or partial one.
        assert_eq!(online_cpus(""), None);
        assert_eq!(online_cpus("3-1"), None);
        assert_eq!(online_cpus("x"), None);
        assert_eq!(online_cpus("0-1,x"), None);
    }

    #[test]
    fn filesystem_sizes() {
        assert!(filesystem_size(Path::new("/")).is_some_and(|n| n > 0));
        assert_eq!(filesystem_size(Path::new("/no/such/dir")), None);
    }

    #[test]
    fn reservations_over_capacity_refuse_and_a_thin_remainder_warns() {
        let cap = NodeResources {
            cpu_milli: 1000,
            memory: 128 << 20,
            pids: 2000,
            ephemeral_storage: 0,
        };
        let cfg = |json: &str| Config::parse(json).unwrap();
        let fits = cfg(
            r#"{"systemReserved":{"memory":"40Mi"},"kubeReserved":{"memory":"32Mi"},
                           "evictionHard":{"memory.available":"12Mi"}}"#,
        );
        assert_eq!(check_reservations(&fits, &cap), Ok(None));
        // 48 + 48 + 20 of 128: 12 MiB left, under the floor.
        let thin = cfg(
            r#"{"systemReserved":{"memory":"48Mi"},"kubeReserved":{"memory":"48Mi"},
                           "evictionHard":{"memory.available":"20Mi"}}"#,
        );
        let w = check_reservations(&thin, &cap).unwrap().unwrap();
        assert!(
            w.starts_with("pods are left 12 MiB of memory (128 MiB"),
            "{w}"
        );
        // The hard threshold counts: 100 + 100Mi (the default) is over 128.
        let over = cfg(r#"{"systemReserved":{"memory":"100Mi"}}"#);
        let e = check_reservations(&over, &cap).unwrap_err();
        assert_eq!((e.resource, e.reserved), ("memory", 200 << 20));
        assert!(
            e.to_string().contains("evictionHard memory.available"),
            "{e}"
        );
        let cpu = cfg(r#"{"systemReserved":{"cpu":"600m"},"kubeReserved":{"cpu":"500m"}}"#);
        assert_eq!(check_reservations(&cpu, &cap).unwrap_err().resource, "cpu");
        let pid = cfg(r#"{"kubeReserved":{"pid":"2001"},"evictionHard":{}}"#);
        assert_eq!(check_reservations(&pid, &cap).unwrap_err().resource, "pid");
        // Exactly the capacity is allowed (kubelet's rule), though it warns.
        let all = cfg(r#"{"systemReserved":{"memory":"128Mi"},"evictionHard":{}}"#);
        assert!(check_reservations(&all, &cap).unwrap().is_some());
    }
}
