//! The cgroup hierarchies of this machine (v2 unified, or v1 with one mount per
//! controller) and the few file operations pod cgroups need: make a cgroup with its
//! controllers, write limits, remove it when empty, list children. Read from
//! /proc/self/mountinfo once at start.

use std::io;
use std::path::{Path, PathBuf};

/// The controllers whose limits pod cgroups carry.
pub const CONTROLLERS: [&str; 3] = ["cpu", "memory", "pids"];

/// Where the cgroup controllers are mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v2: one tree for every controller.
    V2(PathBuf),
    /// cgroup v1: the mount of `cpu`, `memory`, `pids` (those found), and every v1
    /// mount (runc makes a pod's cgroup in each, so each must be cleaned).
    V1 {
        /// `(controller, mount point)` for the controllers found among [`CONTROLLERS`].
        found: Vec<(&'static str, PathBuf)>,
        /// Every cgroup v1 mount point.
        all: Vec<PathBuf>,
    },
}

/// The limits of one cgroup, in v1's units; `None` leaves a value as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// `cpu.shares` (v2: the `cpu.weight` runc derives from it).
    pub cpu_shares: Option<i64>,
    /// CFS quota and period in microseconds.
    pub cpu_quota: Option<(i64, i64)>,
    /// Memory limit in bytes.
    pub memory: Option<i64>,
    /// Most tasks (processes and threads).
    pub pids: Option<i64>,
}

impl Hierarchy {
    /// The hierarchy described by mountinfo `text`: v1 when any v1 mount carries one of
    /// [`CONTROLLERS`] (a hybrid layout's empty v2 tree is of no use), else the v2 mount.
    pub fn from_mountinfo(text: &str) -> Option<Hierarchy> {
        let mut found = Vec::new();
        let mut all = Vec::new();
        let mut v2 = None;
        for line in text.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let Some(point) = left.split(' ').nth(4) else {
                continue;
            };
            let mut r = right.split(' ');
            let (fstype, options) = (r.next(), r.nth(1).unwrap_or(""));
            match fstype {
                Some("cgroup2") => v2 = v2.or(Some(PathBuf::from(point))),
                Some("cgroup") => {
                    all.push(PathBuf::from(point));
                    for c in CONTROLLERS {
                        if options.split(',').any(|o| o == c) && !found.iter().any(|(f, _)| *f == c)
                        {
                            found.push((c, PathBuf::from(point)));
                        }
                    }
                }
                _ => {}
            }
        }
        if !found.is_empty() {
            return Some(Hierarchy::V1 { found, all });
        }
        v2.map(Hierarchy::V2)
    }

    /// Detects this machine's hierarchy.
    pub fn detect() -> Option<Hierarchy> {
        let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        Self::from_mountinfo(&text)
    }

    /// `v1` or `v2`, for logs.
    pub fn version(&self) -> &'static str {
        match self {
            Hierarchy::V2(_) => "v2",
            Hierarchy::V1 { .. } => "v1",
        }
    }

    /// The controllers of [`CONTROLLERS`] this hierarchy lacks.
    pub fn missing(&self) -> Vec<&'static str> {
        match self {
            Hierarchy::V2(root) => {
                let have =
                    std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
                let have: Vec<&str> = have.split_whitespace().collect();
                CONTROLLERS
                    .into_iter()
                    .filter(|c| !have.contains(c))
                    .collect()
            }
            Hierarchy::V1 { found, .. } => CONTROLLERS
                .into_iter()
                .filter(|c| !found.iter().any(|(f, _)| f == c))
                .collect(),
        }
    }

    /// Makes cgroup `rel` (and its parents) where its limits are set, and writes them.
    pub fn ensure(&self, rel: &str, limits: &Limits) -> io::Result<()> {
        match self {
            Hierarchy::V2(root) => {
                let dir = make_v2(root, rel)?;
                write_v2(&dir, limits)
            }
            Hierarchy::V1 { found, .. } => {
                for (c, mount) in found {
                    let dir = below(mount, rel);
                    std::fs::create_dir_all(&dir).map_err(|e| at(&dir, e))?;
                    write_v1(&dir, c, limits)?;
                }
                Ok(())
            }
        }
    }

    /// Removes cgroup `rel` and its (empty) children from every hierarchy; a cgroup
    /// that still has processes stays (EBUSY). Nothing is killed here: the runtime
    /// stops the pod's processes; a later sweep retries.
    pub fn remove(&self, rel: &str) -> io::Result<()> {
        let mounts: Vec<&PathBuf> = match self {
            Hierarchy::V2(root) => vec![root],
            Hierarchy::V1 { all, .. } => all.iter().collect(),
        };
        let mut result = Ok(());
        for m in mounts {
            if let Err(e) = remove_tree(&below(m, rel), 0) {
                result = Err(e);
            }
        }
        result
    }

    /// The directory of cgroup `rel` where `controller`'s files are.
    pub fn dir(&self, controller: &str, rel: &str) -> Option<PathBuf> {
        match self {
            Hierarchy::V2(root) => Some(below(root, rel)),
            Hierarchy::V1 { found, .. } => found
                .iter()
                .find(|(c, _)| *c == controller)
                .map(|(_, m)| below(m, rel)),
        }
    }
}

