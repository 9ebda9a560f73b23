//! The process figures every Prometheus exporter gives: resident memory, CPU time and
//! open file descriptors, and the node's CPU time and memory working set (for
//! `/metrics/resource`), read from the kernel at scrape time.

/// Resident set size in bytes (`VmRSS` of /proc/self/status), 0 when unreadable.
pub fn resident_memory_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// CPU time (user and system) the process used, in nanoseconds.
pub fn cpu_nanos() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// Open file descriptors (entries of /proc/self/fd, less the one listing them).
pub fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count().saturating_sub(1) as u64)
}

/// CPU time the node spent not idle (user, nice, system, irq, softirq, steal of the
/// first line of /proc/stat, in USER_HZ = 1/100 s), in nanoseconds; 0 when unreadable.
pub fn node_cpu_nanos() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    cpu_ticks(&stat).saturating_mul(10_000_000)
}

fn cpu_ticks(stat: &str) -> u64 {
    let Some(cpu) = stat.lines().next().and_then(|l| l.strip_prefix("cpu ")) else {
        return 0;
    };
    let v: Vec<u64> = cpu
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal
    [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| v.get(i))
        .fold(0u64, |a, &b| a.saturating_add(b))
}

/// The node's memory working set: MemTotal - MemAvailable of /proc/meminfo (kubelet
/// reads the root cgroup's usage less inactive file pages, which cgroup v2 does not
/// expose at the root), in bytes; 0 when unreadable.
pub fn node_memory_working_set_bytes() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kb = |key: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    match (kb("MemTotal:"), kb("MemAvailable:")) {
        (Some(t), Some(a)) => t.saturating_sub(a).saturating_mul(1024),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_of_this_process_are_plausible() {
        assert!(resident_memory_bytes() > 100 << 10);
        assert!(cpu_nanos() > 0);
        // stdin, stdout, stderr at least.
        assert!(open_fds() >= 3);
        assert!(node_cpu_nanos() > 0);
        assert!(node_memory_working_set_bytes() > 0);
    }

    #[test]
    fn busy_cpu_ticks_leave_out_idle_and_iowait() {
        assert_eq!(
            cpu_ticks("cpu  1 2 3 1000 1000 4 5 6 0 0\ncpu0 1 2 3\n"),
            21
        );
        assert_eq!(cpu_ticks("garbage"), 0);
    }
}
