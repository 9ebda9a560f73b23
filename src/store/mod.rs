// Over 500 lines: the one Store facade (open, list, get, watch, status, notify), each
// method delegating to a submodule; its first 90 lines are the module doc.
//! The flat-file store: desired objects (pods, configmaps, secrets) and pod status
//! files, each in its own JSON file, written atomically.
//!
//! # Layout under `stateDir`
//! ```text
//! STATE/                          0700 when created here
//!   desired/pods/NS_NAME.json       0644  one v1 Pod per file, as applied
//!   desired/configmaps/NS_NAME.json 0644
//!   desired/secrets/NS_NAME.json    0600  directory 0700 (enforced at open)
//!   status/NS_NAME.json             0644  the agent's last PodStatus of each pod
//!   cluster/pods/NS_NAME.json       0644  the uplink's cache of the cluster's pods
//!   cluster/configmaps/NS_NAME.json 0644  bound to this node and of the objects they
//!   cluster/secrets/NS_NAME.json    0600  reference; directory 0700 ([`cluster`])
//!   quarantine/TIME-KIND-FILE       0700  files that did not parse, newest 32 kept
//! ```
//! Names are DNS-1123 (validated by the model) and re-checked where they become paths
//! ([`layout::file_name`]). Every write of desired state is write-temp, fsync, rename,
//! fsync-directory ([`atomic`]); status files, derived data, skip the fsyncs
//! ([`status`]). Readers skip temp files and [`Store::open`] removes those of writers
//! that are gone.
//!
//! # Read-only manifest directories and precedence
//! `manifestDirs` (pods baked into firmware) are read beside the state directory
//! ([`firmware`]). When both hold the same object, **the state directory's copy wins**:
//! an operator overrides a firmware pod with `tinylet apply`; deleting the override
//! brings the firmware pod back; deleting a firmware-only object is refused, naming its
//! file. An override inherits the firmware pod's uid, so switching between the two is
//! an update of one pod, not a new pod.
//!
//! # Cluster pods
//! Desired pods are the local ones (state over firmware) and the cluster's. Every pod
//! read carries its source in kubelet's `kubernetes.io/config.source` annotation (`file`
//! or `api`, set here whatever the file says), and a pod's configMap and secret lookups
//! go to its own source's tree only ([`Store::configmap_for`]). A cluster pod with the
//! namespace and name of a local pod is not run (local pods are the device owner's):
//! the uplink reports it Failed ([`Store::cluster_pod_shadowed`]). [`notify`] tells the
//! uplink which pods' status changed, which cluster pods finished terminating and which
//! local pods changed (the uplink shows them in the cluster as mirror pods).
//!
//! # Uids and timestamps
//! A new object without `metadata.uid` gets a random UUID v4 and `creationTimestamp`
//! now; both are kept on every later apply. An apply with an explicit uid different from
//! the stored one replaces the object: it is a new pod (new uid, new creation time), as
//! if deleted and created. Firmware objects get a uid derived from kind, namespace and
//! name, and their file's mtime as creation time (see [`uid`], [`firmware`]).
//!
//! # Flash
//! An apply whose result equals what is stored writes nothing; a status equal to the
//! last one writes nothing ([`status`]). [`Store::bytes_written`] counts what was
//! written, for tests and benches. [`Store::open_read_only`] (used by `tinylet get`)
//! creates, cleans, moves and writes nothing.
//!
//! # Change detection
//! [`Store::changed`] tells the agent whether any desired object may have changed since
//! it last asked, without reading files (inotify; see [`watch`] for the cost and the
//! fallback). The same watch names the status files someone else changed, and
//! [`Store::changes`] rewrites them ([`status`]).

