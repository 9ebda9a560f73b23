//! The node's capacity (CPUs, memory, process ids) and its allocatable: capacity less
//! `systemReserved` and `kubeReserved`, what the pods together may use (kubelet's
//! node allocatable). Read once at start.

use crate::config::{reserved, Config};

/// Amounts of the three resources the node hands out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in millis.
    pub cpu_milli: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Process ids (tasks).
    pub pids: i64,
}

impl Resources {
    /// This machine's capacity; `memory` from /proc/meminfo, given by the caller.
    pub fn capacity(memory: i64) -> Resources {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
        let cpus = online_cpus(&online).max(1);
        Resources {
            cpu_milli: cpus * 1000,
            memory,
            pids: pid_capacity(),
        }
    }

    /// `self` less the config's reservations, never below zero.
    pub fn allocatable(&self, cfg: &Config) -> Resources {
        let less = |have: i64, r: &str| have.saturating_sub(reserved(cfg, r)).max(0);
        Resources {
            cpu_milli: less(self.cpu_milli, "cpu"),
            memory: less(self.memory, "memory"),
            pids: less(self.pids, "pid"),
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
pub fn check_reservations(cfg: &Config, cap: &Resources) -> Result<Option<String>, OverReserved> {
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

/// The CPUs in a kernel CPU list (`0-3,6`). Read by hand: std's
/// `available_parallelism` brings a cgroup quota parser of its own, kilobytes of flash.
fn online_cpus(list: &str) -> i64 {
    list.trim()
        .split(',')
        .filter_map(|r| match r.split_once('-') {
            Some((a, b)) => Some(b.parse::<i64>().ok()? - a.parse::<i64>().ok()? + 1),
            None => r.parse::<i64>().ok().map(|_| 1),
        })
        .sum()
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
        let cap = Resources {
            cpu_milli: 2000,
            memory: 256 << 20,
            pids: 1500,
        };
        let a = cap.allocatable(&cfg);
        assert_eq!((a.cpu_milli, a.memory, a.pids), (1800, 192 << 20, 500));
        let small = Resources {
            memory: 32 << 20,
            ..cap
        };
        assert_eq!(small.allocatable(&cfg).memory, 0);
        assert!(Resources::capacity(1).pids > 0);
        assert_eq!(online_cpus("0-3,6\n"), 5);
        assert_eq!(online_cpus("0"), 1);
    }

    #[test]
    fn reservations_over_capacity_refuse_and_a_thin_remainder_warns() {
        let cap = Resources {
            cpu_milli: 1000,
            memory: 128 << 20,
            pids: 2000,
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
