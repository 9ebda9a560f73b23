//! The process figures every Prometheus exporter gives: resident memory, CPU time and
//! open file descriptors, read from the kernel at scrape time.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_of_this_process_are_plausible() {
        assert!(resident_memory_bytes() > 100 << 10);
        assert!(cpu_nanos() > 0);
        // stdin, stdout, stderr at least.
        assert!(open_fds() >= 3);
    }
}
