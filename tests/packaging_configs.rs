//! Checks the packaging files against each other and against the real tools:
//! - the systemd unit passes `systemd-analyze verify`, and every directory a systemd
//!   board config writes to is a directory the unit creates for it;
//! - the containerd configs (OpenWrt and systemd) load containerd's CRI plugin in a real,
//!   private containerd, and name the same sandbox image as every board config;
//! - the CNI network names plugins that exist where the configs say they are.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tinylet-pkg-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir scratch");
    dir
}

/// Every `KEY=VALUE` of the unit's [Service] section (repeated keys kept in order).
fn service_settings(unit: &str) -> Vec<(String, String)> {
    let mut in_service = false;
    let mut out = Vec::new();
    for line in unit.lines().map(str::trim) {
        if line.starts_with('[') {
            in_service = line == "[Service]";
        } else if in_service && !line.starts_with('#') {
            if let Some((k, v)) = line.split_once('=') {
                out.push((k.to_string(), v.to_string()));
            }
        }
    }
    out
}

fn board(name: &str) -> Value {
    serde_json::from_str(&read(&format!("board-configs/{name}"))).expect("board JSON")
}

#[test]
fn systemd_unit_verifies() {
    let analyze = Command::new("systemd-analyze").arg("--version").output();
    assert!(
        analyze.is_ok_and(|o| o.status.success()),
        "systemd-analyze is not installed (Debian package systemd)"
    );
    // verify wants ExecStart's binary to exist: point it at the one just built.
    let dir = scratch("unit");
    let unit = read("packaging/systemd/tinylet.service")
        .replace("/usr/local/bin/tinylet", env!("CARGO_BIN_EXE_tinylet"));
    let path = dir.join("tinylet.service");
    std::fs::write(&path, unit).expect("write unit");
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .expect("systemd-analyze runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // systemd < 254 does not know the backoff keys and says so; nothing else may appear.
    let unexpected: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains("RestartSteps") && !l.contains("RestartMaxDelaySec"))
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(out.status.success() && unexpected.is_empty(), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn systemd_unit_settings() {
    let unit = read("packaging/systemd/tinylet.service");
    let settings = service_settings(&unit);
    let get = |k: &str| {
        settings
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("Type"), Some("notify"));
    assert_eq!(get("Restart"), Some("always"));
    assert_eq!(get("NoNewPrivileges"), Some("yes"));
    // Memory emptyDirs: the agent's tmpfs mounts must reach containerd's (the host's)
    // mount namespace, so nothing may give the unit a namespace of its own, and
    // mount(2) must be allowed.
    for ns_option in [
        "ProtectSystem",
        "ProtectHome",
        "PrivateTmp",
        "PrivateDevices",
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectKernelLogs",
        "ProtectControlGroups",
        "ReadOnlyPaths",
        "InaccessiblePaths",
        "TemporaryFileSystem",
        "BindPaths",
    ] {
        assert_eq!(
            get(ns_option),
            None,
            "{ns_option} makes a private mount namespace"
        );
    }
    assert!(get("SystemCallFilter").is_some_and(|f| f.split(' ').any(|g| g == "@mount")));
    assert!(get("CapabilityBoundingSet").is_some_and(|c| c.contains("CAP_SYS_ADMIN")));
    // Pods are not in the agent's cgroup; the default control-group mode is kept.
    assert_eq!(get("KillMode"), None);
    assert_eq!(get("PrivateNetwork"), None);
    assert!(get("ExecStart").is_some_and(|e| e.ends_with(" run --config /etc/tinylet/config.json")));
    assert!(unit.contains("\nAfter=containerd.service"));
    assert!(unit.contains("\nWants=containerd.service"));
    // The stop timeout covers kubelet's default 30 s grace period.
    let stop = get("TimeoutStopSec").and_then(|v| v.trim_end_matches('s').parse::<u64>().ok());
    assert!(stop.is_some_and(|s| s > 30), "{stop:?}");
}

/// The directories the unit creates for the agent (with their modes).
fn writable_dirs(unit: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    for (key, value) in service_settings(unit) {
        let base = match key.as_str() {
            "StateDirectory" => "/var/lib/",
            "LogsDirectory" => "/var/log/",
            "RuntimeDirectory" => "/run/",
            "ReadWritePaths" => "",
            _ => continue,
        };
        for v in value.split_whitespace() {
            dirs.push(format!("{base}{}", v.trim_start_matches('-')));
        }
    }
    dirs
}

#[test]
fn systemd_boards_write_where_the_unit_creates_directories() {
    let allowed = writable_dirs(&read("packaging/systemd/tinylet.service"));
    for name in ["rpi4-debian.json", "rpi3-zero2w-armv7.json"] {
        let cfg = board(name);
        for key in ["stateDir", "podsDir", "podLogsDir"] {
            let dir = cfg[key].as_str().unwrap_or_else(|| panic!("{name}: {key}"));
            let ok = allowed
                .iter()
                .any(|a| dir == a || dir.starts_with(&format!("{a}/")));
            assert!(
                ok,
                "{name}: {key} {dir} is not a directory the unit creates ({allowed:?})"
            );
        }
    }
}

/// `sandbox_image = "..."` of a containerd config.
fn sandbox_image(toml: &str) -> String {
    toml.lines()
        .find_map(|l| l.trim().strip_prefix("sandbox_image = "))
        .map(|v| v.trim_matches('"').to_string())
        .expect("sandbox_image set")
}

#[test]
fn sandbox_image_agrees_everywhere() {
    let openwrt = sandbox_image(&read("packaging/openwrt/tinylet/files/containerd.toml"));
    let systemd = sandbox_image(&read("packaging/systemd/containerd.toml"));
    assert_eq!(openwrt, systemd);
    for entry in std::fs::read_dir(repo().join("board-configs")).expect("list") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // The demo's containerd is the test harness's, set up by the demo script.
        if name == "x86_64-demo.json" {
            continue;
        }
        assert_eq!(board(name)["sandboxImage"], openwrt.as_str(), "{name}");
    }
}

#[test]
fn cni_network_uses_installed_plugins() {
    let conf: Value =
        serde_json::from_str(&read("packaging/openwrt/tinylet/files/10-tinylet.conflist"))
            .expect("conflist is JSON");
    let mut types: Vec<&str> = conf["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .filter_map(|p| p["type"].as_str())
        .collect();
    types.extend(["host-local", "loopback"]); // ipam, and containerd's own lo setup
    for t in types {
        // Debian's containernetworking-plugins and OpenWrt's cni-plugins share the path.
        let bin = Path::new("/usr/lib/cni").join(t);
        assert!(
            bin.is_file(),
            "{} missing (apt-get install containernetworking-plugins)",
            bin.display()
        );
    }
}

/// A private containerd on scratch paths, killed (by its own pid) when dropped.
struct Containerd {
    child: Child,
    dir: PathBuf,
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Rewrites the shipped config's host paths into `dir` and starts containerd with it.
fn start_containerd(name: &str, shipped: &str) -> (Containerd, PathBuf) {
    let dir = scratch(name);
    let sock = dir.join("containerd.sock");
    std::fs::create_dir_all(dir.join("net.d")).expect("mkdir");
    std::fs::copy(
        repo().join("packaging/openwrt/tinylet/files/10-tinylet.conflist"),
        dir.join("net.d/10-tinylet.conflist"),
    )
    .expect("copy conflist");
    let mut toml = read(shipped)
        .replace("/etc/cni/net.d", &dir.join("net.d").display().to_string())
        .replace("state = \"/run/containerd\"\n", "");
    toml = toml.replacen(
        "version = 2\n",
        &format!("version = 2\nstate = \"{}\"\n", dir.join("state").display()),
        1,
    );
    if toml.contains("[grpc]") {
        toml = toml.replace(
            "/run/containerd/containerd.sock",
            &sock.display().to_string(),
        );
    } else {
        toml += &format!("\n[grpc]\n  address = \"{}\"\n", sock.display());
    }
    let config = dir.join("config.toml");
    std::fs::write(&config, toml).expect("write config");
    let child = Command::new("containerd")
        .arg("--config")
        .arg(&config)
        .arg("--root")
        .arg(dir.join("root"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("containerd is installed (tests/harness/install-deps.sh)");
    (Containerd { child, dir }, sock)
}

/// `ctr plugins ls` once the socket answers (within 20 s).
fn plugins(sock: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = Command::new("ctr")
            .arg("--address")
            .arg(sock)
            .args(["plugins", "ls"])
            .output()
            .expect("ctr is installed");
        if out.status.success() {
            return String::from_utf8_lossy(&out.stdout).into_owned();
        }
        assert!(
            Instant::now() < deadline,
            "containerd did not answer: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn assert_cri_loads(name: &str, shipped: &str) {
    let (_containerd, sock) = start_containerd(name, shipped);
    let list = plugins(&sock);
    let status = |ty: &str, id: &str| {
        list.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.first() == Some(&ty) && f.get(1) == Some(&id))
            .and_then(|f| f.last().map(|s| s.to_string()))
    };
    assert_eq!(
        status("io.containerd.grpc.v1", "cri").as_deref(),
        Some("ok"),
        "{shipped}:\n{list}"
    );
    assert_eq!(
        status("io.containerd.snapshotter.v1", "overlayfs").as_deref(),
        Some("ok"),
        "{shipped}:\n{list}"
    );
}

#[test]
fn openwrt_containerd_config_loads_cri() {
    assert_cri_loads(
        "ctrd-openwrt",
        "packaging/openwrt/tinylet/files/containerd.toml",
    );
}

#[test]
fn systemd_containerd_config_loads_cri() {
    assert_cri_loads("ctrd-systemd", "packaging/systemd/containerd.toml");
}
