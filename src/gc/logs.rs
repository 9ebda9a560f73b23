//! Container log rotation, as kubelet's container log manager does it.
//!
//! For each running container of ours ([`crate::kuberuntime::agent_mark`]: another
//! agent's on the same runtime rotates its own) whose live CRI log (`.../N.log`) has reached
//! `containerLogMaxSize`: remove the oldest rotated files so that at most
//! `containerLogMaxFiles - 2` remain, rename the live file to `N.log.<YYYYMMDD-HHMMSS>`
//! (UTC), then ask the runtime to reopen the log (ReopenContainerLog), which makes it
//! create a fresh `N.log`. Until the reopen, the runtime keeps writing to the renamed
//! file, so no line is lost. Afterwards there are at most `containerLogMaxFiles` files:
//! the new live one plus `maxFiles - 1` rotated.
//!
//! Differences from kubelet: rotated files are not gzip-compressed (no compression code
//! in the binary; the flash budget is therefore `maxSize * maxFiles` per container), and a
//! rotation whose target name already exists (two rotations within one second) waits for
//! the next pass instead of overwriting it. As kubelet: a failed reopen renames the file
//! back so the next pass retries; a missing live file is re-created by a reopen; leftover
//! `.tmp` files are removed; exited containers are skipped (they write nothing more).

use super::error::GcError;
use crate::cri::{pb, CriError, RuntimeClient};
use crate::kuberuntime::{agent_mark, labels};
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How often the agent should run a rotation pass (kubelet's
/// `containerLogMonitorInterval` default).
pub const PERIOD: Duration = Duration::from_secs(10);

/// What one container's log directory needs this pass.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RotationPlan {
    /// File names to delete first: leftover `.tmp` files, then the oldest rotated files.
    pub remove: Vec<String>,
    /// New name of the live file; `None`: no rotation now.
    pub rotate_to: Option<String>,
}

/// The rotated-file suffix for `now`: `YYYYMMDD-HHMMSS` in UTC (sorts in time order).
pub fn timestamp_suffix(now: SystemTime) -> String {
    crate::model::time::format_rfc3339(now)
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .map(|c| if c == 'T' { '-' } else { c })
        .collect()
}

/// Decides the rotation of the live file `live` (a file name) of `size` bytes, given the
/// names in its directory.
pub fn plan_rotation(
    live: &str,
    size: u64,
    dir_names: &[String],
    max_size: u64,
    max_files: u32,
    suffix: &str,
) -> RotationPlan {
    if size < max_size {
        return RotationPlan::default();
    }
    let target = format!("{live}.{suffix}");
    if dir_names.contains(&target) {
        return RotationPlan::default();
    }
    let prefix = format!("{live}.");
    let mut remove = Vec::new();
    let mut rotated: Vec<&String> = Vec::new();
    for n in dir_names.iter().filter(|n| n.starts_with(&prefix)) {
        if n.ends_with(".tmp") {
            remove.push(n.clone());
        } else if !n.ends_with(".gz") {
            rotated.push(n);
        }
    }
    rotated.sort_unstable();
    let keep = (max_files as usize).saturating_sub(2);
    let excess = rotated.len().saturating_sub(keep);
    remove.extend(rotated.into_iter().take(excess).cloned());
    RotationPlan {
        remove,
        rotate_to: Some(target),
    }
}

/// What a rotation pass did.
#[derive(Debug, Default)]
pub struct RotationReport {
    /// Live files rotated (their new names).
    pub rotated: Vec<PathBuf>,
    /// Old rotated files deleted, and their bytes.
    pub removed: Vec<PathBuf>,
    /// The bytes of those.
    pub bytes_removed: u64,
    /// Containers whose rotation failed this pass (retried next pass): id and reason.
    pub failed: Vec<(String, String)>,
}

/// Runs rotation passes; remembers each container's log path (it never changes) so a
/// pass costs one ListContainers plus a stat per running container.
pub struct LogRotator {
    max_size: u64,
    max_files: u32,
    /// The agent's mark: whose containers are rotated.
    mark: String,
    log_paths: HashMap<String, PathBuf>,
}

impl LogRotator {
    /// A rotator keeping logs under `max_size` bytes and `max_files` files per container,
    /// of the containers of the agent with `mark`.
    pub fn new(max_size: u64, max_files: u32, mark: String) -> Self {
        LogRotator {
            max_size,
            max_files,
            mark,
            log_paths: HashMap::new(),
        }
    }

    /// One pass over the running containers of ours. Only a failed ListContainers is an
    /// error; per-container failures are logged, reported and retried next pass.
    pub async fn pass(&mut self, rt: &RuntimeClient) -> Result<RotationReport, CriError> {
        let filter = pb::ContainerFilter {
            state: Some(pb::ContainerStateValue {
                state: pb::ContainerState::ContainerRunning as i32,
            }),
            ..Default::default()
        };
        let mut running = rt.list_containers(Some(filter)).await?;
        running.retain(|c| c.labels.contains_key(labels::POD_UID));
        // A container without a mark is ours when its sandbox is: only then (an older
        // tinylet's, or a kubelet's) are the sandboxes listed too.
        let mut ours = HashSet::new();
        if running
            .iter()
            .any(|c| !c.labels.contains_key(agent_mark::AGENT))
        {
            let mut sandboxes = rt.list_pod_sandbox(None).await?;
            sandboxes.retain(|s| agent_mark::owns_sandbox(&self.mark, &s.labels, &s.annotations));
            ours.extend(sandboxes.into_iter().map(|s| s.id));
        }
        running.retain(|c| {
            agent_mark::owns_container(&self.mark, &c.labels, ours.contains(&c.pod_sandbox_id))
        });
        let mut report = RotationReport::default();
        self.log_paths
            .retain(|id, _| running.iter().any(|c| &c.id == id));
        for c in &running {
            if let Err(e) = self.rotate_one(rt, &c.id, &mut report).await {
                log::warn!("log rotation of container {}: {e}", c.id);
                report.failed.push((c.id.clone(), e.to_string()));
            }
        }
        for p in &report.rotated {
            log::info!("rotated container log to {}", p.display());
        }
        if !report.removed.is_empty() {
            log::info!(
                "removed {} old container log files, {} freed",
                report.removed.len(),
                crate::config::format_size(report.bytes_removed)
            );
        }
        Ok(report)
    }

