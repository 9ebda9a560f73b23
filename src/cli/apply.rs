//! `tinylet apply -f FILE|DIR|-`: create or update pods, configmaps and secrets in the
//! store, printing `KIND/NAME created|configured|unchanged|replaced` per object, as
//! kubectl does. A directory applies every `*.json` file in it, in name order.
//!
//! Every manifest is parsed and validated before anything is stored; a file the model
//! refuses is reported with its message (exit 2) and nothing of it is stored. With a
//! directory the valid files are still applied (kubectl's behaviour), and the exit code
//! reports the failures.

use super::args::Args;
use super::output::emit;
use super::{load_config, CliError};
use crate::model::{parse_object, MAX_MANIFEST_BYTES};
use crate::store::{Kind, Store};
use std::io::Read;
use std::path::Path;

const VALUE_OPTS: &[&str] = &["f", "filename", "config", "state-dir"];

/// Runs `apply` with the words after the command name.
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
        match parse_object(&source, &bytes) {
            Ok(o) => objects.push(o),
            Err(e) => failures.push(CliError::usage(e.to_string())),
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

/// The manifests named by `-f`: stdin, one file, or the `*.json` files of a directory.
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
        let mut files: Vec<_> = std::fs::read_dir(path)
            .map_err(|e| CliError::usage(format!("{src}: {e}")))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default();
                !name.starts_with('.') && name.ends_with(".json") && p.is_file()
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(CliError::usage(format!("{src}: no *.json files to apply")));
        }
        return files.iter().map(|p| read_file(p)).collect();
    }
    Ok(vec![read_file(path)?])
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
