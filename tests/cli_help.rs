//! The command line as a new user meets it: `--help`/`-h` for every command, top-level
//! help, no silent defaults (a missing default config is said; `run` refuses it), the
//! read-only commands creating no directories, `check-config` naming the node.

mod cli_support;

use cli_support::{output as tinylet, text, Scratch};
use std::path::{Path, PathBuf};

const COMMANDS: &[&str] = &[
    "run",
    "apply",
    "delete",
    "get",
    "describe",
    "logs",
    "exec",
    "cri",
    "check-config",
    "version",
    "help",
];

#[test]
fn every_command_has_help_with_its_flags_and_an_example() {
    let flags: &[(&str, &[&str])] = &[
        ("apply", &["--filename", "--validate"]),
        ("delete", &["--namespace", "--filename"]),
        ("describe", &["--namespace", "events"]),
        (
            "get",
            &[
                "--namespace",
                "--all-namespaces",
                "--output",
                "yaml",
                "wide",
                "--watch",
            ],
        ),
        (
            "logs",
            &[
                "--container",
                "--previous",
                "--follow",
                "--tail",
                "--timestamps",
            ],
        ),
        (
            "exec",
            &[
                "--container",
                "--timeout",
                "--stdin",
                "--tty",
                "-it",
                "--",
                "exit code",
            ],
        ),
        ("cri", &["--all", "--endpoint", "--image-endpoint"]),
        ("check-config", &["--connect", "--state-dir", "nodeName"]),
    ];
    for c in COMMANDS {
        for h in ["--help", "-h"] {
            let out = tinylet(&[c, h]);
            assert_eq!(out.status.code(), Some(0), "{c} {h}");
            let help = text(&out.stdout);
            assert!(
                help.starts_with(&format!("usage: tinylet {c}")),
                "{c}: {help}"
            );
            assert!(help.contains("example: tinylet "), "{c}: {help}");
            for f in flags.iter().filter(|(n, _)| n == c).flat_map(|(_, f)| *f) {
                assert!(help.contains(f), "{c} {h} lacks {f}: {help}");
            }
        }
        let out = tinylet(&["help", c]);
        assert_eq!(out.status.code(), Some(0), "help {c}");
    }
    // After `--`, -h belongs to the command exec runs.
    let out = tinylet(&[
        "exec",
        "ns/p",
        "--config",
        "/nonexistent.json",
        "--",
        "ls",
        "-h",
    ]);
    assert_ne!(out.status.code(), Some(0));
    assert!(!text(&out.stdout).starts_with("usage:"));
}

#[test]
fn top_level_help_lists_commands_global_flags_and_the_exec_rule() {
    for h in ["--help", "-h", "help"] {
        let out = tinylet(&[h]);
        assert_eq!(out.status.code(), Some(0), "{h}");
        let help = text(&out.stdout);
        for c in COMMANDS {
            assert!(help.contains(&format!("\n  {c} ")), "{h} lacks {c}: {help}");
        }
        for g in ["--config FILE", "--state-dir DIR", "before `--` in exec"] {
            assert!(help.contains(g), "{h} lacks {g}: {help}");
        }
    }
    let out = tinylet(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("usage: tinylet"));
}

/// Every path under `dir` (the directory included).
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            out.extend(tree(&e.path()));
        }
    }
    out.sort();
    out
}

#[test]
fn read_only_commands_create_no_directories() {
    let s = Scratch::new("ro");
    let (state, logs) = (s.0.join("state"), s.0.join("logs"));
    let config = s.0.join("config.json");
    let cfg = serde_json::json!({
        "stateDir": state, "podLogsDir": logs, "podsDir": s.0.join("pods"),
        "runtimeEndpoint": format!("unix://{}", s.0.join("none.sock").display()),
        "manifestDirs": [s.0.join("manifests")],
    });
    std::fs::write(&config, cfg.to_string()).unwrap();
    let before = tree(&s.0);
    let c = config.to_str().unwrap();
    let runs: &[&[&str]] = &[
        &["get", "pods", "--config", c],
        &["get", "pods", "-A", "-o", "wide", "--config", c],
        &["get", "pod", "default/x", "-o", "yaml", "--config", c],
        &["get", "configmaps", "--config", c],
        &["get", "node", "--config", c],
        &["logs", "default/x", "--config", c],
        &["exec", "default/x", "--config", c, "--", "true"],
    ];
    for args in runs {
        let out = tinylet(args);
        assert_eq!(
            tree(&s.0),
            before,
            "{args:?} created something: {}",
            text(&out.stderr)
        );
    }
}

/// `tinylet ARGS` as on a machine without `/etc/tinylet/config.json`: where this one has
/// it, in a mount namespace of its own with an empty tmpfs over `/etc/tinylet` (root).
fn without_default_config(args: &[&str]) -> std::process::Output {
    if !Path::new("/etc/tinylet").exists() {
        return tinylet(args);
    }
    std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs none /etc/tinylet && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_tinylet"))
        .args(args)
        .env_remove("TINYLET_CONFIG")
        .output()
        .expect("unshare (util-linux) and root")
}

#[test]
fn a_missing_default_config_is_said_and_refused_by_run() {
    let s = Scratch(std::env::temp_dir().join(format!("tinylet-nocfg-{}", std::process::id())));
    let state = s.0.join("state");
    let tinylet = without_default_config;
    let out = tinylet(&["get", "pods", "--state-dir", state.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(
            "warning: /etc/tinylet/config.json does not exist; using the built-in defaults"
        ),
        "{err}"
    );
    assert!(!state.exists());
    let out = tinylet(&["run", "--state-dir", state.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("/etc/tinylet/config.json does not exist"),
        "{}",
        text(&out.stderr)
    );
    assert!(!state.exists());
}

#[test]
fn check_config_prints_the_effective_node_name() {
    let s = Scratch::new("node");
    let f = s.0.join("c.json");
    std::fs::write(&f, "{}").unwrap();
    let out = tinylet(&["check-config", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(v["nodeName"], host.trim().to_lowercase());
    std::fs::write(&f, r#"{"nodeName":"gw-7"}"#).unwrap();
    let out = tinylet(&["check-config", f.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["nodeName"], "gw-7");
}
