//! `shellcheck` on every shell script in the repository, so `make test` catches shell
//! mistakes in the init scripts, the build and test helpers alike.
//!
//! Scripts are found by their first line (`#!/bin/sh`, `#!/bin/bash`, `#!/usr/bin/env
//! bash`, `#!/bin/sh /etc/rc.common`, or a sourced library's `# shellcheck shell=...`)
//! or a `.sh` name, in every directory but `target`, `dist` and `.git`; sourced files
//! are followed (`--external-sources`, run from the script's directory). Only warnings and errors fail (`--severity=warning`): style notes
//! are advice. OpenWrt scripts (procd init scripts, uci-defaults, the rc.common
//! stand-in) are checked as POSIX sh with two documented exclusions:
//! - SC2034 "appears unused": START, STOP and USE_PROCD are read by rc.common, which
//!   sources the init script; shellcheck cannot see that.
//! - SC3043 "local is undefined in POSIX sh": OpenWrt's /bin/sh is busybox ash, which has
//!   `local`, and every OpenWrt init script uses it.
//!
//! shellcheck must be installed (tests/harness/install-deps.sh does it): a missing
//! shellcheck fails the test rather than skipping it.

use std::path::{Path, PathBuf};
use std::process::Command;

const SKIP_DIRS: &[&str] = &["target", "dist", ".git"];

/// How a script is checked: the shell dialect and the exclusions.
fn shellcheck_args(path: &Path, first_line: &str) -> Vec<String> {
    let openwrt = first_line.contains("/etc/rc.common")
        || path.components().any(|c| c.as_os_str() == "openwrt");
    let mut args = vec![
        "--severity=warning".to_string(),
        "--external-sources".to_string(),
    ];
    if first_line.starts_with("# shellcheck shell=") {
        // A sourced library names its dialect itself.
    } else if openwrt {
        args.extend(["--shell=sh".into(), "--exclude=SC2034,SC3043".into()]);
    } else if first_line.starts_with("#!") && first_line.contains("bash") {
        args.push("--shell=bash".into());
    } else {
        args.push("--shell=sh".into());
    }
    args
}

fn is_shell_script(path: &Path, first_line: &str) -> bool {
    let shebang =
        first_line.starts_with("#!") && (first_line.contains("/sh") || first_line.contains("bash"));
    shebang
        || first_line.starts_with("# shellcheck shell=")
        || path.extension().is_some_and(|e| e == "sh")
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if !SKIP_DIRS.iter().any(|s| name == *s) {
                collect(&path, out);
            }
        } else if path.is_file() {
            out.push(path);
        }
    }
}

fn first_line(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(line).into_owned()
}

#[test]
fn every_shell_script_passes_shellcheck() {
    let version = Command::new("shellcheck").arg("--version").output();
    assert!(
        version.is_ok_and(|o| o.status.success()),
        "shellcheck is not installed: run tests/harness/install-deps.sh (apt-get install shellcheck)"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect(root, &mut files);
    files.sort();
    let mut checked = Vec::new();
    let mut failures = String::new();
    for path in files {
        let line = first_line(&path);
        if !is_shell_script(&path, &line) {
            continue;
        }
        // Run from the script's directory, as `make harness-lint` does, so that
        // `--external-sources` finds what the script sources.
        let out = Command::new("shellcheck")
            .current_dir(path.parent().unwrap_or(root))
            .args(shellcheck_args(&path, &line))
            .arg(&path)
            .output()
            .expect("shellcheck runs");
        if !out.status.success() {
            failures += &String::from_utf8_lossy(&out.stdout);
            failures += &String::from_utf8_lossy(&out.stderr);
        }
        checked.push(
            path.strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string(),
        );
    }
    // The scripts this project ships are among those checked.
    for must in [
        "packaging/openwrt/tinylet/files/tinylet.init",
        "packaging/openwrt/tinylet/files/containerd.init",
        "packaging/openwrt/tinylet/files/tinylet.uci-defaults",
        "tests/openwrt/rc.common",
    ] {
        assert!(
            checked.iter().any(|c| c == must),
            "{must} not checked: {checked:?}"
        );
    }
    assert!(
        failures.is_empty(),
        "shellcheck found problems:\n{failures}"
    );
}
