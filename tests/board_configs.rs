//! Runs the built `tinylet check-config` on every board config in `board-configs/` (found
//! by listing the directory, so a new board is covered without touching this file) and
//! on broken configs, checking exit codes, effective values and the exact error text.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tinylet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tinylet"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("the tinylet binary runs")
}

fn board_configs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("board-configs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("board-configs/ is listable")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Effective values of a config as check-config prints them; panics with stderr on failure.
fn effective(path: &Path) -> Value {
    let out = tinylet(&["check-config", path.to_str().expect("utf-8 path")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("check-config prints JSON")
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.pointer(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{key} missing or not a string in {v}"))
}

fn u64_at(v: &Value, key: &str) -> u64 {
    v.pointer(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{key} missing or not a number in {v}"))
}

#[test]
fn the_required_boards_are_there() {
    let names: Vec<String> = board_configs()
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(String::from))
        .collect();
    for want in [
        "rpi4-debian.json",
        "rpi3-zero2w-armv7.json",
        "bpi-r3-openwrt.json",
        "openwrt-armv7-256m.json",
        "x86_64-demo.json",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
}

#[test]
fn every_board_config_is_valid_and_sane() {
    let files = board_configs();
    assert!(files.len() >= 5, "{files:?}");
    for path in files {
        let name = path.display().to_string();
        let v = effective(&path);
        // Defaults are filled in: keys a board file leaves out are printed too.
        for key in [
            "/runtimeRequestTimeout",
            "/imageGC/period",
            "/containerGC/period",
        ] {
            assert!(v.pointer(key).is_some(), "{name}: {key} not printed");
        }
        let state = str_at(&v, "/stateDir");
        assert!(state.starts_with('/'), "{name}: stateDir {state}");
        assert!(
            str_at(&v, "/runtimeEndpoint").starts_with("unix:///"),
            "{name}"
        );
        assert!(!str_at(&v, "/sandboxImage").is_empty(), "{name}");
        // Pods are confined by the runtime's seccomp profile unless they choose another.
        assert_eq!(
            v.pointer("/seccompDefault"),
            Some(&Value::Bool(true)),
            "{name}"
        );
        // Every board sets a byte budget for images and logs.
        assert!(
            u64_at(&v, "/imageGC/maxBytes") > 0,
            "{name}: no image budget"
        );
        let log_budget = u64_at(&v, "/containerLogMaxSize") * u64_at(&v, "/containerLogMaxFiles");
        assert!(
            log_budget <= 64 << 20,
            "{name}: {log_budget} bytes of logs per container"
        );
        // What check-config prints is itself a valid config with the same values.
        let again = std::env::temp_dir().join(format!(
            "tinylet-board-{}-{}",
            std::process::id(),
            path.file_name().and_then(|n| n.to_str()).unwrap_or("x")
        ));
        std::fs::write(&again, v.to_string()).expect("write temp config");
        assert_eq!(
            effective(&again),
            v,
            "{name}: effective values do not round-trip"
        );
        let _ = std::fs::remove_file(&again);
    }
}

#[test]
fn every_board_runs_local_images_within_seconds_when_the_registry_hangs() {
    // Pods with a local copy start after a reboot even when pulls hang.
    for path in board_configs() {
        let name = path.display().to_string();
        let v = effective(&path);
        let fallback = str_at(&v, "/imagePullFallbackTimeout");
        assert!(
            ["0s", "1s", "2s", "3s", "4s", "5s"].contains(&fallback),
            "{name}: imagePullFallbackTimeout {fallback}"
        );
    }
}

#[test]
fn openwrt_boards_keep_state_off_tmpfs() {
    // On OpenWrt /var is a symlink into /tmp (RAM): state there is lost at every reboot.
    for path in board_configs() {
        let name = path.display().to_string();
        if !name.contains("openwrt") {
            continue;
        }
        let v = effective(&path);
        for key in ["/stateDir", "/podsDir"] {
            let dir = str_at(&v, key);
            assert!(
                !dir.starts_with("/var") && !dir.starts_with("/tmp"),
                "{name}: {key} {dir} is on tmpfs"
            );
        }
        // netifd's upstream resolvers: /etc/resolv.conf names dnsmasq on 127.0.0.1,
        // which a pod in its own network namespace cannot reach.
        assert_eq!(
            str_at(&v, "/resolvConf"),
            "/tmp/resolv.conf.d/resolv.conf.auto",
            "{name}"
        );
    }
}

/// One `allowedHostPaths` entry as check-config prints it: its directory (a
/// `{namespace}` entry's parent: any namespace may be named), whether it is the
/// namespace's own, whether the source may use it, and whether its mounts are forced
/// read-only for that source.
struct Entry {
    dir: PathBuf,
    per_namespace: bool,
    read_only: bool,
}

fn host_path_entries(v: &Value, source: &str) -> Vec<Entry> {
    let list = v["allowedHostPaths"]
        .as_array()
        .expect("allowedHostPaths is a list");
    list.iter()
        .filter(|e| e["source"].as_str().is_none_or(|s| s == source))
        .map(|e| {
            let prefix = Path::new(e["pathPrefix"].as_str().expect("pathPrefix"));
            let per_namespace = prefix.file_name().is_some_and(|n| n == "{namespace}");
            let dir = if per_namespace {
                prefix.parent().expect("a parent").to_path_buf()
            } else {
                prefix.to_path_buf()
            };
            let read_only = e["readOnly"].as_bool().unwrap_or(source == "cluster");
            Entry {
                dir,
                per_namespace,
                read_only,
            }
        })
        .collect()
}

fn overlap(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The OpenWrt boards run cluster pods at baseline: a tenant gets no trust store of
/// the gateway (a planted CA), nothing the owner's pods use, writes only in its own
/// namespace's directory, and no unsafe sysctl.
#[test]
fn openwrt_tenants_get_no_trust_store_and_their_own_directory() {
    for path in board_configs() {
        let name = path.display().to_string();
        if !name.contains("openwrt") {
            continue;
        }
        let v = effective(&path);
        assert_eq!(str_at(&v, "/podPolicy/cluster"), "baseline", "{name}");
        let cluster = host_path_entries(&v, "cluster");
        let local = host_path_entries(&v, "local");
        assert!(!cluster.is_empty() && !local.is_empty(), "{name}");
        for e in &cluster {
            let d = &e.dir;
            for store in [
                "/etc/ssl",
                "/etc/ssl/certs",
                "/etc",
                "/usr/share/ca-certificates",
            ] {
                assert!(
                    !overlap(d, Path::new(store)),
                    "{name}: {d:?} reaches {store}"
                );
            }
            assert!(
                e.read_only || e.per_namespace,
                "{name}: {d:?} writable by every tenant"
            );
            for l in &local {
                assert!(
                    !overlap(d, &l.dir),
                    "{name}: {d:?} is shared with local {:?}",
                    l.dir
                );
            }
        }
        assert!(
            cluster.iter().any(|e| e.per_namespace && !e.read_only),
            "{name}"
        );
        let sysctls = v.pointer("/podPolicy/allowedUnsafeSysctls/cluster");
        assert!(
            sysctls.is_none_or(|s| s.as_array().is_some_and(Vec::is_empty)),
            "{name}"
        );
    }
}

#[test]
fn small_boards_get_small_budgets() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("board-configs");
    let small = effective(&dir.join("openwrt-armv7-256m.json"));
    assert_eq!(u64_at(&small, "/imageGC/maxBytes"), 48 << 20);
    assert_eq!(u64_at(&small, "/containerLogMaxSize"), 256 << 10);
    assert_eq!(str_at(&small, "/plegPeriod"), "2s");
    assert_eq!(str_at(&small, "/statusAddress"), "");
    assert_eq!(u64_at(&small, "/maxParallelRuntimeOperations"), 2);
    // 128 MB: one heavy runtime call at a time, so containerd is never driven into
    // swapping (a board with 128 MB lost power that way).
    let tiny = effective(&dir.join("openwrt-armv7-128m.json"));
    assert_eq!(u64_at(&tiny, "/maxParallelRuntimeOperations"), 1);
    let pi3 = effective(&dir.join("rpi3-zero2w-armv7.json"));
    assert_eq!(str_at(&pi3, "/podLogsDir"), "/run/tinylet/pod-logs");
    assert_eq!(u64_at(&pi3, "/imageGC/maxBytes"), 2 << 30);
    let pi4 = effective(&dir.join("rpi4-debian.json"));
    assert_eq!(str_at(&pi4, "/podLogsDir"), "/var/log/pods");
    assert_eq!(u64_at(&pi4, "/containerLogMaxSize"), 10 << 20);
}

/// Writes `text` to a fresh temp file and runs check-config on it.
fn check_text(name: &str, text: &str) -> (Option<i32>, String, String) {
    let path = std::env::temp_dir().join(format!("tinylet-bad-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("write temp config");
    let shown = path.display().to_string();
    let out = tinylet(&["check-config", &shown]);
    let _ = std::fs::remove_file(&path);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.stdout.is_empty(), "nothing on stdout for a bad config");
    (out.status.code(), stderr, shown)
}

#[test]
fn unknown_key_names_file_and_key() {
    let (code, err, path) = check_text("unknown.json", "{\"plegPeriodd\": \"1s\"}");
    assert_eq!(code, Some(2));
    // The list of accepted keys in the middle grows with the config; both ends are exact.
    let head = format!(
        "error: {path}: plegPeriodd: unknown field `plegPeriodd`, expected one of `nodeName`, "
    );
    assert!(err.starts_with(&head), "{err}");
    assert!(err.ends_with("` at line 1 column 14\n"), "{err}");
}

#[test]
fn bad_duration_names_file_and_nested_field() {
    let (code, err, path) = check_text(
        "duration.json",
        "{\n  \"imageGC\": {\"minAge\": \"5 minutes\"}\n}\n",
    );
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        format!(
            "error: {path}: imageGC.minAge: expected a duration like \"1s\", \"500ms\" or \
             \"2m0s\", got \"5 minutes\" at line 2 column 36\n"
        )
    );
}

#[test]
fn low_above_high_threshold_is_refused() {
    let (code, err, path) = check_text(
        "thresholds.json",
        r#"{"imageGC":{"highThresholdPercent":50,"lowThresholdPercent":60}}"#,
    );
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        format!(
            "error: {path}: imageGC.lowThresholdPercent: must not exceed \
             highThresholdPercent (50), got 60\n"
        )
    );
}

#[test]
fn missing_file_and_missing_argument() {
    let out = tinylet(&["check-config", "/nonexistent/tinylet.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: /nonexistent/tinylet.json: cannot read: No such file or directory (os error 2)\n"
    );
    let out = tinylet(&["check-config"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: check-config needs a FILE\n"
    );
}

#[test]
fn state_dir_override_is_applied_and_checked() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("board-configs");
    let file = dir.join("x86_64-demo.json");
    let file = file.to_str().expect("utf-8 path");
    let out = tinylet(&["check-config", file, "--state-dir", "/tmp/demo-state"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(str_at(&v, "/stateDir"), "/tmp/demo-state");
    let out = tinylet(&["check-config", file, "--state-dir", "relative"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: --state-dir: stateDir: must be an absolute path, got \"relative\"\n"
    );
}

#[test]
fn a_reader_that_goes_away_is_not_a_crash() {
    use std::io::Read;
    use std::process::Stdio;
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("board-configs/rpi4-debian.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tinylet"))
        .arg("check-config")
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tinylet runs");
    // Close our end of stdout at once, like `| head -0`.
    drop(child.stdout.take());
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    let _ = child
        .stderr
        .take()
        .map(|mut e| e.read_to_string(&mut stderr));
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
