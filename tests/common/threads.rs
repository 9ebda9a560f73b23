//! Counting the threads a piece of the agent adds: the check runs in a child process
//! (this test binary again, one ignored test selected) so the test runner's and other
//! tests' threads do not count.

/// Runs the ignored test `thread_count_child` of this binary in a child process with
/// `TINYLET_THREAD_CHILD=1`; panics unless it succeeds and prints `expect`.
pub fn run_child(expect: &str) {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "thread_count_child",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env("TINYLET_THREAD_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(expect), "{stdout}");
}

/// Whether this process is that child.
pub fn in_child() -> bool {
    std::env::var("TINYLET_THREAD_CHILD").as_deref() == Ok("1")
}

/// Names of this process's threads, sorted.
pub fn thread_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect();
    names.sort();
    names
}
