//! Runs the OpenWrt procd init scripts (packaging/openwrt/tinylet/files) against the
//! rc.common/procd/UCI stand-ins in tests/openwrt/rc.common, which record every procd
//! call, and checks what the scripts ask procd for: the command line, respawn values,
//! watched file, logging to logd, term_timeout, triggers, for enabled and disabled UCI
//! configs. The JSON config is checked by the real `tinylet check-config`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn files() -> PathBuf {
    repo().join("packaging/openwrt/tinylet/files")
}

/// A scratch directory holding the UCI config, the init script (installed under its
/// real name) and the record of procd calls.
struct Device {
    dir: PathBuf,
}

impl Device {
    /// `uci_edits`: (option line as shipped, replacement) pairs applied to the shipped
    /// /etc/config/tinylet; the agent's JSON config always points at a real board file.
    fn new(name: &str, uci_edits: &[(&str, &str)]) -> Device {
        let dir = std::env::temp_dir().join(format!("tinylet-procd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("uci")).expect("mkdir");
        let mut uci = std::fs::read_to_string(files().join("tinylet.config")).expect("UCI default");
        let board = repo().join("board-configs/openwrt-armv7-256m.json");
        uci = uci.replace(
            "option config '/etc/tinylet/config.json'",
            &format!("option config '{}'", board.display()),
        );
        for (from, to) in uci_edits {
            assert!(uci.contains(from), "UCI default has no {from:?}");
            uci = uci.replace(from, to);
        }
        std::fs::write(dir.join("uci/tinylet"), uci).expect("write UCI");
        for (src, dst) in [
            ("tinylet.init", "tinylet"),
            ("containerd.init", "tinylet-containerd"),
        ] {
            std::fs::copy(files().join(src), dir.join(dst)).expect("copy init script");
        }
        Device { dir }
    }

    /// Runs `/etc/init.d/SCRIPT ACTION` the way procd does, through the stand-in.
    fn run(&self, script: &str, action: &str, agent_pid: Option<u32>) -> Output {
        let _ = std::fs::remove_file(self.dir.join("record"));
        let mut cmd = Command::new("sh");
        cmd.arg(repo().join("tests/openwrt/rc.common"))
            .arg(self.dir.join(script))
            .arg(action)
            .env("RECORD", self.dir.join("record"))
            .env("UCI_CONFIG_DIR", self.dir.join("uci"))
            .env("RUST_LOG", "");
        if script == "tinylet" {
            cmd.env("TEST_PROG", env!("CARGO_BIN_EXE_tinylet"));
        }
        if let Some(pid) = agent_pid {
            cmd.env("TEST_AGENT_PID", pid.to_string());
        }
        cmd.output().expect("sh runs")
    }

    /// The recorded calls, one per line, arguments tab-separated.
    fn record(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("record"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    fn script(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn line(parts: &[&str]) -> String {
    parts.join("\t")
}

fn board() -> String {
    repo()
        .join("board-configs/openwrt-armv7-256m.json")
        .display()
        .to_string()
}

#[test]
fn enabled_agent_gets_the_expected_instance() {
    let dev = Device::new("enabled", &[]);
    let out = dev.run("tinylet", "start", None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = env!("CARGO_BIN_EXE_tinylet");
    let board = board();
    assert_eq!(
        dev.record(),
        vec![
            line(&["procd_open_service", "tinylet", &dev.script("tinylet")]),
            line(&["procd_open_instance", "agent"]),
            line(&["procd_set_param", "command", bin, "run", "--config", &board]),
            line(&["procd_set_param", "respawn", "3600", "5", "0"]),
            line(&["procd_set_param", "file", &board]),
            line(&["procd_set_param", "stdout", "1"]),
            line(&["procd_set_param", "stderr", "1"]),
            line(&["procd_set_param", "term_timeout", "45"]),
            line(&["procd_close_instance"]),
            line(&["procd_add_reload_trigger", "tinylet"]),
            line(&["procd_close_service", "set"]),
        ]
    );
}

#[test]
fn disabled_agent_registers_no_instance() {
    let dev = Device::new("disabled", &[("option enabled '1'", "option enabled '0'")]);
    let out = dev.run("tinylet", "start", None);
    assert!(out.status.success());
    let rec = dev.record();
    // procd is still told about the service, with no instance: a running agent stops.
    assert!(
        !rec.iter().any(|l| l.starts_with("procd_open_instance")),
        "{rec:?}"
    );
    assert!(
        rec.contains(&line(&["procd_close_service", "set"])),
        "{rec:?}"
    );
    assert!(
        rec.contains(&line(&[
            "logger",
            "-t",
            "tinylet",
            "-p",
            "daemon.notice",
            "disabled (uci set tinylet.main.enabled=1 to start it)"
        ])),
        "{rec:?}"
    );
}

#[test]
fn uci_options_reach_the_command_line_and_procd() {
    let dev = Device::new(
        "options",
        &[
            ("option log_level ''", "option log_level 'debug'"),
            ("option state_dir ''", "option state_dir '/srv/other'"),
            // "/" is always mounted.
            (
                "option require_mount ''\n\t# Seconds",
                "option require_mount '/'\n\t# Seconds",
            ),
            ("option term_timeout '45'", "option term_timeout '90'"),
            ("option respawn_retry '0'", "option respawn_retry '7'"),
        ],
    );
    let out = dev.run("tinylet", "start", None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = dev.record();
    let bin = env!("CARGO_BIN_EXE_tinylet");
    for want in [
        line(&[
            "procd_set_param",
            "command",
            bin,
            "run",
            "--config",
            &board(),
        ]),
        line(&["procd_append_param", "command", "--state-dir", "/srv/other"]),
        line(&["procd_set_param", "env", "RUST_LOG=debug"]),
        line(&["procd_set_param", "respawn", "3600", "5", "7"]),
        line(&["procd_set_param", "term_timeout", "90"]),
        line(&["procd_add_restart_mount_trigger", "/"]),
    ] {
        assert!(rec.contains(&want), "missing {want:?} in {rec:?}");
    }
}

#[test]
fn missing_mount_waits_for_the_mount_trigger() {
    let dev = Device::new(
        "nomount",
        &[(
            "option require_mount ''\n\t# Seconds",
            "option require_mount '/nonexistent/data'\n\t# Seconds",
        )],
    );
    let out = dev.run("tinylet", "start", None);
    assert!(out.status.success());
    let rec = dev.record();
    assert!(
        !rec.iter().any(|l| l.starts_with("procd_open_instance")),
        "{rec:?}"
    );
    assert!(
        rec.contains(&line(&[
            "procd_add_restart_mount_trigger",
            "/nonexistent/data"
        ])),
        "{rec:?}"
    );
}

#[test]
fn broken_json_config_is_refused_and_procd_is_left_alone() {
    let dev = Device::new("broken", &[]);
    let bad = dev.dir.join("bad.json");
    std::fs::write(&bad, r#"{"plegPeriod": "soon"}"#).expect("write");
    let uci_path = dev.dir.join("uci/tinylet");
    let uci = std::fs::read_to_string(&uci_path).expect("read UCI");
    std::fs::write(&uci_path, uci.replace(&board(), &bad.display().to_string())).expect("write");
    let out = dev.run("tinylet", "start", None);
    assert_eq!(out.status.code(), Some(1));
    let problem = format!(
        "{}: plegPeriod: expected a duration like \"1s\", \"500ms\" or \"2m0s\", got \"soon\" \
         at line 1 column 22",
        bad.display()
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("tinylet: error: {problem}\n")
    );
    // Nothing was sent to procd (no procd_close_service): a running agent keeps running.
    let rec = dev.record();
    assert_eq!(
        rec,
        vec![
            line(&["procd_open_service", "tinylet", &dev.script("tinylet")]),
            line(&[
                "logger",
                "-t",
                "tinylet",
                "-p",
                "daemon.err",
                &format!("not (re)started: error: {problem}")
            ]),
        ]
    );
}

#[test]
fn stop_waits_until_the_agent_is_gone() {
    let dev = Device::new(
        "stop",
        &[("option term_timeout '45'", "option term_timeout '5'")],
    );
    // A stand-in agent that takes a moment to finish, reaped as soon as it exits so that
    // `kill -0` stops finding it.
    let mut agent = Command::new("sleep").arg("1").spawn().expect("sleep runs");
    let pid = agent.id();
    let reaper = std::thread::spawn(move || {
        let _ = agent.wait();
        Instant::now()
    });
    let out = dev.run("tinylet", "stop", Some(pid));
    // procd_kill gets rc.common's instance argument, empty for "all instances".
    let stop_returned = Instant::now();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let agent_gone = reaper.join().expect("reaper");
    assert!(
        agent_gone <= stop_returned,
        "stop returned before the agent was gone"
    );
    assert_eq!(dev.record(), vec![line(&["procd_kill", "tinylet", ""])]);
}

#[test]
fn stop_without_a_running_agent_returns_at_once() {
    let dev = Device::new("stopnone", &[]);
    let out = dev.run("tinylet", "stop", None);
    assert!(out.status.success());
    assert_eq!(dev.record(), vec![line(&["procd_kill", "tinylet", ""])]);
}

#[test]
fn containerd_instance_fits_openwrt() {
    let dev = Device::new("containerd", &[]);
    let root = dev.dir.join("containerd-root").display().to_string();
    let uci_path = dev.dir.join("uci/tinylet");
    let uci = std::fs::read_to_string(&uci_path).expect("read UCI");
    std::fs::write(
        &uci_path,
        uci.replace(
            "option root '/overlay/containerd'",
            &format!("option root '{root}'"),
        ),
    )
    .expect("write");
    let out = dev.run("tinylet-containerd", "start", None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dev.dir.join("containerd-root").is_dir(), "root not created");
    let nofile = std::fs::read_to_string("/proc/sys/fs/nr_open").expect("nr_open");
    let nofile = nofile.trim();
    assert_eq!(
        dev.record(),
        vec![
            line(&[
                "procd_open_service",
                "tinylet-containerd",
                &dev.script("tinylet-containerd")
            ]),
            line(&["procd_open_instance", "containerd"]),
            line(&[
                "procd_set_param",
                "command",
                "/usr/bin/containerd",
                "--config",
                "/etc/tinylet/containerd.toml",
                "--root",
                &root,
                "--log-level",
                "warn"
            ]),
            line(&[
                "procd_set_param",
                "limits",
                &format!("nofile={nofile} {nofile}")
            ]),
            line(&["procd_set_param", "respawn", "3600", "5", "0"]),
            line(&["procd_set_param", "file", "/etc/tinylet/containerd.toml"]),
            line(&["procd_set_param", "stdout", "1"]),
            line(&["procd_set_param", "stderr", "1"]),
            line(&["procd_set_param", "term_timeout", "15"]),
            line(&["procd_close_instance"]),
            line(&["procd_add_reload_trigger", "tinylet"]),
            line(&["procd_close_service", "set"]),
        ]
    );
}

#[test]
fn start_and_stop_order_around_containerd() {
    let read = |f: &str| std::fs::read_to_string(files().join(f)).expect("init script");
    let number = |text: &str, key: &str| -> u32 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {key}="))
    };
    let (agent, runtime) = (read("tinylet.init"), read("containerd.init"));
    assert!(
        number(&agent, "START") > number(&runtime, "START"),
        "agent starts first"
    );
    assert!(
        number(&agent, "STOP") < number(&runtime, "STOP"),
        "runtime stops first"
    );
    for text in [&agent, &runtime] {
        assert!(text.starts_with("#!/bin/sh /etc/rc.common\n"));
        assert!(text.contains("\nUSE_PROCD=1\n"));
    }
}
