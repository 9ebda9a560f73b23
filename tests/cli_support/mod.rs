//! What the CLI tests (`tests/cli_*.rs`) share: a scratch directory removed on drop,
//! and the built `tinylet` run with arguments and stdin, alone or on the scratch's state
//! directory and config. Each test file does `mod cli_support;` and uses what it needs.

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// A directory under the system temp dir, removed (with everything in it) on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// An empty `tinylet-cli-TAG-PID` (emptied first if a crashed run left it).
    pub fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("tinylet-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    /// A scratch directory with a config of no manifest directories.
    pub fn with_config(tag: &str) -> Scratch {
        let s = Scratch::new(tag);
        s.file("config.json", "{\"manifestDirs\":[]}");
        s
    }

    /// Its state directory (not created).
    pub fn state(&self) -> String {
        self.path("state")
    }

    /// `name` under it.
    pub fn path(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    /// Writes `text` to `name` under it (parent directories created); returns the path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a run printed and how it exited (-1: killed by a signal).
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The built binary, with no `RUST_LOG` or `TINYLET_CONFIG` from the caller's
/// environment.
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tinylet"));
    c.env_remove("RUST_LOG").env_remove("TINYLET_CONFIG");
    c
}

/// Runs `tinylet ARGS` with no stdin.
pub fn output(args: &[&str]) -> Output {
    command().args(args).output().unwrap()
}

/// Bytes as text, lossily.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `PREFIX... tinylet ARGS` (a prefix such as prlimit, or none), feeding `stdin`.
pub fn run_with(prefix: &[&str], args: &[&str], stdin: &[u8]) -> Out {
    let mut child = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(env!("CARGO_BIN_EXE_tinylet"));
            c.env_remove("RUST_LOG").env_remove("TINYLET_CONFIG");
            c
        }
        None => command(),
    }
    .args(args)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut input = child.stdin.take().unwrap();
    // A writer thread: a large input must not deadlock against unread output.
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: text(&out.stdout),
        stderr: text(&out.stderr),
    }
}

/// Runs `tinylet ARGS`, feeding `stdin`.
pub fn run(args: &[&str], stdin: &str) -> Out {
    run_with(&[], args, stdin.as_bytes())
}

/// `PREFIX... tinylet ARGS --state-dir S/state --config S/config.json` with `stdin`;
/// the config (no manifest directories) is written first when missing.
pub fn tl_with(prefix: &[&str], s: &Scratch, args: &[&str], stdin: &[u8]) -> Out {
    let config = s.0.join("config.json");
    if !config.exists() {
        std::fs::write(&config, "{\"manifestDirs\":[]}").unwrap();
    }
    let (state, config) = (s.state(), s.path("config.json"));
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--state-dir", &state, "--config", &config]);
    run_with(prefix, &all, stdin)
}

/// `tinylet ARGS` on the scratch's state directory and config.
pub fn tl(s: &Scratch, args: &[&str]) -> Out {
    tl_with(&[], s, args, b"")
}

/// As [`tl`], feeding `stdin`.
pub fn tl_in(s: &Scratch, args: &[&str], stdin: &str) -> Out {
    tl_with(&[], s, args, stdin.as_bytes())
}
