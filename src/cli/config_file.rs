//! Which config file a command uses, as kubectl finds its kubeconfig: `--config FILE`,
//! else the file `$TINYLET_CONFIG` names, else `/etc/tinylet/config.json`. A file named
//! by the flag or the variable must exist. When the default file is missing, a command
//! that only reads (`get`, `logs`, `describe`, `exec`) refuses: the built-in defaults
//! name a state directory no agent uses, and its empty world would look real. The
//! others warn and go on with the defaults; `--state-dir` then says where the state is.

use super::args::Args;
use super::CliError;
use crate::config::{Config, DEFAULT_CONFIG_PATH};
use std::path::PathBuf;

/// The environment variable naming the config file (kubectl's `KUBECONFIG`).
pub const CONFIG_ENV: &str = "TINYLET_CONFIG";

/// What a command does with the state: reading only, or changing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `get`, `logs`, `describe`, `exec`: without a config they would show nothing real.
    Read,
    /// `apply`, `delete`, `cri`, ...: warned, then on the defaults.
    Write,
}

/// Where the config file came from.
enum Source {
    Flag(String),
    Env(String),
    Default,
}

impl Source {
    fn of(args: &Args) -> Source {
        if let Some(path) = args.value(&["config"]) {
            return Source::Flag(path.to_string());
        }
        match std::env::var(CONFIG_ENV) {
            Ok(path) if !path.is_empty() => Source::Env(path),
            _ => Source::Default,
        }
    }
}

/// Whether `--config` or `$TINYLET_CONFIG` names a file (else the default path is used).
pub fn given(args: &Args) -> bool {
    !matches!(Source::of(args), Source::Default)
}

/// Loads the config the command line and environment name (see the module doc) and
/// applies `--state-dir`.
pub fn load(args: &Args, access: Access) -> Result<Config, CliError> {
    let state_dir = args.value(&["state-dir"]);
    let mut cfg = match Source::of(args) {
        Source::Flag(path) => Config::load(&PathBuf::from(path)).map_err(|e| CliError::usage(e.0)),
        Source::Env(path) => Config::load(&PathBuf::from(&path))
            .map_err(|e| CliError::usage(format!("{CONFIG_ENV}: {}", e.0))),
        Source::Default => default_file(access, state_dir.is_some()),
    }?;
    if let Some(dir) = state_dir {
        cfg.state_dir = PathBuf::from(dir);
        cfg.validate()
            .map_err(|e| CliError::usage(format!("--state-dir: {}", e.0)))?;
    }
    Ok(cfg)
}

/// The default file, or what a missing one means for a command of `access`
/// (`state_dir_given`: `--state-dir` says where to read).
fn default_file(access: Access, state_dir_given: bool) -> Result<Config, CliError> {
    let path = PathBuf::from(DEFAULT_CONFIG_PATH);
    if path.exists() {
        return Config::load(&path).map_err(|e| CliError::usage(e.0));
    }
    if access == Access::Read && !state_dir_given {
        return Err(CliError::usage(missing()));
    }
    eprintln!(
        "warning: {DEFAULT_CONFIG_PATH} does not exist; using the built-in defaults \
         (set {CONFIG_ENV} or give --config FILE)"
    );
    Ok(Config::default())
}

/// Why there is no config, and the ways to give one.
pub fn missing() -> String {
    format!(
        "no config: {DEFAULT_CONFIG_PATH} does not exist and {CONFIG_ENV} is not set; \
         point {CONFIG_ENV} at the agent's config (export {CONFIG_ENV}=FILE; `make demo` \
         prints the line for the demo) or give --config FILE"
    )
}
