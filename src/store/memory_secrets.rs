//! The cluster's secrets held in memory only (`apiServer.cacheSecrets: false`): the
//! choice of a device owner who fears theft of the device more than an offline reboot.
//! kubelet never writes secrets to disk; tinylet by default keeps the cluster's secrets
//! its pods reference in `cluster/secrets/` (0600 files in a 0700 directory) so that
//! after a reboot without the uplink the pods start with them. Held in memory, they are
//! gone with the process: after a reboot (or an agent restart) without the uplink, a pod
//! that needs one waits (`CreateContainerConfigError`, secret not found) until the
//! uplink is back. Files cached under the other choice are removed when the store
//! switches to memory.

use super::error::{IoContext, StoreError};
use super::layout::{self, Kind};
use super::Store;
use std::collections::BTreeMap;

/// The projections of the cluster's secrets by (namespace, name).
#[derive(Default)]
pub(super) struct MemorySecrets {
    by_name: BTreeMap<(String, String), Vec<u8>>,
    /// Changed since the sync loop last looked ([`Store::changes`]).
    changed: bool,
}

impl MemorySecrets {
    pub(super) fn put(&mut self, ns: &str, name: &str, bytes: &[u8]) -> bool {
        let key = (ns.to_string(), name.to_string());
        if self.by_name.get(&key).map(Vec::as_slice) == Some(bytes) {
            return false;
        }
        self.by_name.insert(key, bytes.to_vec());
        self.changed = true;
        true
    }

    pub(super) fn remove(&mut self, ns: &str, name: &str) -> bool {
        let gone = self
            .by_name
            .remove(&(ns.to_string(), name.to_string()))
            .is_some();
        self.changed |= gone;
        gone
    }

    pub(super) fn get(&self, ns: &str, name: &str) -> Option<&[u8]> {
        self.by_name
            .get(&(ns.to_string(), name.to_string()))
            .map(Vec::as_slice)
    }

    pub(super) fn names(&self) -> Vec<(String, String)> {
        self.by_name.keys().cloned().collect()
    }

    pub(super) fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }
}

impl Store {
    /// Keeps the cluster's secrets in memory from now on, removing the files of those
    /// cached on disk before and every quarantined secret file (a damaged copy is a
    /// copy on flash too). Returns how many files were removed.
    pub fn keep_cluster_secrets_in_memory(&mut self) -> Result<usize, StoreError> {
        self.check_writable()?;
        let dir = self.cluster.kind_dir(Kind::Secret);
        let mut removed = 0;
        for (ns, name) in self.cluster_names(Kind::Secret) {
            let Ok(file) = layout::file_name(&ns, &name) else {
                continue;
            };
            if super::atomic::remove_file(&dir, &file).at(&dir.join(&file))? {
                removed += 1;
            }
        }
        let quarantine = self.layout.quarantine_dir();
        removed += super::quarantine::purge(&quarantine, Kind::Secret).at(&quarantine)?;
        self.memory_secrets = Some(MemorySecrets::default());
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{Kind, Store};

    #[test]
    fn secrets_in_memory_never_reach_the_disk() {
        let dir = std::env::temp_dir().join(format!("tinylet-memsec-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut s = Store::open_at(&dir, &[]).unwrap();
        let secret = |v: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"s","namespace":"n"}},"data":{{"k":"{v}"}}}}"#
            )
        };
        s.put_cluster(Kind::Secret, "n", "s", secret("YQ==").as_bytes())
            .unwrap();
        let file = dir.join("cluster/secrets/n_s.json");
        assert!(file.exists());
        // A damaged secret moved aside earlier, and a damaged pod file.
        let q = dir.join("quarantine");
        std::fs::create_dir_all(&q).unwrap();
        let (bad_secret, bad_pod) = (
            q.join("20261201T000000Z-secrets-n_old.json"),
            q.join("20261201T000000Z-pods-n_p.json"),
        );
        std::fs::write(&bad_secret, b"{").unwrap();
        std::fs::write(&bad_pod, b"{").unwrap();
        assert_eq!(s.keep_cluster_secrets_in_memory().unwrap(), 2);
        assert!(!file.exists(), "cached before: removed");
        assert!(!bad_secret.exists(), "quarantined secret: removed");
        assert!(bad_pod.exists(), "only secrets go");
        assert!(s
            .put_cluster(Kind::Secret, "n", "s", secret("Yg==").as_bytes())
            .unwrap());
        assert!(!s
            .put_cluster(Kind::Secret, "n", "s", secret("Yg==").as_bytes())
            .unwrap());
        assert!(!file.exists());
        assert!(s.changes().objects, "a change is seen without a file");
        let got = s
            .secret_for(crate::model::pod::Source::Api, "n", "s")
            .unwrap();
        assert_eq!(got.get("k").unwrap(), b"b");
        assert_eq!(
            s.cluster_names(Kind::Secret),
            [("n".to_string(), "s".to_string())]
        );
        assert!(s.remove_cluster(Kind::Secret, "n", "s").unwrap());
        assert!(s
            .secret_for(crate::model::pod::Source::Api, "n", "s")
            .is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