pub mod agent_lock;
pub mod atomic;
mod deletion;
/// Where the store's bounded reads come from (kept at this path for its callers).
pub use crate::bounded;
mod cluster;
pub mod digest;
mod error;
pub mod firmware;
#[cfg(feature = "uplink")]
pub mod kept;
pub mod layout;
#[cfg(feature = "uplink")]
pub mod local_pods;
mod memory_secrets;
pub mod notify;
mod quarantine;
mod state_files;
pub mod status;
pub mod uid;
pub mod watch;
mod write;

pub use error::StoreError;
pub use layout::Kind;
pub use write::{Applied, Deleted};

use crate::config::Config;
use crate::model::pod::Source;
use crate::model::{ConfigMap, Object, Pod, PodStatus, Secret};
use error::IoContext;
use firmware::Firmware;
use layout::Layout;
use notify::{Notify, PodName};
use rustix::fd::BorrowedFd;
use state_files::{Access, Damaged};
use status::StatusFiles;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;
use watch::Watch;

/// Where an effective object comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The state directory (`tinylet apply`).
    State,
    /// A read-only manifest file.
    Firmware(PathBuf),
    /// The cluster (the uplink's cache, `STATE/cluster/`).
    Cluster,
}

/// What [`Store::changes`] found changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Changes {
    /// A pod may have been added, changed or removed.
    pub pods: bool,
    /// A configMap or secret may have changed (pods may read them).
    pub objects: bool,
    /// A pod's status file (or deletion record) may have changed: the agent's view, not
    /// a desired object, so [`Changes::any`] leaves it out.
    pub status: bool,
}

impl Changes {
    /// Whether any desired object may have changed.
    pub fn any(self) -> bool {
        self.pods || self.objects
    }
}

/// What [`Store::desired_pods_keeping_damaged`] found.
#[derive(Debug, Default)]
pub struct DesiredPods {
    /// The pods to run (state over firmware), sorted by namespace and name.
    pub pods: Vec<Pod>,
    /// Pod files that are there but cannot be used; left in place.
    pub damaged: Vec<DamagedPod>,
}

/// A desired pod file that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedPod {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// Why it cannot be used.
    pub reason: String,
}

impl DamagedPod {
    /// The damaged file `d` of pod directory `dir`; `None` when its name is no pod's.
    fn of(dir: &Path, d: Damaged) -> Option<DamagedPod> {
        let (ns, name) = layout::parse_file_name(&d.file)?;
        Some(DamagedPod {
            namespace: ns.to_string(),
            name: name.to_string(),
            path: dir.join(&d.file),
            reason: d.reason,
        })
    }
}

/// Index of the status directory in the store's watch (after the kind directories).
const STATUS_WATCH: usize = Kind::ALL.len();
/// Index of the first cluster kind directory in the watch (then the firmware's).
const CLUSTER_WATCH: usize = STATUS_WATCH + 1;

/// An object as the agent should see it, with its origin.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The object.
    pub object: Object,
    /// Where it came from.
    pub origin: Origin,
}

/// The store of one state directory plus the read-only manifest directories.
pub struct Store {
    layout: Layout,
    /// The `cluster/` tree of the same state directory.
    cluster: Layout,
    /// Digest of what each cluster file was last given, by kind and file name.
    cluster_known: HashMap<(Kind, String), u128>,
    notify: Notify,
    firmware: Firmware,
    firmware_scanned: bool,
    status: StatusFiles,
    watch: Option<Watch>,
    bytes_written: u64,
    read_only: bool,
    /// The cluster's secrets, when they are held in memory only (`cacheSecrets: false`).
    memory_secrets: Option<memory_secrets::MemorySecrets>,
}

impl Store {
    /// Opens the store of `cfg`: its `stateDir` and `manifestDirs`.
    pub fn open(cfg: &Config) -> Result<Store, StoreError> {
        Store::open_at(&cfg.state_dir, &cfg.manifest_dirs)
    }

    /// Opens the store of `cfg` for reading only: nothing is created, cleaned, moved or
    /// written, so `tinylet get` never touches the flash (and works on a state directory
    /// that does not exist yet). Bad files are logged and skipped.
    pub fn open_read_only(cfg: &Config) -> Store {
        Store::open_read_only_at(&cfg.state_dir, &cfg.manifest_dirs)
    }

