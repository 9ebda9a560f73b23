//! `tinylet apply -f FILE|DIR|-`: create or update pods, configmaps and secrets in the
//! store, printing `KIND/NAME created|configured|unchanged|replaced` per object, as
//! kubectl does. A file is JSON or YAML (by extension; stdin by content), may hold
//! several YAML documents and `kind: List`s. A directory applies every `*.json`,
//! `*.yaml` and `*.yml` file in it, in name order, and names on stderr what it skips.
//!
//! Every manifest is parsed and validated before anything is stored; an object the
//! model refuses is reported with its message (exit 2) and is not stored. The valid
//! objects are still applied (kubectl's behaviour), and the exit code reports the
//! failures.

use super::args::Args;
use super::output::emit;
use super::{load_config, CliError};
use crate::model::manifests::{format_of, is_manifest_name, parse_manifests};
use crate::model::MAX_MANIFEST_BYTES;
use crate::store::{Kind, Store};
use std::io::Read;
use std::path::Path;

const VALUE_OPTS: &[&str] = &["f", "filename", "config", "state-dir"];

/// Runs `apply` with the words after the command name.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, VALUE_OPTS)?;
    args.only(VALUE_OPTS)?;
    if let Some(extra) = args.positional.first() {
        return Err(CliError::usage(format!(
            "apply: unexpected argument {extra:?}; use apply -f FILE"
        )));
    }
    let src = args.value(&["f", "filename"]).ok_or_else(|| {
        CliError::usage("apply: -f FILE is required (a file, a directory, or - for stdin)")
    })?;
    let inputs = read_inputs(src)?;
    let cfg = load_config(&args)?;

    // Parse everything first: a single bad file stores nothing and opens nothing.
    let mut failures: Vec<CliError> = Vec::new();
    let mut objects = Vec::new();
    for (source, bytes) in inputs {
        for parsed in parse_manifests(&source, &bytes, format_of(&source, &bytes)) {
            match parsed {
                Ok(o) => objects.push(o),
                Err(e) => failures.push(CliError::usage(e.to_string())),
            }
        }
    }
    if !objects.is_empty() {
        let mut store = Store::open(&cfg).map_err(|e| CliError::failed(e.to_string()))?;
        for obj in objects {
            let (kind, name) = (Kind::of(&obj), obj.name().to_string());
            match store.apply(obj) {
                Ok(applied) => emit(&format!("{kind}/{name} {}\n", applied.verb())),
                Err(e) => failures.push(CliError::failed(format!("{kind}/{name}: {e}"))),
            }
        }
    }
    finish(failures)
}

/// One failure is returned as is; several are printed here and summed up, with the
/// worst exit code (1 if any store operation failed, else 2).
fn finish(mut failures: Vec<CliError>) -> Result<(), CliError> {
    if failures.len() <= 1 {
        return failures.pop().map_or(Ok(()), Err);
    }
    for f in &failures {
        eprintln!("error: {}", f.msg);
    }
    let code = if failures.iter().any(|f| f.code == 1) {
        1
    } else {
        2
    };
    Err(CliError {
        code,
        msg: format!("{} manifests were not applied", failures.len()),
    })
}

/// The manifests named by `-f`: stdin, one file, or the manifest files of a directory.
fn read_inputs(src: &str) -> Result<Vec<(String, Vec<u8>)>, CliError> {
    if src == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_MANIFEST_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::failed(format!("reading stdin: {e}")))?;
        return Ok(vec![("-".into(), bytes)]);
    }
    let path = Path::new(src);
    if path.is_dir() {
        let files = dir_manifests(path)?;
        if files.is_empty() {
            return Err(CliError::usage(format!(
                "{src}: no *.json, *.yaml or *.yml files to apply"
            )));
        }
        return files.iter().map(|p| read_file(p)).collect();
    }
    Ok(vec![read_file(path)?])
}

/// The manifest files of `dir` in name order; every other entry but dotfiles is named
/// on stderr as skipped, so nothing is left out unnoticed.
fn dir_manifests(dir: &Path) -> Result<Vec<std::path::PathBuf>, CliError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| CliError::usage(format!("{}: {e}", dir.display())))?;
    let mut files = Vec::new();
    for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if is_manifest_name(&name) && p.is_file() {
            files.push(p);
        } else {
            eprintln!(
                "warning: skipping {}: not a *.json, *.yaml or *.yml file",
                p.display()
            );
        }
    }
    files.sort();
    Ok(files)
}

/// Reads one manifest, refusing files over the model's size limit without reading them
/// whole.
fn read_file(path: &Path) -> Result<(String, Vec<u8>), CliError> {
    let source = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| CliError::usage(format!("{source}: {e}")))?;
    let mut bytes = Vec::new();
    f.take(MAX_MANIFEST_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::usage(format!("{source}: {e}")))?;
    Ok((source, bytes))
}
