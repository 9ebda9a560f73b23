//! `tinylet exec NS/NAME [-c C] -- CMD...`: runs a command in a pod's container through
//! ExecSync and relays its output and exit code.

use super::args::Args;
use super::{load_config, CliError, GLOBAL_VALUE_OPTS};
use crate::cri::{pb, CriClient};
use crate::kuberuntime::labels;
use crate::store::Kind;
use std::collections::BTreeMap;
use std::io::Write;

const VALUE_OPTS: &[&str] = &["config", "state-dir", "c", "container", "timeout"];

/// `tinylet exec NS/NAME [-c CONTAINER] -- CMD...`: runs a command in a container.
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, VALUE_OPTS)?;
    args.only(VALUE_OPTS)?;
    let _ = GLOBAL_VALUE_OPTS;
    let target = args
        .positional
        .first()
        .ok_or_else(|| CliError::usage("usage: tinylet exec NS/NAME [-c CONTAINER] -- CMD..."))?;
    if args.rest.is_empty() {
        return Err(CliError::usage(
            "no command given: tinylet exec NS/NAME -- CMD...",
        ));
    }
    let (ns, name) = target.split_once('/').unwrap_or(("default", target));
    let cfg = load_config(&args)?;
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
    let out = crate::rt::block_on(async move {
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
        cri.runtime
            .exec_sync(&c.id, cmd, timeout)
            .await
            .map_err(|e| CliError::failed(e.to_string()))
    })?;
    let _ = std::io::stdout().write_all(&out.stdout);
    let _ = std::io::stderr().write_all(&out.stderr);
    if out.exit_code != 0 {
        return Err(CliError {
            code: out.exit_code,
            msg: format!("command exited with {}", out.exit_code),
        });
    }
    Ok(())
}