    /// [`Store::open_read_only`] on explicit directories.
    pub fn open_read_only_at(state_dir: &Path, manifest_dirs: &[PathBuf]) -> Store {
        let layout = Layout::new(state_dir);
        Store {
            firmware: Firmware::new(manifest_dirs.to_vec()),
            firmware_scanned: false,
            status: StatusFiles::new(layout.status_dir()),
            cluster: layout.cluster(),
            cluster_known: HashMap::new(),
            notify: Notify::default(),
            layout,
            watch: None,
            bytes_written: 0,
            read_only: true,
            memory_secrets: None,
        }
    }

    /// Opens (creating the directories if needed) the store at `state_dir`, reading
    /// `manifest_dirs` beside it; removes temp files left by dead writers.
    pub fn open_at(state_dir: &Path, manifest_dirs: &[PathBuf]) -> Result<Store, StoreError> {
        let layout = Layout::new(state_dir);
        atomic::ensure_dir(state_dir, atomic::SECRET_DIR_MODE, false).at(state_dir)?;
        for kind in Kind::ALL {
            let dir = layout.kind_dir(kind);
            let mode = if kind.is_secret() {
                atomic::SECRET_DIR_MODE
            } else {
                atomic::PLAIN_DIR_MODE
            };
            atomic::ensure_dir(&dir, mode, kind.is_secret()).at(&dir)?;
            atomic::remove_stale_temps(&dir).at(&dir)?;
        }
        let status_dir = layout.status_dir();
        atomic::ensure_dir(&status_dir, atomic::PLAIN_DIR_MODE, false).at(&status_dir)?;
        atomic::remove_stale_temps(&status_dir).at(&status_dir)?;
        let quarantine = layout.quarantine_dir();
        atomic::ensure_dir(&quarantine, atomic::SECRET_DIR_MODE, true).at(&quarantine)?;
        let store = Store {
            firmware: Firmware::new(manifest_dirs.to_vec()),
            firmware_scanned: false,
            status: StatusFiles::new(status_dir),
            cluster: layout.cluster(),
            cluster_known: HashMap::new(),
            notify: Notify::default(),
            layout,
            watch: None,
            bytes_written: 0,
            read_only: false,
            memory_secrets: None,
        };
        store.ensure_cluster_dirs()?;
        Ok(store)
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        self.layout.root()
    }

    /// The read-only manifest directories.
    pub fn manifest_dirs(&self) -> &[PathBuf] {
        self.firmware.dirs()
    }

    /// Every effective object of `kind`: the local ones (state directory over
    /// firmware) and the cluster's (for pods, those not shadowed by a local pod), sorted
    /// by namespace and name. Bad state files are quarantined, bad firmware
    /// files skipped.
    pub fn list(&mut self, kind: Kind) -> Vec<Entry> {
        let state = state_files::list(&self.layout, kind, self.access());
        let mut out = self.effective(kind, state, &[]);
        let cluster = self.cluster_list(kind);
        let (cluster, _) = cluster_beside(&out, cluster);
        out.extend(cluster.into_iter().map(|object| Entry {
            object,
            origin: Origin::Cluster,
        }));
        // Stable: of a local and a cluster configMap of one name, the local one first.
        out.sort_by(|a, b| {
            (a.object.namespace(), a.object.name()).cmp(&(b.object.namespace(), b.object.name()))
        });
        out
    }

