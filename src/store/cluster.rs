//! The cluster subtree, `STATE/cluster/{pods,configmaps,secrets}/NS_NAME.json`: the
//! uplink's cache of the pods bound to this node and of the configMaps and secrets they
//! reference, so that every pod last bound here runs again after a reboot without an
//! uplink. Same names, modes (secrets 0600 in a 0700 directory) and durable atomic
//! writes as `desired/`, read back through the same checks (a bad file is quarantined).
//!
//! What is stored is the uplink's projection of the API object (no status,
//! resourceVersion or managedFields), so an object that comes back unchanged (our own
//! status patch echoed by the watch, a relist) compares equal and writes nothing. The
//! comparison uses a digest of what each file was last given, so it reads no file
//! either; only the first look at a file after a start reads it once.
//!
//! Only the agent writes here (the agent lock keeps a second one out); `tinylet get`
//! reads it, `tinylet delete` refuses to touch it (the cluster owns these objects).

use super::atomic;
use super::digest::fnv1a128;
use super::error::{IoContext, StoreError};
use super::layout::{self, Kind};
use super::state_files::{self, Access};
use super::Store;
use crate::model::pod::Source;
use crate::model::{ConfigMap, Object, Secret};

impl Store {
    /// Stores `bytes` (a projection the caller parsed and validated) as the cluster
    /// object `kind` `ns/name`. Returns whether the file was written: false when it
    /// already held exactly these bytes.
    pub fn put_cluster(
        &mut self,
        kind: Kind,
        ns: &str,
        name: &str,
        bytes: &[u8],
    ) -> Result<bool, StoreError> {
        self.check_writable()?;
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        if let Some(m) = self.memory_for(kind) {
            return Ok(m.put(ns, name, bytes));
        }
        let dir = self.cluster.kind_dir(kind);
        let digest = fnv1a128(bytes);
        let key = (kind, file);
        if self.cluster_known.get(&key) == Some(&digest) {
            return Ok(false);
        }
        let path = dir.join(&key.1);
        let on_disk = atomic::read_optional(&path).at(&path)?;
        if on_disk.as_deref() == Some(bytes) {
            self.cluster_known.insert(key, digest);
            return Ok(false);
        }
        let mode = if kind.is_secret() {
            atomic::SECRET_FILE_MODE
        } else {
            atomic::PLAIN_FILE_MODE
        };
        self.bytes_written += atomic::write_file(&dir, &key.1, bytes, mode).at(&path)?;
        self.cluster_known.insert(key, digest);
        Ok(true)
    }

    /// Removes the cluster object `kind` `ns/name`; false when there was none.
    pub fn remove_cluster(&mut self, kind: Kind, ns: &str, name: &str) -> Result<bool, StoreError> {
        self.check_writable()?;
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        if let Some(m) = self.memory_for(kind) {
            return Ok(m.remove(ns, name));
        }
        let dir = self.cluster.kind_dir(kind);
        self.cluster_known.remove(&(kind, file.clone()));
        atomic::remove_file(&dir, &file).at(&dir.join(&file))
    }

    /// Whether a cluster object file `kind` `ns/name` exists (valid or not).
    pub fn cluster_exists(&self, kind: Kind, ns: &str, name: &str) -> bool {
        layout::file_name(ns, name).is_ok_and(|f| self.cluster.kind_dir(kind).join(f).exists())
    }

    /// `(namespace, name)` of every cluster object file of `kind`, sorted.
    pub fn cluster_names(&self, kind: Kind) -> Vec<(String, String)> {
        if let (Kind::Secret, Some(m)) = (kind, &self.memory_secrets) {
            return m.names();
        }
        let dir = self.cluster.kind_dir(kind);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        layout::sorted_names(entries)
    }