    async fn rotate_one(
        &mut self,
        rt: &RuntimeClient,
        id: &str,
        report: &mut RotationReport,
    ) -> Result<(), GcError> {
        let path = match self.log_paths.get(id) {
            Some(p) => p.clone(),
            None => {
                let st = rt
                    .container_status(id)
                    .await
                    .map_err(|e| GcError::cri("", e))?;
                let p = PathBuf::from(st.log_path);
                self.log_paths.insert(id.to_string(), p.clone());
                p
            }
        };
        if path.as_os_str().is_empty() {
            return Ok(()); // the container logs nowhere
        }
        let size = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Lost between a rename and a reopen (e.g. the agent died there):
                // a reopen creates it again.
                return rt.reopen_container_log(id).await.map_err(|e| {
                    GcError::cri(format!("{} missing and reopen failed", path.display()), e)
                });
            }
            Err(e) => return Err(GcError::at(&path, e)),
        };
        if size < self.max_size {
            return Ok(());
        }
        let (dir, live) = split(&path)?;
        let names = dir_names(dir).map_err(|e| GcError::at(dir, e))?;
        let plan = plan_rotation(
            live,
            size,
            &names,
            self.max_size,
            self.max_files,
            &timestamp_suffix(SystemTime::now()),
        );
        let Some(target) = plan.rotate_to else {
            return Ok(());
        };
        for name in &plan.remove {
            let p = dir.join(name);
            let bytes = std::fs::metadata(&p).map_or(0, |m| m.len());
            match std::fs::remove_file(&p) {
                Ok(()) => {
                    report.bytes_removed += bytes;
                    report.removed.push(p);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(GcError::io(format!("removing {}", p.display()), e)),
            }
        }
        let rotated = dir.join(&target);
        std::fs::rename(&path, &rotated)
            .map_err(|e| GcError::io(format!("renaming {} to {target}", path.display()), e))?;
        if let Err(e) = rt.reopen_container_log(id).await {
            // Put it back so the runtime's file is the live one again; retried next pass.
            if let Err(back) = std::fs::rename(&rotated, &path) {
                log::error!(
                    "renaming {} back to {} after a failed reopen: {back}",
                    rotated.display(),
                    path.display()
                );
            }
            return Err(GcError::cri("reopening the log", e));
        }
        crate::metrics::log_rotated(size);
        report.rotated.push(rotated);
        Ok(())
    }
}

/// `(directory, file name)` of a log path.
fn split(path: &Path) -> Result<(&Path, &str), GcError> {
    let dir = path
        .parent()
        .ok_or_else(|| GcError::LogPath(path.into(), "no directory"))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| GcError::LogPath(path.into(), "not a UTF-8 file name"))?;
    Ok((dir, name))
}

fn dir_names(dir: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        if let Ok(n) = e?.file_name().into_string() {
            out.push(n);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn suffix_is_utc_and_sortable() {
        let t = UNIX_EPOCH + Duration::from_secs(1_714_557_600 + 3661);
        assert_eq!(timestamp_suffix(t), "20240501-110101");
    }

    #[test]
    fn small_file_is_left_alone() {
        let p = plan_rotation("0.log", 99, &names(&["0.log"]), 100, 5, "x");
        assert_eq!(p, RotationPlan::default());
    }

    #[test]
    fn keeps_max_files_minus_two_rotated_before_rotating() {
        let dir = names(&[
            "0.log",
            "0.log.20240501-100003",
            "0.log.20240501-100001",
            "0.log.20240501-100002",
            "0.log.20240501-100000.tmp",
            "0.log.20240501-090000.gz",
            "1.log.20240501-000000",
        ]);
        let p = plan_rotation("0.log", 100, &dir, 100, 3, "20240501-100004");
        assert_eq!(
            p.remove,
            names(&[
                "0.log.20240501-100000.tmp",
                "0.log.20240501-100001",
                "0.log.20240501-100002"
            ])
        );
        assert_eq!(p.rotate_to.as_deref(), Some("0.log.20240501-100004"));
        // After it: 1 rotated kept + the one just rotated + the new live = 3 files.
        let p = plan_rotation("0.log", 100, &dir, 100, 5, "20240501-100004");
        assert_eq!(p.remove, names(&["0.log.20240501-100000.tmp"]));
    }

    #[test]
    fn same_second_rotation_waits() {
        let dir = names(&["0.log", "0.log.20240501-100004"]);
        let p = plan_rotation("0.log", 500, &dir, 100, 5, "20240501-100004");
        assert_eq!(p, RotationPlan::default());
    }
}