    /// The state objects `state` over the firmware's, sorted, pods with shared uids
    /// dropped; `damaged` state files (by file name) shadow their firmware object too:
    /// the state directory's copy wins even when it cannot be read.
    fn effective(&mut self, kind: Kind, state: Vec<Object>, damaged: &[Damaged]) -> Vec<Entry> {
        let mut out: Vec<Entry> = state
            .into_iter()
            .map(|mut object| {
                fill_uid(&mut object);
                Entry {
                    object: cluster::with_source(object, Source::File),
                    origin: Origin::State,
                }
            })
            .collect();
        self.firmware_scanned = true;
        for (object, path) in self.firmware.scan() {
            let shadowed = out.iter().any(|e| same_object(&e.object, &object))
                || damaged.iter().any(|d| {
                    layout::parse_file_name(&d.file) == Some((object.namespace(), object.name()))
                });
            if Kind::of(&object) == kind && !shadowed {
                out.push(Entry {
                    object: cluster::with_source(object, Source::File),
                    origin: Origin::Firmware(path),
                });
            }
        }
        out.sort_by(|a, b| {
            (a.object.namespace(), a.object.name()).cmp(&(b.object.namespace(), b.object.name()))
        });
        if kind == Kind::Pod {
            self.drop_shared_uids(&mut out);
        }
        out
    }

    /// Two pods must never share a uid (the agent keys workers, pod directories and log
    /// directories by it): of pods that do, only the first in namespace/name order is
    /// kept; the others are logged and skipped. `apply` refuses to make such a pair;
    /// they come from files written by hand or baked into firmware.
    fn drop_shared_uids(&self, entries: &mut Vec<Entry>) {
        let mut owners: HashMap<String, String> = HashMap::new();
        entries.retain(|e| {
            let (uid, source) = (&e.object.meta().uid, self.source(e));
            match owners.get(uid) {
                Some(owner) => {
                    log::error!(
                        "{source}: pod {}/{} has metadata.uid {uid:?}, already the uid of {owner}; \
                         skipped (two pods cannot share a uid)",
                        e.object.namespace(),
                        e.object.name()
                    );
                    false
                }
                None => {
                    let owner = format!(
                        "pod {}/{} ({source})",
                        e.object.namespace(),
                        e.object.name()
                    );
                    owners.insert(uid.clone(), owner);
                    true
                }
            }
        });
    }

    /// The file an entry was read from.
    fn source(&self, e: &Entry) -> String {
        let tree = match &e.origin {
            Origin::Firmware(path) => return path.display().to_string(),
            Origin::State => &self.layout,
            Origin::Cluster => &self.cluster,
        };
        let file = layout::file_name(e.object.namespace(), e.object.name()).unwrap_or_default();
        let kind = Kind::of(&e.object);
        tree.kind_dir(kind).join(file).display().to_string()
    }

    /// The pods the agent should run.
    pub fn desired_pods(&mut self) -> Vec<Pod> {
        self.list(Kind::Pod)
            .into_iter()
            .filter_map(|e| match e.object {
                Object::Pod(p) => Some(*p),
                _ => None,
            })
            .collect()
    }

    /// The pods the agent should run, for the agent: as [`Store::desired_pods`] (local
    /// and cluster pods), but a damaged pod file (a pod's file name, content torn,
    /// bit-flipped or otherwise not that pod) is neither used nor moved: it is
    /// reported, so the agent can put back the last good spec it holds
    /// ([`Store::restore_pod`]), or keep the pod's containers when it holds none. A pod
    /// is removed only when its file is.
    pub fn desired_pods_keeping_damaged(&mut self) -> DesiredPods {
        let (state, damaged) = self.pod_files(&self.layout.clone());
        let local = self.effective(Kind::Pod, state, &damaged);
        #[cfg(feature = "uplink")]
        self.note_local_pods(&local, &damaged);
        let (cluster, cluster_damaged) = self.pod_files(&self.cluster.clone());
        let cluster = cluster
            .into_iter()
            .map(|o| cluster::with_source(o, Source::Api))
            .collect();
        let (cluster, shadowed) = cluster_beside(&local, cluster);
        let uids: BTreeSet<&str> = cluster.iter().map(|o| o.meta().uid.as_str()).collect();
        self.notify.retain_terminated(|u| uids.contains(u));
        self.notify.set_shadowed(shadowed);
        let pods = local
            .into_iter()
            .map(|e| e.object)
            .chain(cluster)
            .filter_map(|o| match o {
                Object::Pod(p) => Some(*p),
                _ => None,
            })
            .collect();
        let damaged = [(&self.layout, damaged), (&self.cluster, cluster_damaged)]
            .into_iter()
            .flat_map(|(tree, damaged)| {
                let dir = tree.kind_dir(Kind::Pod);
                damaged
                    .into_iter()
                    .filter_map(move |d| DamagedPod::of(&dir, d))
            })
            .collect();
        DesiredPods { pods, damaged }
    }

