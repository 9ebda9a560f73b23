//! The `tinylet` subcommands. Each lives in its own file; this file only dispatches and
//! owns what they share: error/exit-code conventions (config loading: [`config_file`]).
//!
//! Exit codes: 0 success, 1 the operation failed, 2 usage error (bad arguments or bad
//! input file), 3 the named object does not exist.

pub mod apply;
pub mod args;
pub mod check_config;
pub mod config_file;
pub mod cri;
pub mod damaged;
pub mod delete;
pub mod describe;
pub mod exec;
pub mod exec_stream;
pub mod exec_tty;
pub mod get;
pub mod help;
pub mod logs;
pub mod manifest_files;
pub mod output;
pub mod pod_summary;
pub mod run;
pub mod tabbed;
pub mod table;
pub mod terminating;
pub mod watch;

/// An error to print on stderr, with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    /// The process exit code.
    pub code: i32,
    /// The message.
    pub msg: String,
}

impl CliError {
    /// Wrong usage (exit code 2).
    pub fn usage(msg: impl Into<String>) -> Self {
        CliError {
            code: 2,
            msg: msg.into(),
        }
    }
    /// The command failed (exit code 1).
    pub fn failed(msg: impl Into<String>) -> Self {
        CliError {
            code: 1,
            msg: msg.into(),
        }
    }
    /// Exit code `code`, its messages printed already.
    pub fn said(code: i32) -> Self {
        CliError {
            code,
            msg: String::new(),
        }
    }
    /// The object named does not exist (exit code 3).
    pub fn not_found(msg: impl Into<String>) -> Self {
        CliError {
            code: 3,
            msg: msg.into(),
        }
    }
}

/// Options every subcommand accepts.
pub const GLOBAL_VALUE_OPTS: &[&str] = &["config", "state-dir"];

use help::USAGE;

/// Runs the command line `args` (without the program name); returns the exit code.
///
/// Every subcommand's `run` is `#[inline(never)]`: inlined here, their locals (the
/// futures they block on are large) made this one frame 360 KB, and the stack probe
/// touches every page of a frame on entry, so even `tinylet run` kept 360 KB of
/// untouched-since stack resident for its whole life.
pub fn main(args: Vec<String>) -> i32 {
    let Some((cmd, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return 2;
    };
    if help::asked(rest) {
        return match help::of(cmd) {
            Some(text) => {
                output::emit(text);
                0
            }
            None => {
                eprint!("error: unknown command {cmd:?}\n{USAGE}");
                2
            }
        };
    }
    // The agent logs at its config's level; operator commands only warn.
    if cmd != "run" {
        init_logging("warn");
    }
    let result = match cmd.as_str() {
        "run" => run::run(rest),
        "exec" => exec::run(rest),
        "version" | "--version" | "-V" => {
            output::emit(concat!("tinylet ", env!("CARGO_PKG_VERSION"), "\n"));
            Ok(())
        }
        "check-config" => check_config::run(rest),
        "apply" => apply::run(rest),
        "delete" => delete::run(rest),
        "get" => get::run(rest),
        "describe" => describe::run(rest),
        "logs" => logs::run(rest),
        "help" | "--help" | "-h" => match rest.first() {
            None => {
                output::emit(USAGE);
                Ok(())
            }
            Some(c) => help::of(c)
                .map(output::emit)
                .ok_or_else(|| CliError::usage(format!("unknown command {c:?}\n{USAGE}"))),
        },
        "cri" => cri::run(rest),
        other => Err(CliError::usage(format!(
            "unknown command {other:?}\n{USAGE}"
        ))),
    };
    let _ = rest;
    match result {
        Ok(()) => 0,
        Err(e) => {
            if !e.msg.is_empty() {
                eprintln!("error: {}", e.msg);
            }
            e.code
        }
    }
}

/// Logs go to stderr through env_logger; RUST_LOG overrides the default level. Each
/// line starts with an RFC 3339 UTC time with milliseconds, formatted here: env_logger's
/// own timestamps need its `humantime` feature (a date-time crate), for one format.
pub fn init_logging(default_level: &str) {
    use std::io::Write;
    let env = env_logger::Env::default().default_filter_or(default_level);
    let _ = env_logger::Builder::from_env(env)
        .format(|buf, r| {
            let now = crate::model::time::format_rfc3339_millis(std::time::SystemTime::now());
            let (level, target) = (r.level(), r.target());
            writeln!(buf, "[{now} {level:<5} {target}] {}", r.args())
        })
        .try_init();
}