/// `mount` joined with the cgroup path `rel` (`/a/b`).
fn below(mount: &Path, rel: &str) -> PathBuf {
    mount.join(rel.trim_start_matches('/'))
}

fn at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn write(dir: &Path, file: &str, value: &str) -> io::Result<()> {
    let p = dir.join(file);
    std::fs::write(&p, value).map_err(|e| at(&p, e))
}

/// Makes `rel` below the v2 `root`, each level delegating the controllers it has to its
/// children (`cgroup.subtree_control`), since a v2 child gets only what its parent
/// enables.
fn make_v2(root: &Path, rel: &str) -> io::Result<PathBuf> {
    let mut dir = root.to_path_buf();
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        enable_controllers(&dir)?;
        dir.push(part);
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(at(&dir, e)),
            _ => {}
        }
    }
    enable_controllers(&dir)?;
    Ok(dir)
}

fn enable_controllers(dir: &Path) -> io::Result<()> {
    let have = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let on = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    let want: Vec<String> = CONTROLLERS
        .iter()
        .filter(|c| have.split_whitespace().any(|h| h == **c))
        .filter(|c| !on.split_whitespace().any(|h| h == **c))
        .map(|c| format!("+{c}"))
        .collect();
    if want.is_empty() {
        return Ok(());
    }
    write(dir, "cgroup.subtree_control", &want.join(" "))
}

fn write_v1(dir: &Path, controller: &str, l: &Limits) -> io::Result<()> {
    match controller {
        "cpu" => {
            if let Some(s) = l.cpu_shares {
                write(dir, "cpu.shares", &s.to_string())?;
            }
            if let Some((quota, period)) = l.cpu_quota {
                write(dir, "cpu.cfs_period_us", &period.to_string())?;
                write(dir, "cpu.cfs_quota_us", &quota.to_string())?;
            }
        }
        "memory" => {
            if let Some(m) = l.memory {
                write(dir, "memory.limit_in_bytes", &m.to_string())?;
            }
        }
        _ => {
            if let Some(p) = l.pids {
                write(dir, "pids.max", &p.to_string())?;
            }
        }
    }
    Ok(())
}

fn write_v2(dir: &Path, l: &Limits) -> io::Result<()> {
    if let Some(s) = l.cpu_shares {
        write(dir, "cpu.weight", &shares_to_weight(s).to_string())?;
    }
    if let Some((quota, period)) = l.cpu_quota {
        write(dir, "cpu.max", &format!("{quota} {period}"))?;
    }
    if let Some(m) = l.memory {
        write(dir, "memory.max", &m.to_string())?;
    }
    if let Some(p) = l.pids {
        write(dir, "pids.max", &p.to_string())?;
    }
    Ok(())
}

/// runc's (and kubelet's) map of v1 shares [2, 262144] onto v2 weight [1, 10000].
pub fn shares_to_weight(shares: i64) -> i64 {
    1 + ((shares.clamp(2, 262_144) - 2) * 9999) / 262_142
}

/// Removes `dir` after its child cgroups, depth first; a missing one is fine. Bounded:
/// pod cgroups nest two levels (pod, container), anything deeper is left.
fn remove_tree(dir: &Path, depth: u32) -> io::Result<()> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(at(dir, e)),
    };
    if depth < 4 {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&e.path(), depth + 1)?;
            }
        }
    }
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(at(dir, e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
30 24 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw
33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:14 - cgroup cgroup rw,cpu,cpuacct
34 30 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:15 - cgroup cgroup rw,memory
35 30 0:31 / /sys/fs/cgroup/systemd rw shared:16 - cgroup cgroup rw,xattr,name=systemd
";

    #[test]
    fn hybrid_is_v1_and_names_what_is_missing() {
        let h = Hierarchy::from_mountinfo(HYBRID).unwrap();
        let Hierarchy::V1 { found, all } = &h else {
            panic!("{h:?}")
        };
        assert_eq!(
            found,
            &[
                ("cpu", PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")),
                ("memory", PathBuf::from("/sys/fs/cgroup/memory"))
            ]
        );
        assert_eq!(all.len(), 3);
        assert_eq!(h.missing(), ["pids"]);
    }

    #[test]
    fn unified_is_v2() {
        let t = "30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            Hierarchy::from_mountinfo(t),
            Some(Hierarchy::V2("/sys/fs/cgroup".into()))
        );
        assert_eq!(Hierarchy::from_mountinfo("garbage\n"), None);
    }

    #[test]
    fn weight_from_shares() {
        assert_eq!(shares_to_weight(2), 1);
        assert_eq!(shares_to_weight(1024), 39);
        assert_eq!(shares_to_weight(262_144), 10_000);
    }
}