    /// The local pods whose state file is there but cannot be used (read only: nothing
    /// is moved).
    pub fn damaged_local_pods(&self) -> Vec<DamagedPod> {
        let dir = self.layout.kind_dir(Kind::Pod);
        state_files::damaged(&self.layout, Kind::Pod)
            .into_iter()
            .filter_map(|d| DamagedPod::of(&dir, d))
            .collect()
    }

    /// The valid pod files of one tree, and (unless read-only) its damaged ones.
    fn pod_files(&self, tree: &Layout) -> (Vec<Object>, Vec<Damaged>) {
        if self.read_only {
            (
                state_files::list(tree, Kind::Pod, Access::ReadOnly),
                Vec::new(),
            )
        } else {
            state_files::list_keeping_damaged(tree, Kind::Pod)
        }
    }

    /// The effective object `kind` `ns/name`, if any: the local one, else the
    /// cluster's.
    pub fn get(&mut self, kind: Kind, ns: &str, name: &str) -> Result<Option<Entry>, StoreError> {
        if let Some(e) = self.get_local(kind, ns, name)? {
            return Ok(Some(e));
        }
        Ok(self.cluster_get(kind, ns, name).map(|object| Entry {
            object,
            origin: Origin::Cluster,
        }))
    }

    /// The local object `kind` `ns/name` (state directory over firmware), if any.
    pub fn get_local(
        &mut self,
        kind: Kind,
        ns: &str,
        name: &str,
    ) -> Result<Option<Entry>, StoreError> {
        let file = layout::file_name(ns, name).map_err(|e| StoreError::Invalid(e.0))?;
        if let Some(mut s) =
            state_files::read_or_quarantine(&self.layout, kind, &file, self.access())?
        {
            fill_uid(&mut s.object);
            return Ok(Some(Entry {
                object: cluster::with_source(s.object, Source::File),
                origin: Origin::State,
            }));
        }
        Ok(self
            .firmware_get(kind, ns, name)
            .map(|(object, path)| Entry {
                object: cluster::with_source(object, Source::File),
                origin: Origin::Firmware(path),
            }))
    }

    /// The configmap `ns/name` for the agent (errors are logged and read as absent).
    pub fn get_configmap(&mut self, ns: &str, name: &str) -> Option<ConfigMap> {
        match self.get_local(Kind::ConfigMap, ns, name) {
            Ok(Some(Entry {
                object: Object::ConfigMap(c),
                ..
            })) => Some(c),
            Ok(_) => None,
            Err(e) => {
                log::error!("configmap {ns}/{name}: {e}");
                None
            }
        }
    }

    /// The secret `ns/name` for the agent (errors are logged and read as absent).
    pub fn get_secret(&mut self, ns: &str, name: &str) -> Option<Secret> {
        match self.get_local(Kind::Secret, ns, name) {
            Ok(Some(Entry {
                object: Object::Secret(s),
                ..
            })) => Some(s),
            Ok(_) => None,
            Err(e) => {
                log::error!("secret {ns}/{name}: {e}");
                None
            }
        }
    }

    /// Whether any desired object (state or firmware) may have changed since the last
    /// call; the first call says yes. Cheap enough for every PLEG period.
    pub fn changed(&mut self) -> bool {
        self.changes().any()
    }

