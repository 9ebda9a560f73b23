//! `tinylet apply -f FILE|DIR|- [--validate=strict|warn|ignore]`: create or update pods,
//! configmaps and secrets in the store, printing `KIND/NAME created|configured|unchanged|
//! replaced` per object, as kubectl does. A file is JSON or YAML (by extension; stdin by
//! content), may hold several YAML documents and `kind: List`s; a directory applies its
//! manifest files ([`super::manifest_files`]).
//!
//! Every manifest is parsed and validated before anything is stored; an object the
//! model refuses is reported with every problem it has, one `error:` line each (exit 2),
//! and is not stored. A field no v1 object has (a typo) is a `Warning: unknown field`
//! line, as kubectl prints it; `--validate=strict` refuses the object instead, with its
//! other errors. The valid objects are still applied (kubectl's behaviour), and the exit
//! code reports the failures.

use super::args::Args;
use super::config_file::{self, Access};
use super::output::emit;
use super::{manifest_files, CliError};
use crate::model::manifests::{format_of, parse_manifests_checked, Parsed};
use crate::model::Object;
use crate::store::{Kind, Store};

const VALUE_OPTS: &[&str] = &["f", "filename", "config", "state-dir"];
const FLAGS: &[&str] = &["validate"];

/// What `--validate` does with fields no v1 object has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Validation {
    /// A warning per field (the default).
    Warn,
    /// The object is refused.
    Strict,
    /// Nothing said.
    Ignore,
}

impl Validation {
    /// kubectl's values: `strict` (or `true`, or the flag alone), `warn`, `ignore` (or
    /// `false`).
    fn of(args: &Args) -> Result<Validation, CliError> {
        match args.value(&["validate"]) {
            None if args.flag(&["validate"]) => Ok(Validation::Strict),
            None | Some("warn") => Ok(Validation::Warn),
            Some("strict" | "true") => Ok(Validation::Strict),
            Some("ignore" | "false") => Ok(Validation::Ignore),
            Some(other) => Err(CliError::usage(format!(
                "--validate: expected strict, warn or ignore, got {other:?}"
            ))),
        }
    }
}

/// An object that was not applied: the exit code it calls for and its messages.
struct Failure {
    code: i32,
    lines: Vec<String>,
}

/// Runs `apply` with the words after the command name.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, VALUE_OPTS)?;
    let known: Vec<&str> = VALUE_OPTS.iter().chain(FLAGS).copied().collect();
    args.only(&known)?;
    if let Some(extra) = args.positional.first() {
        return Err(CliError::usage(format!(
            "apply: unexpected argument {extra:?}; use apply -f FILE"
        )));
    }
    let src = args.value(&["f", "filename"]).ok_or_else(|| {
        CliError::usage("apply: -f FILE is required (a file, a directory, or - for stdin)")
    })?;
    let validation = Validation::of(&args)?;
    let inputs = manifest_files::read(src)?;
    let cfg = config_file::load(&args, Access::Write)?;

    // Parse everything first: a single bad file stores nothing and opens nothing.
    let mut failures = Vec::new();
    let mut objects = Vec::new();
    for (source, bytes) in inputs {
        for parsed in parse_manifests_checked(&source, &bytes, format_of(&source, &bytes)) {
            match checked(parsed, validation) {
                Ok(o) => objects.push(o),
                Err(lines) => failures.push(Failure { code: 2, lines }),
            }
        }
    }
    if !objects.is_empty() {
        let mut store = Store::open(&cfg).map_err(|e| CliError::failed(e.to_string()))?;
        for obj in objects {
            let (kind, name) = (Kind::of(&obj), obj.name().to_string());
            match store.apply(obj) {
                Ok(applied) => emit(&format!("{kind}/{name} {}\n", applied.verb())),
                Err(e) => failures.push(Failure {
                    code: 1,
                    lines: vec![format!("{kind}/{name}: {e}")],
                }),
            }
        }
    }
    finish(failures)
}

/// The object of `p`, its unknown fields said as `validation` wants; else every message
/// of why it is refused.
fn checked(p: Parsed, validation: Validation) -> Result<Object, Vec<String>> {
    match validation {
        Validation::Strict if !p.unknown.is_empty() => {
            let label = &p.label;
            let mut lines: Vec<String> = p
                .unknown
                .iter()
                .map(|f| format!("{label}: unknown field {f:?}"))
                .collect();
            if let Err(e) = p.object {
                lines.extend(e.messages);
            }
            return Err(lines);
        }
        Validation::Warn => {
            for f in &p.unknown {
                eprintln!("Warning: unknown field {f:?} in {}", p.label);
            }
        }
        _ => {}
    }
    p.object.map_err(|e| e.messages)
}

/// Prints every message, one `error:` line each; with several objects refused, the
/// summary is the error returned, with the worst exit code (1 if any store operation
/// failed, else 2).
fn finish(failures: Vec<Failure>) -> Result<(), CliError> {
    for line in failures.iter().flat_map(|f| &f.lines) {
        eprintln!("error: {line}");
    }
    let code = failures.iter().map(|f| f.code).min().unwrap_or(0);
    match failures.len() {
        0 => Ok(()),
        1 => Err(CliError::said(code)),
        n => Err(CliError {
            code,
            msg: format!("{n} manifests were not applied"),
        }),
    }
}
