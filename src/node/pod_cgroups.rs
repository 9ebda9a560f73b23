//! The pods' cgroups as kubelet's container manager lays them out: one parent for all
//! pods (`kubepods`, limited to node allocatable), QoS tiers `burstable` and
//! `besteffort` below it (guaranteed pods sit in the parent), and one cgroup per pod
//! (`pod<UID>`) with the pod's summed limits, passed to the runtime as the sandbox's
//! `cgroup_parent`. The runtime makes each container's cgroup below it.
//!
//! Workers ask for a pod's cgroup before its sandbox is made; a deleted pod's cgroup is
//! removed once its processes are gone, and the container GC period sweeps cgroups of
//! pods no longer desired. Only cgroups of pods this agent ran are ever removed: those
//! it made, adopted, or found on its runtime as orphans (a pod deleted while the agent
//! was away); another agent's pods under the same parent are never touched. Adopted
//! pods keep theirs: the name depends only on the pod's UID and QoS class.
//!
//! One agent per pods' parent: the agent holds an exclusive `flock` on the parent's
//! cgroup directory for its whole life (nothing is written; the kernel drops the lock
//! with the process), and an agent whose parent another live agent holds refuses to
//! start, naming it: two would rewrite each other's node allocatable limits.

use super::capacity::NodeResources;
use super::cgroup_name::CgroupName;
use super::hierarchy::{Hierarchy, Limits, CONTROLLERS};
use super::pod_resources::{cpu_request_milli, pod_limits};
use crate::config::{CgroupDriver, Config};
use crate::kuberuntime::resources::{cpu_shares, qos_class, QosClass};
use crate::model::Pod;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};

fn warn_unenforced(e: &std::io::Error) {
    log::warn!(
        "cannot set up the pods' cgroups ({e}): pods run in the runtime's default cgroup \
         and node allocatable is not enforced"
    );
}

/// The pods' cgroup tree on this machine.
#[derive(Debug)]
pub struct PodCgroups {
    hierarchy: Hierarchy,
    driver: CgroupDriver,
    /// The parent of all pods (`kubepods`).
    pods: CgroupName,
    /// Controllers the hierarchy lacks: their limits are not written.
    missing: Vec<&'static str>,
    /// CPU requests (millis) of the burstable pods, by UID: the tier's shares.
    burstable: RefCell<BTreeMap<String, i64>>,
    burstable_shares: Cell<i64>,
    /// UIDs of the pods whose cgroups this agent may remove (see the module doc).
    ours: RefCell<HashSet<String>>,
    /// The flock on the pods' parent cgroup, held while the agent lives.
    _lock: Option<std::fs::File>,
}

impl PodCgroups {
    /// Makes the pods' parent (with node allocatable when `enforceNodeAllocatable` has
    /// `pods`) and the QoS tiers. `Ok(None)`, after a warning naming what is missing,
    /// when this machine cannot: pods then run in the runtime's default cgroup. An
    /// error when another live agent holds the parent.
    pub fn setup(cfg: &Config, capacity: &NodeResources) -> Result<Option<PodCgroups>, LockError> {
        if !cfg.cgroups_per_qos {
            log::info!("cgroupsPerQOS is off: pods run in the runtime's default cgroup");
            return Ok(None);
        }
        let Some(hierarchy) = Hierarchy::detect() else {
            log::warn!(
                "no cgroup or cgroup2 file system in /proc/self/mountinfo: pods run \
                 without pod cgroups and node allocatable is not enforced"
            );
            return Ok(None);
        };
        let missing = hierarchy.missing();
        if !missing.is_empty() {
            log::warn!(
                "cgroup {}: controller(s) {} not available: pods' {} limits are not enforced",
                hierarchy.version(),
                missing.join(", "),
                missing.join("/")
            );
        }
        let mut pc = PodCgroups {
            pods: CgroupName::from_path(&cfg.cgroup_root).child(&cfg.pods_cgroup_name),
            hierarchy,
            driver: cfg.cgroup_driver,
            missing,
            burstable: RefCell::default(),
            burstable_shares: Cell::new(0),
            ours: RefCell::default(),
            _lock: None,
        };
        let alloc = capacity.less_reserved(cfg);
        let enforce = cfg.enforce_node_allocatable.iter().any(|e| e == "pods");
        let parent = Limits {
            cpu_shares: Some(cpu_shares(alloc.cpu_milli)),
            memory: (enforce && alloc.memory > 0).then_some(alloc.memory),
            pids: (enforce && alloc.pids > 0).then_some(alloc.pids),
            cpu_quota: None,
        };
        let best_effort = Limits {
            cpu_shares: Some(2),
            ..Limits::default()
        };
        // The parent is made bare and locked before any limit is written: a second
        // agent on the same parent must stop before it rewrites the first one's node
        // allocatable (the flock is on the directory, so that must exist first).
        if let Err(e) = pc.make(&pc.pods, &Limits::default()) {
            warn_unenforced(&e);
            return Ok(None);
        }
        pc._lock = pc.lock_parent()?;
        let made = pc
            .make(&pc.pods, &parent)
            .and_then(|()| pc.make(&pc.tier(QosClass::Burstable), &Limits::default()))
            .and_then(|()| pc.make(&pc.tier(QosClass::BestEffort), &best_effort));
        if let Err(e) = made {
            warn_unenforced(&e);
            return Ok(None);
        }
        log::info!(
            "pod cgroups under {} (driver {}, cgroup {}); pods together may use {} \
             of memory and {} pids{}",
            pc.rel(&pc.pods),
            if pc.driver == CgroupDriver::Systemd {
                "systemd"
            } else {
                "cgroupfs"
            },
            pc.hierarchy.version(),
            crate::config::format_size(u64::try_from(alloc.memory).unwrap_or_default()),
            alloc.pids,
            if enforce {
                ""
            } else {
                " (not enforced: enforceNodeAllocatable)"
            }
        );
        Ok(Some(pc))
    }