    /// Which kinds of desired objects may have changed since the last call (the first
    /// call says all). A firmware directory may hold any kind: its change counts for
    /// all of them.
    ///
    /// It also repairs status files that someone else changed (garbled, truncated,
    /// removed) since the last call, rewriting what the agent last wrote there (see
    /// [`status`]): with inotify at once, else when the directory's mtime moves.
    pub fn changes(&mut self) -> Changes {
        let dirs = self.watch_mut().poll();
        if dirs.dir(STATUS_WATCH) && !self.read_only {
            let files = self.watch_mut().take_files();
            self.bytes_written += self.status.repair(files.as_ref());
        }
        let kind = |k: Kind| {
            let i = Kind::ALL.iter().position(|x| *x == k).unwrap_or(0);
            dirs.dir(i) || dirs.dir(CLUSTER_WATCH + i)
        };
        let first_firmware = CLUSTER_WATCH + Kind::ALL.len();
        let firmware =
            (first_firmware..first_firmware + self.firmware.dirs().len()).any(|i| dirs.dir(i));
        let in_memory = self
            .memory_secrets
            .as_mut()
            .is_some_and(|m| m.take_changed());
        Changes {
            pods: firmware || kind(Kind::Pod),
            objects: firmware || kind(Kind::ConfigMap) || kind(Kind::Secret) || in_memory,
            status: dirs.dir(STATUS_WATCH),
        }
    }

    /// The change watch's fd (readable when a change is pending), to register with the
    /// reactor instead of polling; `None` when inotify is unavailable.
    pub fn watch_fd(&mut self) -> Option<BorrowedFd<'_>> {
        self.watch_mut().fd()
    }

    /// The watch, created on first use (CLI commands never need one): the kind
    /// directories, the status directory (at [`STATUS_WATCH`], its files watched too),
    /// the cluster's kind directories (from [`CLUSTER_WATCH`]), then the firmware
    /// directories.
    fn watch_mut(&mut self) -> &mut Watch {
        let (layout, cluster) = (&self.layout, &self.cluster);
        let firmware = &self.firmware;
        self.watch.get_or_insert_with(|| {
            let mut dirs: Vec<PathBuf> = Kind::ALL.iter().map(|k| layout.kind_dir(*k)).collect();
            dirs.push(layout.status_dir());
            dirs.extend(Kind::ALL.iter().map(|k| cluster.kind_dir(*k)));
            dirs.extend(firmware.dirs().iter().cloned());
            Watch::with_files(dirs, STATUS_WATCH)
        })
    }

    /// Records the status of pod `ns/name`; true when the file was (re)written, false
    /// when it already held exactly this status.
    pub fn write_status(
        &mut self,
        ns: &str,
        name: &str,
        status: &PodStatus,
    ) -> Result<bool, StoreError> {
        self.check_writable()?;
        let n = self.status.write(ns, name, status)?;
        self.bytes_written += n;
        if n > 0 {
            self.notify.mark(ns, name);
        }
        Ok(n > 0)
    }

    /// Records that `pod` is being deleted with `grace`, for `tinylet get` to show
    /// while its containers stop (removed with its status, [`Store::remove_status`]).
    pub fn record_deletion(&mut self, pod: &Pod, grace: Duration) -> Result<(), StoreError> {
        self.check_writable()?;
        self.bytes_written += self.status.record_deletion(pod, grace)?;
        Ok(())
    }

    /// The pod `ns/name` as recorded when its deletion began, if it is being deleted.
    pub fn deleted_pod(&self, ns: &str, name: &str) -> Option<Pod> {
        self.status.deleted_pod(ns, name)
    }

    /// The last status written for pod `ns/name`.
    pub fn read_status(&self, ns: &str, name: &str) -> Option<PodStatus> {
        self.status.read(ns, name)
    }

    /// Removes the status of pod `ns/name`; false when there was none.
    pub fn remove_status(&mut self, ns: &str, name: &str) -> Result<bool, StoreError> {
        self.check_writable()?;
        self.notify.mark(ns, name);
        self.status.remove(ns, name)
    }

    /// Starts telling the caller (the uplink) about status changes: the receiver is
    /// woken whenever a pod's status file was written or removed, a cluster pod
    /// finished terminating, or the agent read a local pod added, changed or removed;
    /// [`Store::take_dirty_pods`] says which pods (see [`notify`]).
    pub fn subscribe_status(&mut self) -> smol::channel::Receiver<()> {
        self.notify.subscribe()
    }

    /// The pods whose status needs sending since the last call.
    pub fn take_dirty_pods(&mut self) -> BTreeSet<PodName> {
        self.notify.take()
    }

    /// Marks pod `ns/name` as needing its status sent (e.g. after the uplink relisted).
    pub fn mark_pod_dirty(&mut self, ns: &str, name: &str) {
        self.notify.mark(ns, name);
    }

    /// The sync loop says a terminating cluster pod is gone from the runtime: the
    /// uplink may now delete it from the API.
    pub fn pod_terminated(&mut self, pod: &Pod) {
        let m = &pod.metadata;
        self.notify.terminated(&m.namespace, &m.name, &m.uid);
    }

    /// Whether the cluster pod with `uid` finished terminating (see
    /// [`Store::pod_terminated`]).
    pub fn is_terminated(&self, uid: &str) -> bool {
        self.notify.is_terminated(uid)
    }

    /// `(namespace, name)` of every status file.
    pub fn status_names(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.status.names()
    }

    /// Bytes this store has written to files since it was opened.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// How readers may treat bad files.
    fn access(&self) -> Access {
        if self.read_only {
            Access::ReadOnly
        } else {
            Access::Unlocked
        }
    }

    /// Refuses writes to a store opened with [`Store::open_read_only`].
    fn check_writable(&self) -> Result<(), StoreError> {
        if self.read_only {
            return Err(StoreError::Invalid(format!(
                "{}: store opened read-only",
                self.layout.root().display()
            )));
        }
        Ok(())
    }

    /// The firmware copy of an object, scanning the manifest directories first if that
    /// has not happened yet.
    fn firmware_get(&mut self, kind: Kind, ns: &str, name: &str) -> Option<(Object, PathBuf)> {
        if !self.firmware_scanned {
            self.firmware.scan();
            self.firmware_scanned = true;
        }
        self.firmware.get(kind, ns, name)
    }
}

