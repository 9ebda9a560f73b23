//! `promtool check metrics`: Prometheus' own parser and linter (Debian package
//! prometheus, installed by tests/harness/install-deps.sh), for the text of /metrics.

use std::io::Write as _;
use std::process::{Command, Stdio};

/// Panics with promtool's complaint (and the text) unless `text` passes.
pub fn check_metrics(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; tests/harness/install-deps.sh)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