    /// The cluster object `kind` `ns/name` (a pod with its source set), if stored and
    /// valid (a bad file is quarantined; a bad pod file only logged).
    pub fn cluster_get(&mut self, kind: Kind, ns: &str, name: &str) -> Option<Object> {
        let file = layout::file_name(ns, name).ok()?;
        if let (Kind::Secret, Some(m)) = (kind, &self.memory_secrets) {
            let source = format!("secret {ns}/{name} (in memory)");
            let obj = crate::model::parse_object(&source, m.get(ns, name)?).ok()?;
            return Some(with_source(obj, Source::Api));
        }
        match state_files::read_or_quarantine(&self.cluster, kind, &file, self.cluster_access(kind))
        {
            Ok(found) => found.map(|s| with_source(s.object, Source::Api)),
            Err(e) => {
                log::error!("{e}");
                None
            }
        }
    }

    /// Every valid cluster object of `kind`, sorted by namespace and name.
    pub fn cluster_list(&mut self, kind: Kind) -> Vec<Object> {
        state_files::list(&self.cluster, kind, self.cluster_access(kind))
            .into_iter()
            .map(|o| with_source(o, Source::Api))
            .collect()
    }

    /// The in-memory table that holds `kind` instead of the disk, if any.
    fn memory_for(&mut self, kind: Kind) -> Option<&mut super::memory_secrets::MemorySecrets> {
        (kind == Kind::Secret)
            .then_some(self.memory_secrets.as_mut())
            .flatten()
    }

    /// How the uplink's reads treat a bad file: a damaged pod file is only logged (the
    /// sync loop decides about it, see [`Store::desired_pods_keeping_damaged`]: its pod
    /// must not stop because another reader moved the file away).
    fn cluster_access(&self, kind: Kind) -> Access {
        if kind == Kind::Pod {
            Access::ReadOnly
        } else {
            self.access()
        }
    }

    /// The configMap `ns/name` a pod from `source` sees: a cluster pod only the
    /// cluster's, a local pod only the device's (errors are logged, read as absent).
    pub fn configmap_for(&mut self, source: Source, ns: &str, name: &str) -> Option<ConfigMap> {
        match source {
            Source::File => self.get_configmap(ns, name),
            Source::Api => match self.cluster_get(Kind::ConfigMap, ns, name)? {
                Object::ConfigMap(c) => Some(c),
                _ => None,
            },
        }
    }

    /// The secret `ns/name` a pod from `source` sees (see [`Store::configmap_for`]).
    pub fn secret_for(&mut self, source: Source, ns: &str, name: &str) -> Option<Secret> {
        match source {
            Source::File => self.get_secret(ns, name),
            Source::Api => match self.cluster_get(Kind::Secret, ns, name)? {
                Object::Secret(s) => Some(s),
                _ => None,
            },
        }
    }

    /// Whether a local pod (state directory or firmware) is named `ns/name`: such a
    /// name is the device owner's, and a cluster pod under it is refused. A state file
    /// counts even when damaged (it keeps its name, see the store's doc); nothing is
    /// read or moved.
    pub fn local_pod_exists(&mut self, ns: &str, name: &str) -> bool {
        let Ok(file) = layout::file_name(ns, name) else {
            return false;
        };
        self.layout.kind_dir(Kind::Pod).join(file).exists()
            || self.firmware_get(Kind::Pod, ns, name).is_some()
    }

    /// Whether the cluster pod `ns/name` is refused because a local pod has its name
    /// (as last seen by the agent's look at the desired pods).
    pub fn cluster_pod_shadowed(&self, ns: &str, name: &str) -> bool {
        self.notify.is_shadowed(ns, name)
    }

    /// The directories of the cluster tree, created when missing (the secrets'
    /// forced to 0700), with temp files of dead writers removed.
    pub(super) fn ensure_cluster_dirs(&self) -> Result<(), StoreError> {
        for kind in Kind::ALL {
            let dir = self.cluster.kind_dir(kind);
            let mode = if kind.is_secret() {
                atomic::SECRET_DIR_MODE
            } else {
                atomic::PLAIN_DIR_MODE
            };
            atomic::ensure_dir(&dir, mode, kind.is_secret()).at(&dir)?;
            atomic::remove_stale_temps(&dir).at(&dir)?;
        }
        Ok(())
    }
}

/// `obj` with its source recorded when it is a pod (see [`crate::model::pod::CONFIG_SOURCE`]).
pub(super) fn with_source(mut obj: Object, source: Source) -> Object {
    if let Object::Pod(p) = &mut obj {
        p.set_source(source);
    }
    obj
}
