//! The container GC pass: dead containers, dead sandboxes and on-disk leftovers of
//! deleted pods, decided by [`super::container_policy`] and [`super::leftovers`].
//!
//! As kubelet, removing a container also removes its log files (`N.log` and its rotated
//! files): without that, every restart of a crash-looping container would leave a file
//! behind forever. Its termination-message file (`podsDir/UID/containers/NAME/ID`, see
//! [`crate::kuberuntime::termination`]) goes with it too. Every failure is logged and retried next pass; only a failed listing
//! makes the pass return an error.

use super::container_policy::{self, Victim};
use super::error::GcError;
use super::leftovers::{self, LeftoverReport};
use crate::config::{format_size, Config};
use crate::cri::{pb, CriError, RuntimeClient};
use crate::kuberuntime::termination;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What one pass did.
#[derive(Debug, Default)]
pub struct ContainerGcReport {
    /// Ids of the containers removed.
    pub removed_containers: Vec<String>,
    /// Ids of the sandboxes removed.
    pub removed_sandboxes: Vec<String>,
    /// Container log files removed with their containers, and their bytes.
    pub removed_logs: Vec<PathBuf>,
    /// The bytes of those.
    pub log_bytes_freed: u64,
    /// What the sweep of leftover pod directories did.
    pub leftovers: LeftoverReport,
    /// Containers or sandboxes whose removal failed (id, reason); retried next pass.
    pub failed: Vec<(String, String)>,
}

/// One container GC pass. `desired_uids` are the UIDs of every desired pod; pass it only
/// once all pod sources are loaded, or live pods would look deleted.
pub async fn pass(
    rt: &RuntimeClient,
    cfg: &Config,
    desired_uids: &HashSet<&str>,
    now: SystemTime,
) -> Result<ContainerGcReport, CriError> {
    let now_ns = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    let mut containers = rt.list_containers(None).await?;
    let mut sandboxes = rt.list_pod_sandbox(None).await?;
    // Another agent's dead containers and sandboxes are its to collect.
    let mark = crate::kuberuntime::agent_mark::mark(&cfg.state_dir);
    crate::kuberuntime::agent_mark::retain_ours(&mark, &mut sandboxes, &mut containers);
    let mut report = ContainerGcReport::default();

    let victims = container_policy::containers_to_remove(
        &containers,
        desired_uids,
        now_ns,
        &cfg.container_gc,
    );
    let mut removed: HashSet<&str> = HashSet::new();
    for v in &victims {
        match remove_container(rt, &cfg.pods_dir, v, &mut report).await {
            Ok(()) => {
                removed.insert(v.id);
                report.removed_containers.push(v.id.to_string());
            }
            Err(e) => {
                log::warn!(
                    "removing dead container {} ({}/{}): {e}",
                    v.id,
                    v.pod_uid,
                    v.name
                );
                report.failed.push((v.id.to_string(), e.to_string()));
            }
        }
    }

    let dead_sandboxes =
        container_policy::sandboxes_to_remove(&sandboxes, &containers, &removed, desired_uids);
    let mut gone: HashSet<&str> = HashSet::new();
    for id in dead_sandboxes {
        let result = match rt.stop_pod_sandbox(id).await {
            Ok(()) => rt.remove_pod_sandbox(id).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => {
                gone.insert(id);
                report.removed_sandboxes.push(id.to_string());
            }
            Err(e) => {
                log::warn!("removing dead sandbox {id}: {e}");
                report.failed.push((id.to_string(), e.to_string()));
            }
        }
    }

    let sandbox_uids: HashSet<&str> = sandboxes
        .iter()
        .filter(|s| !gone.contains(s.id.as_str()))
        .filter_map(|s| container_policy::pod_uid(&s.labels))
        .collect();
    report.leftovers = leftovers::sweep(
        &cfg.pods_dir,
        &cfg.pod_logs_dir,
        desired_uids,
        &sandbox_uids,
    );
    for (dir, why) in &report.leftovers.failed {
        log::warn!("removing leftover {}: {why}", dir.display());
    }
    log_outcome(&report);
    Ok(report)
}

/// Stops an UNKNOWN container, removes its log files, then the container.
async fn remove_container(
    rt: &RuntimeClient,
    pods_dir: &Path,
    v: &Victim<'_>,
    report: &mut ContainerGcReport,
) -> Result<(), GcError> {
    if v.stop_first {
        rt.stop_container(v.id, Duration::ZERO)
            .await
            .map_err(|e| GcError::cri("stopping", e))?;
    }
    match rt.container_status(v.id).await {
        Ok(st) => {
            if !st.log_path.is_empty() {
                remove_logs(Path::new(&st.log_path), report)
                    .map_err(|e| GcError::io("removing its logs", e))?;
            }
            remove_termination_file(&st, pods_dir)?;
        }
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(GcError::cri("status", e)),
    }
    match rt.remove_container(v.id).await {
        Err(e) if !e.is_not_found() => Err(GcError::cri("", e)),
        _ => Ok(()),
    }
}

/// Removes the container's termination-message file (only the agent's own: a mount of
/// something else at that path is not ours).
fn remove_termination_file(st: &pb::ContainerStatus, pods_dir: &Path) -> Result<(), GcError> {
    let Some(file) = termination::agent_file(st, pods_dir) else {
        return Ok(());
    };
    match std::fs::remove_file(&file) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(GcError::io(
            format!("removing its termination-message file {}", file.display()),
            e,
        )),
        _ => Ok(()),
    }
}

/// Removes `log` and every file next to it whose name starts with `log`'s name plus a dot
/// (its rotated files).
fn remove_logs(log: &Path, report: &mut ContainerGcReport) -> std::io::Result<()> {
    let (Some(dir), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str())) else {
        return Ok(());
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let rotated_prefix = format!("{name}.");
    for e in entries {
        let e = e?;
        let Ok(n) = e.file_name().into_string() else {
            continue;
        };
        if n != name && !n.starts_with(&rotated_prefix) {
            continue;
        }
        let bytes = e.metadata().map_or(0, |m| m.len());
        match std::fs::remove_file(e.path()) {
            Ok(()) => {
                report.log_bytes_freed += bytes;
                report.removed_logs.push(e.path());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn log_outcome(r: &ContainerGcReport) {
    let l = &r.leftovers;
    if r.removed_containers.is_empty() && r.removed_sandboxes.is_empty() && l.removed.is_empty() {
        return;
    }
    log::info!(
        "container GC: removed {} containers, {} sandboxes, {} pod directories; {} freed",
        r.removed_containers.len(),
        r.removed_sandboxes.len(),
        l.removed.len(),
        format_size(r.log_bytes_freed + l.bytes_freed)
    );
}
