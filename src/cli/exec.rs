//! `tinylet exec NS/NAME [-c C] [-i] [-t] -- CMD...`: runs a command in a pod's
//! container and relays its output and exit code. The plain form uses ExecSync (one
//! call, output collected, a `--timeout`); `-i`/`-t` stream through CRI `Exec` and the
//! runtime's streaming server (`exec_stream.rs`).

use super::args::Args;
use super::config_file::{self, Access};
use super::{CliError, GLOBAL_VALUE_OPTS};
use crate::cri::{pb, CriClient};
use crate::kuberuntime::labels;
use crate::store::Kind;
use std::collections::BTreeMap;
use std::io::Write;

const VALUE_OPTS: &[&str] = &["config", "state-dir", "c", "container", "timeout"];
const STDIN_FLAGS: &[&str] = &["i", "stdin", "it", "ti"];
const TTY_FLAGS: &[&str] = &["t", "tty", "it", "ti"];

/// `tinylet exec NS/NAME [-c CONTAINER] -- CMD...`: runs a command in a container.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, VALUE_OPTS)?;
    let known: Vec<&str> = [VALUE_OPTS, STDIN_FLAGS, TTY_FLAGS].concat();
    args.only(&known)?;
    let streams = super::exec_stream::Streams {
        stdin: args.flag(STDIN_FLAGS),
        tty: args.flag(TTY_FLAGS),
    };
    let streaming = streams.stdin || streams.tty;
    if streaming && args.value(&["timeout"]).is_some() {
        return Err(CliError::usage(
            "--timeout is for the plain form (ExecSync); -i/-t sessions end with the command",
        ));
    }
    let _ = GLOBAL_VALUE_OPTS;
    let target = args.positional.first().ok_or_else(|| {
        CliError::usage("usage: tinylet exec NS/NAME [-c CONTAINER] [-i] [-t] -- CMD...")
    })?;
    if args.rest.is_empty() {
        return Err(CliError::usage(
            "no command given: tinylet exec NS/NAME -- CMD...",
        ));
    }
    let (ns, name) = target.split_once('/').unwrap_or(("default", target));
    let cfg = config_file::load(&args, Access::Read)?;
    // Reading only: no directory is created (a typo in --state-dir creates nothing).
    let mut store = crate::store::Store::open_read_only(&cfg);
    let entry = store
        .get(Kind::Pod, ns, name)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let Some(crate::model::Object::Pod(pod)) = entry.map(|e| e.object) else {
        return Err(CliError::not_found(format!("pod {ns}/{name} not found")));
    };
    let container = match args.value(&["c", "container"]) {
        Some(c) => c.to_string(),
        None if pod.spec.containers.len() == 1 => pod.spec.containers[0].name.clone(),
        None => {
            let names: Vec<&str> = pod
                .spec
                .containers
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            return Err(CliError::usage(format!(
                "pod {ns}/{name} has several containers, choose one with -c: {}",
                names.join(" ")
            )));
        }
    };
    let timeout = args
        .value(&["timeout"])
        .map(crate::config::parse_duration)
        .transpose()
        .map_err(|e| CliError::usage(e.to_string()))?;
    let cri = CriClient::from_config(&cfg).map_err(|e| CliError::usage(e.to_string()))?;
    let uid = pod.metadata.uid.clone();
    let cmd = args.rest.clone();
    let (pod_name, ns_name) = (name.to_string(), ns.to_string());
    let result = crate::rt::block_on(async move {
        let filter = pb::ContainerFilter {
            state: Some(pb::ContainerStateValue {
                state: pb::ContainerState::ContainerRunning as i32,
            }),
            label_selector: BTreeMap::from([
                (labels::POD_UID.to_string(), uid),
                (labels::CONTAINER_NAME.to_string(), container.clone()),
            ]),
            ..Default::default()
        };
        let running = cri
            .runtime
            .list_containers(Some(filter))
            .await
            .map_err(|e| CliError::failed(e.to_string()))?;
        let Some(c) = running.first() else {
            return Err(CliError::failed(format!(
                "container {container} of pod {ns}/{name} is not running"
            )));
        };
        if !streaming {
            let out = cri
                .runtime
                .exec_sync(&c.id, cmd, timeout)
                .await
                .map_err(|e| CliError::failed(e.to_string()))?;
            let _ = std::io::stdout().write_all(&out.stdout);
            let _ = std::io::stderr().write_all(&out.stderr);
            return Ok(out.exit_code);
        }
        let req = pb::ExecRequest {
            container_id: c.id.clone(),
            cmd,
            tty: streams.tty,
            stdin: streams.stdin,
            stdout: true,
            // CRI: with a TTY, stderr must be false (the terminal merges them).
            stderr: !streams.tty,
        };
        let url = cri.runtime.exec(req).await.map_err(|e| {
            CliError::failed(format!(
                "runtime refused the exec in {container} of pod {ns_name}/{pod_name}: {e}"
            ))
        })?;
        super::exec_stream::run(&url, streams).await
    });
    match result? {
        0 => Ok(()),
        code => Err(CliError {
            code,
            msg: format!("command exited with {code}"),
        }),
    }
}
