//! The runtime's side of the comparisons: the CRI calls the agent makes to start a pod,
//! issued directly with tinylet's CRI client and the same config builders (so the
//! sandbox and container configs are the agent's own), and the restart times read back
//! from ContainerStatus.

use super::node::NS;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use tinylet::cri::{pb, CriClient};
use tinylet::kuberuntime::container::{container_config, ContainerContext};
use tinylet::kuberuntime::dns::ResolvConf;
use tinylet::kuberuntime::env::{Objects, PodFacts};
use tinylet::kuberuntime::labels;
use tinylet::kuberuntime::sandbox::{log_directory, sandbox_config};
use tinylet::kuberuntime::security::SeccompPolicy;
use tinylet::model::{parse_pod, ConfigMap, Pod, Secret};

/// The bench pods refer to no configMap or secret.
struct NoObjects;

impl Objects for NoObjects {
    fn configmap(&self, _: &Pod, _: &str) -> Option<ConfigMap> {
        None
    }
    fn secret(&self, _: &Pod, _: &str) -> Option<Secret> {
        None
    }
}

/// Label key that replaces the pod-uid label on the direct pods: the same amount of
/// work for the runtime, but the agent (which only looks at objects with the uid label)
/// neither adopts nor removes them while it runs beside them.
const DIRECT_UID: &str = "bench.tinylet.io/direct-uid";

/// Moves the pod-uid label of `labels` to [`DIRECT_UID`].
/// The agent mark of the pods started here: no agent's (no state directory has it).
const DIRECT_MARK: &str = "bench-direct";

fn relabel(labels: &mut BTreeMap<String, String>) {
    if let Some(uid) = labels.remove(labels::POD_UID) {
        labels.insert(DIRECT_UID.to_string(), uid);
    }
}

/// Starts the pod of `manifest` as the agent does for a new pod with a present image
/// (RunPodSandbox, ImageStatus, CreateContainer, StartContainer); returns the time
/// taken and the sandbox id.
pub async fn start_pod(
    cri: &CriClient,
    manifest: &serde_json::Value,
    uid: &str,
    dir: &Path,
    resolv: &ResolvConf,
) -> Result<(Duration, String), String> {
    let mut pod =
        parse_pod("direct", manifest.to_string().as_bytes()).map_err(|e| e.to_string())?;
    pod.metadata.uid = uid.to_string();
    let err = |what: &str, e: tinylet::cri::CriError| format!("{what}: {e}");
    let t0 = Instant::now();
    let logs = dir.join("logs");
    std::fs::create_dir_all(log_directory(&logs, &pod)).map_err(|e| e.to_string())?;
    let mut sb_cfg = sandbox_config(&pod, 0, &logs, resolv, DIRECT_MARK);
    relabel(&mut sb_cfg.labels);
    let sb = cri
        .runtime
        .run_pod_sandbox(sb_cfg.clone(), "")
        .await
        .map_err(|e| err("RunPodSandbox", e))?;
    let c = pod
        .spec
        .containers
        .first()
        .ok_or("pod without containers")?;
    let image = cri
        .image
        .image_status(&c.image)
        .await
        .map_err(|e| err("ImageStatus", e))?
        .ok_or_else(|| format!("image {} is not present", c.image))?;
    let facts = PodFacts::default();
    let pods_dir = dir.join("pods");
    let cctx = ContainerContext {
        pods_dir: &pods_dir,
        allowed_host_paths: &[],
        facts: &facts,
        objects: &NoObjects,
        mem_capacity: 1 << 30,
        cluster_domain: "cluster.local",
        // What the agent sends by default (seccompDefault), so both sides do the same work.
        seccomp: SeccompPolicy {
            default_runtime: true,
            profile_root: Path::new("/var/lib/kubelet/seccomp"),
        },
        agent_mark: DIRECT_MARK,
    };
    let mut cfg = container_config(&pod, c, 0, &image.id, &cctx).map_err(|e| e.to_string())?;
    relabel(&mut cfg.labels);
    let id = cri
        .runtime
        .create_container(&sb, cfg, sb_cfg)
        .await
        .map_err(|e| err("CreateContainer", e))?;
    cri.runtime
        .start_container(&id)
        .await
        .map_err(|e| err("StartContainer", e))?;
    Ok((t0.elapsed(), sb))
}

/// Stops and removes sandboxes (with their containers).
pub async fn remove_sandboxes(cri: &CriClient, ids: &[String]) -> Result<(), String> {
    for id in ids {
        cri.runtime
            .stop_pod_sandbox(id)
            .await
            .map_err(|e| format!("StopPodSandbox {id}: {e}"))?;
        cri.runtime
            .remove_pod_sandbox(id)
            .await
            .map_err(|e| format!("RemovePodSandbox {id}: {e}"))?;
    }
    Ok(())
}

/// For pod `name`: the time from its container's first exit (attempt 0 finished_at) to
/// the creation of the restarted container (attempt 1 created_at); None until both exist.
pub async fn first_restart_delay(cri: &CriClient, name: &str) -> Result<Option<Duration>, String> {
    let filter = pb::ContainerFilter {
        label_selector: BTreeMap::from([
            (labels::POD_NAME.to_string(), name.to_string()),
            (labels::POD_NAMESPACE.to_string(), NS.to_string()),
        ]),
        ..Default::default()
    };
    let listed = cri
        .runtime
        .list_containers(Some(filter))
        .await
        .map_err(|e| format!("ListContainers: {e}"))?;
    let attempt = |n: u32| {
        listed
            .iter()
            .find(|c| c.metadata.as_ref().is_some_and(|m| m.attempt == n))
    };
    let (Some(first), Some(second)) = (attempt(0), attempt(1)) else {
        return Ok(None);
    };
    let status = |id: String| async move {
        cri.runtime
            .container_status(&id)
            .await
            .map_err(|e| format!("ContainerStatus {id}: {e}"))
    };
    let finished = status(first.id.clone()).await?.finished_at;
    let created = status(second.id.clone()).await?.created_at;
    if finished <= 0 {
        return Ok(None);
    }
    let ns = u64::try_from(created.saturating_sub(finished)).unwrap_or(0);
    Ok(Some(Duration::from_nanos(ns)))
}
