//! The set-up scripts a new user runs through `make demo` and `make test`, checked
//! without touching the machine: apt is a stub on PATH, apt's configuration a scratch
//! directory, and functions of the larger scripts are run on their own.
//!
//! - `tests/harness/apt-sources.sh` derives entries from the machine's own sources;
//! - `scripts/long-step.sh` says a step is still going when nobody sees a progress bar;
//! - `tests/harness/install-deps.sh --demo` installs what the demo runs, no more;
//! - `scripts/demo.sh` ends with the line to paste; `tests/arm_e2e/run.sh`'s
//!   `tinylet_binary` prints a path and nothing else on stdout.

mod cli_support;

use cli_support::Scratch;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Writes `text` to `name` under the scratch directory, mode 0755; returns the path.
fn executable(d: &Scratch, name: &str, text: &str) -> String {
    let p = d.file(name, text);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `bash -c SCRIPT` with `env`, stdout and stderr captured (not a terminal).
fn bash(script: &str, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("bash");
    c.arg("-c").arg(script).current_dir(ROOT);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The definition of shell function `name` in `script`: its one line, or from `name() {`
/// to the `}` that closes it at the start of a line.
fn function(script: &str, name: &str) -> String {
    let text = std::fs::read_to_string(Path::new(ROOT).join(script)).unwrap();
    let start = text
        .find(&format!("\n{name}() {{"))
        .unwrap_or_else(|| panic!("{name} not in {script}"));
    let rest = &text[start + 1..];
    let first = rest.lines().next().unwrap_or_default();
    if first.ends_with('}') {
        return first.to_string();
    }
    let end = rest.find("\n}\n").unwrap() + 3;
    rest[..end].to_string()
}

#[test]
fn apt_sources_become_entries_of_the_type_asked_with_the_same_archives() {
    let d = Scratch::new("setup-apt");
    d.file(
        "sources.list",
        "# a comment\ndeb http://mirror.test/debian bookworm main contrib # why\n\
         deb-src http://src.test/ bookworm main\n\
         deb [arch=amd64 signed-by=/k.gpg] http://proxy.test:3142/sec bookworm-security main\n",
    );
    d.file(
        "sources.list.d/a.sources",
        "Types: deb deb-src\nURIs: http://one.test/debian\nSuites: bookworm\nComponents: main\n\
         Architectures: amd64\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n \
         -----END PGP PUBLIC KEY BLOCK-----\n\n\
         Enabled: no\nTypes: deb\nURIs: http://off.test/\nSuites: x\n\n\
         Types: deb-src\nURIs: http://only-src.test/\nSuites: y\n",
    );
    d.file(
        "sources.list.d/old.list.disabled",
        "deb http://disabled.test/ x main\n",
    );
    let apt_etc = d.0.display().to_string();
    let out = bash(
        "tests/harness/apt-sources.sh deb-src",
        &[("APT_ETC", &apt_etc)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "Types: deb-src\nURIs: http://one.test/debian\nSuites: bookworm\nComponents: main\n\
         Signed-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n -----END PGP PUBLIC KEY BLOCK-----\n\n\
         Types: deb-src\nURIs: http://mirror.test/debian\nSuites: bookworm\nComponents: main contrib\n\n\
         Types: deb-src\nURIs: http://proxy.test:3142/sec\nSuites: bookworm-security\n\
         Components: main\nSigned-By: /k.gpg\n\n"
    );
    let out = bash("tests/harness/apt-sources.sh deb", &[("APT_ETC", &apt_etc)]);
    assert!(text(&out.stdout).starts_with("Types: deb\nURIs: http://one.test/debian\n"));
    let out = bash("tests/harness/apt-sources.sh", &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn no_archive_address_is_written_in_the_project() {
    let out = Command::new("git")
        .args(["grep", "-nIE", r"deb\.debian\.org|security\.debian\.org|ftp\.[a-z.]*debian\.org|https?://[^ ]*debian\.(org|net)"])
        .current_dir(ROOT)
        .output()
        .unwrap();
    // The pattern is spelled here and nowhere else.
    let found: Vec<String> = text(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("tests/setup_scripts.rs:"))
        .map(String::from)
        .collect();
    assert!(found.is_empty(), "archive addresses: {found:#?}");
}

#[test]
fn a_long_step_says_it_is_still_going_and_shows_its_log_when_it_fails() {
    let d = Scratch::new("setup-long-step");
    let log = d.0.join("step.log").display().to_string();
    let out = bash(
        r#". scripts/long-step.sh; long_step "$LOG" "test: sleeping" sh -c 'echo working; sleep 3; echo done'"#,
        &[("LOG", &log), ("LONG_STEP_EVERY", "1")],
    );
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty(),
        "stdout is the caller's: {}",
        text(&out.stdout)
    );
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!("test: sleeping (log: {log})\n")),
        "{err}"
    );
    assert!(
        err.matches("test: sleeping: still running (").count() >= 1,
        "{err}"
    );
    assert!(
        err.contains("still running (1s) working") || err.contains("s) working"),
        "{err}"
    );
    assert!(err.contains("test: sleeping: done in "), "{err}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "working\ndone\n");
    let out = bash(
        r#". scripts/long-step.sh; long_step "$LOG" "test: failing" sh -c 'echo why it failed; exit 7'"#,
        &[("LOG", &log)],
    );
    assert_eq!(out.status.code(), Some(7));
    let err = text(&out.stderr);
    assert!(err.contains("test: failing: failed (exit 7)"), "{err}");
    assert!(err.ends_with("why it failed\n"), "{err}");
}

#[test]
fn install_deps_for_the_demo_installs_only_what_the_demo_runs_quietly() {
    let d = Scratch::new("setup-deps");
    let calls = d.0.join("calls").display().to_string();
    // Nothing installed; apt records its arguments and prints what apt prints.
    executable(&d, "bin/dpkg-query", "#!/bin/sh\nexit 0\n");
    executable(
        &d,
        "bin/apt-get",
        &format!("#!/bin/sh\necho \"$*\" >>{calls}\necho 'Reading package lists...'\n"),
    );
    let path = format!(
        "{}:{}",
        d.0.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let apt_log = d.0.join("apt.log").display().to_string();
    let policy = d.0.join("policy-rc.d").display().to_string();
    let out = bash(
        "tests/harness/install-deps.sh --demo",
        &[
            ("PATH", &path),
            ("APT_LOG", &apt_log),
            ("POLICY_RC_D", &policy),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let calls = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(
        calls,
        "update -q\ninstall -y -q --no-install-recommends containerd runc \
         containernetworking-plugins iptables busybox-static gcc libc6-dev iproute2 file \
         util-linux\n"
    );
    let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        !shown.contains("Reading package lists"),
        "apt's noise: {shown}"
    );
    assert!(
        !Path::new(&policy).exists(),
        "the temporary policy-rc.d is gone"
    );
}

#[test]
fn the_demo_ends_with_the_line_to_paste() {
    let script = format!(
        "{}\nDIR=/tmp/tinylet-dev CONFIG=/tmp/tinylet-dev/tinylet-demo.json \
         BIN=/src/target/release/tinylet POD=default/hello\nending 42",
        function("scripts/demo.sh", "ending")
    );
    let out = bash(&script, &[]);
    let said = text(&out.stdout);
    assert!(
        said.lines().any(|l| l
            == "export TINYLET_CONFIG=/tmp/tinylet-dev/tinylet-demo.json PATH=\"/src/target/release:$PATH\""),
        "{said}"
    );
    assert!(said.contains("agent pid 42"), "{said}");
}

#[test]
fn arm_e2e_says_it_builds_on_stderr_and_gives_only_the_path_on_stdout() {
    let d = Scratch::new("setup-arm-e2e");
    let target = "aarch64-unknown-linux-musl";
    let bin = d.0.join(format!("target/cross/{target}/release/tinylet"));
    executable(&d, "cross/build.sh", &format!(
            "#!/bin/sh\necho 'building... (stdout of the build)'\nmkdir -p {dir}\ntouch {bin}\nchmod 755 {bin}\n",
            dir = bin.parent().unwrap().display(),
            bin = bin.display()
        ));
    d.file("src/lib.rs", "");
    d.file("Cargo.toml", "");
    let script = format!(
        "{}\n{}\nstart=$(date +%s) ROOT={} TARGET={target}\nout=$(tinylet_binary)\nprintf '%s' \"$out\"",
        function("tests/arm_e2e/run.sh", "say"),
        function("tests/arm_e2e/run.sh", "tinylet_binary"),
        d.0.display()
    );
    let out = bash(&script, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), bin.display().to_string());
    assert!(
        text(&out.stderr).contains("building the static"),
        "{}",
        text(&out.stderr)
    );
}
