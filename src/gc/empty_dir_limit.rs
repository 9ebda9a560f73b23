//! `sizeLimit` of disk emptyDirs. kubelet evicts a pod whose emptyDir outgrows its
//! `sizeLimit`; tinylet does not evict (a gateway's pods have nowhere else to go, and a
//! pod that fills its volume would just come back), it logs one warning when a volume
//! goes over its limit and one line when it is back under. Usage is what `du` counts
//! (allocated blocks) and is measured on the container GC period, never per relist.
//! A volume with more than [`MAX_ENTRIES`] entries is counted up to there only, so a
//! pass never blocks the agent's thread for long. Memory emptyDirs are bounded by their
//! tmpfs size instead and are not measured.

use crate::config::format_size;
use crate::kuberuntime::tmpfs::EMPTY_DIR_PLUGIN;
use crate::model::pod::StorageMedium;
use crate::model::Pod;
use std::collections::HashSet;
use std::path::Path;

/// Most directory entries counted per volume and pass.
pub const MAX_ENTRIES: usize = 10_000;

/// Which volumes are over their limit, so each excursion is logged once.
#[derive(Debug, Default)]
pub struct SizeLimits {
    /// (pod uid, volume name) of the volumes last seen over their limit.
    over: HashSet<(String, String)>,
}

impl SizeLimits {
    /// Measures every disk emptyDir with a `sizeLimit` of `pods`; logs volumes that went
    /// over (returned, for tests) and those back under. Forgets pods no longer given.
    pub fn check(&mut self, pods_dir: &Path, pods: &[&Pod]) -> Vec<(String, String)> {
        let mut now_over = HashSet::new();
        let mut newly = Vec::new();
        for pod in pods {
            let uid = &pod.metadata.uid;
            for v in &pod.spec.volumes {
                let Some(ed) = &v.empty_dir else { continue };
                let Some(limit) = ed.size_limit.as_ref().map(|q| q.value()) else {
                    continue;
                };
                if ed.medium == StorageMedium::Memory || limit <= 0 {
                    continue;
                }
                let dir = pods_dir
                    .join(uid)
                    .join("volumes")
                    .join(EMPTY_DIR_PLUGIN)
                    .join(&v.name);
                let used = usage(&dir, MAX_ENTRIES);
                if used <= limit.unsigned_abs() {
                    continue;
                }
                let key = (uid.clone(), v.name.clone());
                if !self.over.contains(&key) {
                    log::warn!(
                        "pod {}/{}: emptyDir {:?} uses {}, over its sizeLimit {} ({}); kubelet would evict the pod, tinylet only warns",
                        pod.metadata.namespace,
                        pod.metadata.name,
                        v.name,
                        format_size(used),
                        ed.size_limit.as_ref().map_or("", |q| q.as_str()),
                        format_size(limit.unsigned_abs())
                    );
                    newly.push(key.clone());
                }
                now_over.insert(key);
            }
        }
        for (uid, name) in self.over.difference(&now_over) {
            if pods.iter().any(|p| &p.metadata.uid == uid) {
                log::info!("pod uid {uid}: emptyDir {name:?} is back under its sizeLimit");
            }
        }
        self.over = now_over;
        newly
    }
}

/// Bytes allocated below `dir` (as `du`), counting at most `max_entries` entries;
/// no symlink followed ([`super::tree_size`]), unreadable parts count as 0.
pub fn usage(dir: &Path, max_entries: usize) -> u64 {
    super::tree_size::measure(dir, max_entries).allocated
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pod::{EmptyDirVolumeSource, Volume};
    use crate::model::quantity::Quantity;

    fn pod_with(uid: &str, limit: &str, medium: StorageMedium) -> Pod {
        let mut p = Pod::default();
        p.metadata.uid = uid.into();
        p.metadata.name = "p".into();
        p.metadata.namespace = "ns".into();
        p.spec.volumes = vec![Volume {
            name: "v".into(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium,
                size_limit: Some(Quantity::parse(limit).unwrap()),
            }),
            ..Default::default()
        }];
        p
    }

    #[test]
    fn warns_once_per_excursion_and_skips_memory_volumes() {
        let root = std::env::temp_dir().join(format!("tinylet-sizelimit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let vol = |uid: &str| {
            root.join(uid)
                .join("volumes")
                .join(EMPTY_DIR_PLUGIN)
                .join("v")
        };
        for uid in ["u1", "u2"] {
            std::fs::create_dir_all(vol(uid).join("sub")).unwrap();
            std::fs::write(vol(uid).join("sub/f"), vec![7u8; 64 * 1024]).unwrap();
        }
        assert!(usage(&vol("u1"), MAX_ENTRIES) >= 64 * 1024);
        assert!(
            usage(&vol("u1"), 1) < 64 * 1024,
            "entries past the cap are not counted"
        );
        let small = pod_with("u1", "1Ki", StorageMedium::Default);
        let big = pod_with("u2", "1Mi", StorageMedium::Default);
        let mem = pod_with("u2", "1Ki", StorageMedium::Memory);
        let mut s = SizeLimits::default();
        let key = ("u1".to_string(), "v".to_string());
        assert_eq!(s.check(&root, &[&small, &big]), std::slice::from_ref(&key));
        assert!(s.check(&root, &[&small, &big]).is_empty(), "once");
        assert!(
            s.check(&root, &[&mem]).is_empty(),
            "memory volumes are not measured"
        );
        std::fs::remove_dir_all(vol("u1").join("sub")).unwrap();
        assert!(s.check(&root, &[&small]).is_empty(), "back under");
        std::fs::write(vol("u1").join("g"), vec![7u8; 64 * 1024]).unwrap();
        assert_eq!(
            s.check(&root, &[&small]),
            [key],
            "a new excursion warns again"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
