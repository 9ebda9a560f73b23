//! Which config the CLI uses, as kubectl finds its kubeconfig: `--config`, else the file
//! `TINYLET_CONFIG` names, else `/etc/tinylet/config.json`; without any, the read-only
//! commands refuse (exit 2) instead of showing the empty world of the defaults.

mod cli_support;

use cli_support::*;
use std::path::Path;

/// `tinylet ARGS` with `TINYLET_CONFIG` set to `config` (or unset).
fn with_env(config: Option<&str>, args: &[&str]) -> Out {
    let mut c = command();
    if let Some(path) = config {
        c.env("TINYLET_CONFIG", path);
    }
    let out = c.args(args).output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: text(&out.stdout),
        stderr: text(&out.stderr),
    }
}

/// A config whose state directory holds pod default/NAME.
fn config_with_pod(s: &Scratch, file: &str, state: &str, name: &str) -> String {
    let config = s.file(
        file,
        &format!(r#"{{"stateDir":{:?},"manifestDirs":[]}}"#, s.path(state)),
    );
    let pod = format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},"spec":{{"containers":[{{"name":"c","image":"busybox"}}]}}}}"#
    );
    let f = s.file(&format!("{name}.json"), &pod);
    let out = with_env(Some(&config), &["apply", "-f", &f]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    config
}

#[test]
fn tinylet_config_names_the_config_and_the_flag_wins() {
    let s = Scratch::new("env-config");
    let env = config_with_pod(&s, "env.json", "state-env", "from-env");
    let flag = config_with_pod(&s, "flag.json", "state-flag", "from-flag");
    let out = with_env(Some(&env), &["get", "pods"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("from-env"), "{}", out.stdout);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let out = with_env(Some(&env), &["get", "pods", "--config", &flag]);
    assert!(out.stdout.contains("from-flag") && !out.stdout.contains("from-env"));
    // An empty variable is no variable.
    let out = with_env(Some(""), &["get", "pods", "--config", &flag]);
    assert!(out.stdout.contains("from-flag"), "{}", out.stderr);
}

#[test]
fn a_config_named_but_missing_is_an_error() {
    let s = Scratch::new("env-missing");
    let missing = s.path("nope.json");
    let out = with_env(Some(&missing), &["get", "pods"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: TINYLET_CONFIG: ") && out.stderr.contains("nope.json"),
        "{}",
        out.stderr
    );
    let out = with_env(Some(&missing), &["apply", "-f", "-"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[test]
fn read_only_commands_without_any_config_fail_clearly() {
    if Path::new("/etc/tinylet/config.json").exists() {
        eprintln!("skipped: this machine has /etc/tinylet/config.json");
        return;
    }
    for args in [
        &["get", "pods"][..],
        &["get", "node"],
        &["logs", "default/hello"],
        &["describe", "pod", "default/hello"],
        &["exec", "default/hello", "--", "true"],
    ] {
        let out = with_env(None, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(
            out.stderr
                .starts_with("error: no config: /etc/tinylet/config.json does not exist")
                && out.stderr.contains("TINYLET_CONFIG"),
            "{args:?}: {}",
            out.stderr
        );
    }
}