/// A state file written by hand may lack a uid: give it the same stable uid a firmware
/// object would get rather than rewriting the file.
fn fill_uid(obj: &mut Object) {
    if obj.meta().uid.is_empty() {
        let uid = uid::derived_uid(obj.kind(), obj.namespace(), obj.name());
        obj.meta_mut().uid = uid;
    }
}

/// The cluster objects to show beside the `local` ones, and the names of the cluster
/// pods left out: those with a local pod's namespace and name (the device owner's), or
/// its uid (two pods never share one).
fn cluster_beside(local: &[Entry], cluster: Vec<Object>) -> (Vec<Object>, BTreeSet<PodName>) {
    let mut shadowed = BTreeSet::new();
    let kept = cluster
        .into_iter()
        .filter(|o| {
            if !matches!(o, Object::Pod(_)) {
                return true;
            }
            let clash = local
                .iter()
                .find(|e| same_object(&e.object, o) || e.object.meta().uid == o.meta().uid);
            if let Some(e) = clash {
                log::debug!(
                    "cluster pod {}/{} not run: the local pod {}/{} has its name or uid",
                    o.namespace(),
                    o.name(),
                    e.object.namespace(),
                    e.object.name()
                );
                shadowed.insert((o.namespace().to_string(), o.name().to_string()));
            }
            clash.is_none()
        })
        .collect();
    (kept, shadowed)
}

fn same_object(a: &Object, b: &Object) -> bool {
    Kind::of(a) == Kind::of(b) && a.namespace() == b.namespace() && a.name() == b.name()
}