    /// Takes the flock on the pods' parent cgroup directory; an error naming the holder
    /// when another process has it. A lock that cannot be taken for another reason is
    /// logged, and the agent runs unguarded rather than not at all.
    fn lock_parent(&self) -> Result<Option<std::fs::File>, LockError> {
        use rustix::fs::{flock, FlockOperation};
        let rel = self.rel(&self.pods);
        let Some(dir) = CONTROLLERS
            .iter()
            .filter(|c| !self.missing.contains(c))
            .find_map(|c| self.hierarchy.dir(c, &rel))
        else {
            return Ok(None);
        };
        let file = std::fs::File::open(&dir).map_err(|e| LockError::Open(dir.clone(), e))?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(file)),
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let holder = crate::store::agent_lock::holder_of_file(&file).map_or_else(
                    || "another process".into(),
                    |(pid, comm)| format!("pid {pid} ({comm})"),
                );
                Err(LockError::Held { rel, dir, holder })
            }
            Err(e) => {
                log::warn!(
                    "the pods' cgroup {}: cannot lock it ({e}); nothing stops a second agent here",
                    dir.display()
                );
                Ok(None)
            }
        }
    }

    /// The cgroup's path below the hierarchy's root, as the driver names it.
    fn rel(&self, name: &CgroupName) -> String {
        match self.driver {
            CgroupDriver::Cgroupfs => name.cgroupfs(),
            CgroupDriver::Systemd => name.systemd_path(),
        }
    }

    /// Makes `name` with `limits`, leaving out controllers the machine lacks.
    fn make(&self, name: &CgroupName, limits: &Limits) -> std::io::Result<()> {
        let has = |c| !self.missing.contains(&c);
        let usable = Limits {
            cpu_shares: limits.cpu_shares.filter(|_| has("cpu")),
            cpu_quota: limits.cpu_quota.filter(|_| has("cpu")),
            memory: limits.memory.filter(|_| has("memory")),
            pids: limits.pids.filter(|_| has("pids")),
        };
        self.hierarchy.ensure(&self.rel(name), &usable)
    }

    fn tier(&self, qos: QosClass) -> CgroupName {
        match qos {
            QosClass::Guaranteed => self.pods.clone(),
            QosClass::Burstable => self.pods.child("burstable"),
            QosClass::BestEffort => self.pods.child("besteffort"),
        }
    }

    fn pod_cgroup(&self, uid: &str, qos: QosClass) -> CgroupName {
        self.tier(qos).child(&format!("pod{uid}"))
    }

    /// The sandbox's `cgroup_parent` for `pod`: a cgroupfs path or a slice name.
    pub fn cgroup_parent(&self, pod: &Pod) -> String {
        let name = self.pod_cgroup(&pod.metadata.uid, qos_class(pod));
        match self.driver {
            CgroupDriver::Cgroupfs => name.cgroupfs(),
            CgroupDriver::Systemd => name.systemd_slice(),
        }
    }

    /// Makes `pod`'s cgroup with its summed limits (before its sandbox is made).
    pub fn ensure(&self, pod: &Pod) -> std::io::Result<()> {
        let qos = qos_class(pod);
        self.make(
            &self.pod_cgroup(&pod.metadata.uid, qos),
            &pod_limits(pod, qos),
        )?;
        self.note(pod);
        Ok(())
    }

    /// Takes pod `uid`'s cgroups for this agent's (a pod of its runtime it removes as
    /// an orphan): the sweep may remove them.
    pub fn claim(&self, uid: &str) {
        self.ours.borrow_mut().insert(uid.to_string());
    }

    /// Counts a running pod (made now or adopted) in its tier's CPU shares.
    pub fn note(&self, pod: &Pod) {
        self.claim(&pod.metadata.uid);
        if qos_class(pod) == QosClass::Burstable {
            self.burstable
                .borrow_mut()
                .insert(pod.metadata.uid.clone(), cpu_request_milli(pod));
            self.update_burstable_shares();
        }
    }

    /// kubelet's burstable tier: shares for the sum of its pods' CPU requests.
    fn update_burstable_shares(&self) {
        let sum = self
            .burstable
            .borrow()
            .values()
            .fold(0i64, |a, b| a.saturating_add(*b));
        let shares = cpu_shares(sum);
        if shares == self.burstable_shares.get() {
            return;
        }
        let limits = Limits {
            cpu_shares: Some(shares),
            ..Limits::default()
        };
        match self.make(&self.tier(QosClass::Burstable), &limits) {
            Ok(()) => self.burstable_shares.set(shares),
            Err(e) => log::warn!("burstable pods' CPU shares: {e}"),
        }
    }

    /// Removes pod `uid`'s cgroup (from whichever tier holds it) once its processes
    /// are gone; a cgroup still in use stays for the next sweep.
    pub fn remove(&self, uid: &str) {
        if self.burstable.borrow_mut().remove(uid).is_some() {
            self.update_burstable_shares();
        }
        self.remove_tiers(uid, None);
    }

    /// Removes `uid`'s cgroups from every tier but `keep`'s; true when none is left.
    fn remove_tiers(&self, uid: &str, keep: Option<QosClass>) -> bool {
        let mut gone = true;
        for qos in [
            QosClass::Guaranteed,
            QosClass::Burstable,
            QosClass::BestEffort,
        ] {
            if Some(qos) == keep {
                continue;
            }
            let rel = self.rel(&self.pod_cgroup(uid, qos));
            if let Err(e) = self.hierarchy.remove(&rel) {
                log::debug!("pod cgroup {rel}: not removed yet: {e}");
                gone = false;
            }
        }
        gone
    }

    /// Removes the cgroups of this agent's pods that are not `desired`'s (deleted while
    /// the agent was away, refused, or in another tier since their QoS class changed).
    /// Cgroups of pods this agent never ran are left alone.
    pub fn sweep(&self, desired: &[&Pod]) {
        self.burstable
            .borrow_mut()
            .retain(|uid, _| desired.iter().any(|p| p.metadata.uid == *uid));
        self.update_burstable_shares();
        let ours: Vec<String> = self.ours.borrow().iter().cloned().collect();
        for uid in ours {
            match desired.iter().find(|p| p.metadata.uid == uid) {
                Some(p) => {
                    self.remove_tiers(&uid, Some(qos_class(p)));
                }
                None if self.remove_tiers(&uid, None) => {
                    log::debug!("pod cgroups of uid {uid}: removed (the pod is gone)");
                    self.ours.borrow_mut().remove(&uid);
                }
                None => {}
            }
        }
        log::debug!(
            "pod cgroups swept ({} of this agent's pods known)",
            self.ours.borrow().len()
        );
    }

    /// The memory working set of `pod`'s cgroup (usage less inactive file pages, as
    /// kubelet counts it); `None` when it cannot be read.
    pub fn pod_memory_usage(&self, pod: &Pod) -> Option<i64> {
        let name = self.pod_cgroup(&pod.metadata.uid, qos_class(pod));
        let dir = self.hierarchy.dir("memory", &self.rel(&name))?;
        let v2 = matches!(self.hierarchy, Hierarchy::V2(_));
        let (usage, inactive) = if v2 {
            ("memory.current", "inactive_file ")
        } else {
            ("memory.usage_in_bytes", "total_inactive_file ")
        };
        let usage: i64 = std::fs::read_to_string(dir.join(usage))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let stat = std::fs::read_to_string(dir.join("memory.stat")).unwrap_or_default();
        let inactive: i64 = stat
            .lines()
            .find_map(|l| l.strip_prefix(inactive))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        Some((usage - inactive).max(0))
    }

    /// The directory of the pods' parent cgroup holding `controller`'s files (for
    /// pressure readings and tests).
    pub fn pods_dir(&self, controller: &str) -> Option<std::path::PathBuf> {
        if !CONTROLLERS.contains(&controller) || self.missing.contains(&controller) {
            return None;
        }
        self.hierarchy.dir(controller, &self.rel(&self.pods))
    }
}

/// Why the pods' parent cgroup cannot be this agent's.
#[derive(Debug)]
pub enum LockError {
    /// Its directory cannot be opened to lock.
    Open(std::path::PathBuf, std::io::Error),
    /// Another live agent holds it.
    Held {
        /// The cgroup's name under the hierarchy.
        rel: String,
        /// Its directory.
        dir: std::path::PathBuf,
        /// Who holds it (`pid N (comm)`, or "another process").
        holder: String,
    },
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::Open(dir, e) => write!(f, "the pods' cgroup {}: {e}", dir.display()),
            LockError::Held { rel, dir, holder } => write!(
                f,
                "the pods' cgroup {rel} ({}) is held by another agent, {holder}: give this \
                 agent a cgroupRoot or podsCgroupName of its own",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for LockError {}
