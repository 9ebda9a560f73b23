//! `tinylet logs NS/NAME [-c C] [-p|--previous] [-f|--follow] [--tail N] [--timestamps]`:
//! a container's output from its CRI log files, as `kubectl logs` shows it.
//!
//! The pod's log directory is `podLogsDir/NS_NAME_UID` (the UID from the store), the
//! container's files are `C/N.log` per restart N plus rotated `C/N.log.<time>`. Without
//! `-c`, a pod with one container means that one; otherwise the error lists the names.
//! `--previous` reads the instance before the latest. `-f` follows the latest instance
//! across log rotations until a newer instance appears (the container restarted) or the
//! command is interrupted. Reading needs no runtime: only the files.

use super::args::Args;
use super::config_file::{self, Access};
use super::get::split_ref;
use super::CliError;
use crate::logs::files;
use crate::logs::read::{self, ReadOptions, ReadStats};
use crate::model::Object;
use crate::store::{Kind, Store};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

const VALUE_OPTS: &[&str] = &[
    "c",
    "container",
    "n",
    "namespace",
    "tail",
    "config",
    "state-dir",
];
const FLAGS: &[&str] = &["p", "previous", "f", "follow", "timestamps"];

/// Runs `logs` with the words after the command name.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, VALUE_OPTS)?;
    let known: Vec<&str> = VALUE_OPTS.iter().chain(FLAGS).copied().collect();
    args.only(&known)?;
    let [target] = args.positional.as_slice() else {
        return Err(CliError::usage(
            "usage: tinylet logs NS/NAME [-c CONTAINER] [--previous] [-f] [--tail N] [--timestamps]",
        ));
    };
    let (ns, name) = split_ref(target, args.value(&["n", "namespace"]))?;
    let tail = match args.value(&["tail"]) {
        None => None,
        Some(t) => match t.parse::<i64>() {
            Ok(n) if n < 0 => None, // kubectl: -1 means all
            Ok(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Err(_) => {
                return Err(CliError::usage(format!(
                    "--tail: expected a number, got {t:?}"
                )))
            }
        },
    };
    let opts = ReadOptions {
        tail,
        timestamps: args.flag(&["timestamps"]),
        since: None,
    };
    let previous = args.flag(&["p", "previous"]);
    let follow = args.flag(&["f", "follow"]);
    let cfg = config_file::load(&args, Access::Read)?;
    // Reading only: no directory is created (a typo in --state-dir creates nothing).
    let mut store = Store::open_read_only(&cfg);
    let pod = match store.get(Kind::Pod, &ns, &name) {
        Ok(Some(e)) => match e.object {
            Object::Pod(p) => p,
            _ => return Err(CliError::not_found(format!("pod {ns}/{name} not found"))),
        },
        Ok(None) => return Err(CliError::not_found(format!("pod {ns}/{name} not found"))),
        Err(e) => return Err(CliError::failed(e.to_string())),
    };
    let container = pick_container(&pod, args.value(&["c", "container"]))?;
    let dir = cfg
        .pod_logs_dir
        .join(format!("{ns}_{name}_{}", pod.metadata.uid))
        .join(&container);
    let instance = pick_instance(&dir, previous, &ns, &name, &container)?;
    let files = files::instance_files(&dir, instance)
        .map_err(|e| CliError::failed(format!("{}: {e}", dir.display())))?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let result = if follow && !previous {
        let mut stop = || files::newer_instance(&dir, instance);
        read::follow(&files, &opts, &mut out, &mut stop)
    } else {
        read::read_files(&files, &opts, &mut out)
    };
    let result = result.and_then(|st| out.flush().map(|()| st));
    match result {
        Ok(st) => {
            warn_skipped(&st, &files);
            Ok(())
        }
        // `tinylet logs ... | head`: the reader went away; not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::failed(e.to_string())),
    }
}

/// The container `-c` names (app or init), or the pod's only app container.
fn pick_container(pod: &crate::model::Pod, wanted: Option<&str>) -> Result<String, CliError> {
    let apps: Vec<&str> = pod
        .spec
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let inits: Vec<&str> = pod
        .spec
        .init_containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let pod_name = &pod.metadata.name;
    match wanted {
        Some(c) if apps.contains(&c) || inits.contains(&c) => Ok(c.to_string()),
        Some(c) => Err(CliError::not_found(format!(
            "container {c} is not valid for pod {pod_name}; choose one of: [{}]{}",
            apps.join(" "),
            init_hint(&inits)
        ))),
        None => match apps.as_slice() {
            [only] => Ok(only.to_string()),
            _ => Err(CliError::usage(format!(
                "a container name must be specified for pod {pod_name}, choose one of: [{}]{}",
                apps.join(" "),
                init_hint(&inits)
            ))),
        },
    }
}

fn init_hint(inits: &[&str]) -> String {
    if inits.is_empty() {
        String::new()
    } else {
        format!(" or one of the init containers: [{}]", inits.join(" "))
    }
}

/// The restart count to read: the latest, or the one before it with `--previous`.
fn pick_instance(
    dir: &Path,
    previous: bool,
    ns: &str,
    name: &str,
    c: &str,
) -> Result<u32, CliError> {
    let picked = files::pick_instance(dir, previous)
        .map_err(|e| CliError::failed(format!("{}: {e}", dir.display())))?;
    match (picked, previous) {
        (Some(n), _) => Ok(n),
        (None, true) => Err(CliError::failed(format!(
            "previous terminated container {c:?} in pod {ns}/{name} not found"
        ))),
        (None, false) => Err(CliError::failed(format!(
            "container {c:?} in pod {ns}/{name} has no logs yet (not started?) in {}",
            dir.display()
        ))),
    }
}

fn warn_skipped(st: &ReadStats, files: &[PathBuf]) {
    if st.bad > 0 || st.truncated > 0 {
        log::warn!(
            "skipped {} lines that are not CRI log records and cut {} over-long lines in {}",
            st.bad,
            st.truncated,
            files
                .first()
                .and_then(|f| f.parent())
                .unwrap_or(Path::new(""))
                .display()
        );
    }
}
