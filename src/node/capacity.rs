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
}
