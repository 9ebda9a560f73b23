//! The sync loop: the one owner of "which pods exist". Every PLEG period it picks up
//! store changes (apply/delete), relists the runtime, routes PLEG events to the workers
//! of the pods they concern, and removes what carries our labels but belongs to no
//! desired pod (orphans, e.g. after a pod was deleted while the agent was down). A
//! failed relist is logged and retried; the loop never exits on a runtime outage.
//!
//! A desired pod file that turns out damaged (torn, bit-flipped) never stops its pod:
//! a pod is removed only when its file is. When the loop holds the pod's last good
//! spec, the damaged file goes to quarantine, that spec is written back in its place
//! and the pod's status says so. When it holds none (the agent started with the file
//! already damaged) but the runtime has the pod, the file is left where it is and the
//! pod's containers are not taken for orphans (matched by namespace and name): they run
//! unsupervised until the file is fixed (`apply`) or removed (`delete`), and the error
//! log says so once. When the runtime has nothing of it either, the file goes to
//! quarantine like any bad file.
//!
//! A cluster pod the API server is deleting ([`Pod::terminating`]) is stopped by its
//! worker with the deletion's grace period (a worker is started for it if it has none,
//! e.g. after an agent restart); once that worker is done, nothing of the pod is left on
//! the runtime and the store is told ([`crate::store::Store::pod_terminated`]), so the
//! uplink can delete the pod from the API. Its file stays until then, and no worker is
//! started for it again meanwhile.

use super::admission;
use super::context::Context;
use super::housekeeping::Housekeeping;
use super::pleg::{self, Snapshot};
use super::reconcile::{self, Action};
use super::worker::{self, Msg};
use super::{kill, observe};
use crate::cri::{pb, CriError};
use crate::kuberuntime::agent_mark;
use crate::model::Pod;
use crate::node::admit::Refusal;
use crate::store::DamagedPod;
use async_io::Async;
use rustix::fd::OwnedFd;
use smol::channel::Sender;
use smol::{future, Task, Timer};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::{Duration, Instant};

struct WorkerHandle {
    tx: Sender<Msg>,
    task: Task<()>,
    /// The spec the worker runs, shared with it (one copy of each pod's spec).
    pod: Rc<Pod>,
    /// The worker stops the pod (deleted, terminating, refused); it still counts
    /// toward the node's pods and resources until the worker is done.
    deleting: bool,
    /// Set by the worker: the pod reached Succeeded or Failed, or its worker stopped
    /// and removed it (it no longer counts).
    finished: Rc<Cell<bool>>,
}

/// The agent's main loop: reads the desired pods, relists the runtime, runs one worker per
/// pod and the housekeeping.
pub struct SyncLoop {
    ctx: Rc<Context>,
    workers: BTreeMap<String, WorkerHandle>,
    last: Option<Snapshot>,
    /// [`pleg::fingerprint`] of the lists `last` was built from.
    last_fingerprint: u64,
    orphans: BTreeMap<String, Task<()>>,
    relist_failing: bool,
    ready: bool,
    housekeeping: Housekeeping,
    /// `(namespace, name)` of pods whose desired file is damaged and whose spec the
    /// loop never had: their containers are kept, not removed as orphans.
    held: BTreeSet<(String, String)>,
    /// [`Self::held`] as of the previous look at the store (a hold is logged once).
    held_before: BTreeSet<(String, String)>,
    /// Pods the node refused at admission (by uid), with the spec refused: no worker
    /// runs them (a worker that ran an earlier spec stops); a changed spec is admitted
    /// afresh.
    refused: BTreeMap<String, Rc<Pod>>,
    /// Pods (by uid) the runtime ran when the agent started, not yet judged since:
    /// placement is not held against them again ([`reconcile::Now::adopted`]).
    adopted: BTreeSet<String>,
}

impl SyncLoop {
    /// A loop with no pods yet.
    pub fn new(ctx: Rc<Context>) -> SyncLoop {
        SyncLoop {
            housekeeping: Housekeeping::new(&ctx),
            ctx,
            workers: BTreeMap::new(),
            last: None,
            last_fingerprint: 0,
            orphans: BTreeMap::new(),
            relist_failing: false,
            ready: false,
            held: BTreeSet::new(),
            held_before: BTreeSet::new(),
            refused: BTreeMap::new(),
            adopted: BTreeSet::new(),
        }
    }

    /// Runs forever: a tick every PLEG period, and in between, at once, whatever the
    /// store's watch reports (so `apply` does not wait for the period, and a store
    /// change costs no relist: a new pod's worker starts straight away).
    pub async fn run(mut self) {
        self.adopted = self.running_at_start().await;
        let watch = self.store_watch();
        loop {
            self.tick().await;
            let next = Instant::now() + self.ctx.cfg.pleg_period;
            if let Some(w) = &watch {
                while self.event_before(w, next).await {
                    self.store_changes();
                }
            }
            Timer::at(next).await;
        }
    }

    /// Waits for the store's watch to turn readable (true) or for `deadline` (false).
    /// A watch that fails waits for the deadline (the tick polls the store anyway).
    /// With the uplink, a pod's service-account token that changed (it is held in
    /// memory, not in the store) wakes it too.
    async fn event_before(&self, watch: &Async<OwnedFd>, deadline: Instant) -> bool {
        let store = future::or(
            async {
                match watch.readable().await {
                    Ok(()) => true,
                    Err(e) => {
                        log::debug!("store watch: {e}");
                        Timer::at(deadline).await;
                        false
                    }
                }
            },
            async {
                Timer::at(deadline).await;
                false
            },
        );
        #[cfg(feature = "uplink")]
        let store = future::or(
            async {
                let services = self.ctx.services.changed_wait();
                let claims = self.ctx.claims.changed_wait();
                let node = self.ctx.node_labels.changed_wait();
                let objects = future::or(services, future::or(claims, node));
                future::or(self.ctx.tokens.changed(), objects).await;
                true
            },
            store,
        );
        store.await
    }

    /// The store's inotify fd registered with the reactor (a duplicate, so the store
    /// keeps its own); `None` when the store polls mtimes instead.
    fn store_watch(&self) -> Option<Async<OwnedFd>> {
        let mut store = self.ctx.store.borrow_mut();
        let fd = rustix::io::dup(store.watch_fd()?).ok()?;
        Async::new(fd)
            .map_err(|e| log::warn!("store watch not registered ({e}); polling"))
            .ok()
    }

    /// One period: store changes, relist, events, orphans, finished workers.
    pub async fn tick(&mut self) {
        self.store_changes();
        self.relist().await;
        let before = self.workers.len();
        let ctx = &self.ctx;
        self.workers.retain(|uid, w| {
            let done = w.deleting && w.task.is_finished();
            if done {
                log::debug!("worker of pod {uid} finished");
                if w.pod.terminating() {
                    ctx.store.borrow_mut().pod_terminated(&w.pod);
                }
            }
            !done
        });
        if self.workers.len() < before {
            // A pod applied again with the same uid while its old self was being
            // deleted was skipped then: it gets its worker now.
            self.reconcile_desired();
        }
        self.orphans.retain(|_, t| !t.is_finished());
        // GC needs the complete desired set: only once the store has been read.
        if self.ready {
            let desired: Vec<&Pod> = self
                .workers
                .values()
                .filter(|w| !w.deleting)
                .map(|w| &*w.pod)
                .collect();
            let evict = self.housekeeping.tick(&self.ctx, &desired).await;
            if let Some(e) = evict {
                if let Some(w) = self.workers.get(&e.uid) {
                    let _ = w.tx.try_send(Msg::Evict(e.message, e.grace));
                }
            }
        }
    }

    /// Acts on what changed in the store since the last look: wakes every pod when a
    /// configMap or secret changed (it may project or read it), then starts, updates
    /// and deletes workers when pods changed. Pods that did not change are left alone.
    /// Pods whose service-account token changed (uplink) are woken first.
    fn store_changes(&mut self) {
        #[cfg(feature = "uplink")]
        for uid in self.ctx.tokens.take_changed() {
            if let Some(w) = self.workers.get(&uid) {
                let _ = w.tx.try_send(Msg::Wake);
            }
        }
        // Pods of a namespace whose Services were listed (a first time, or changed)
        // may be waiting to make a container with their variables (the master
        // service's namespace: every pod), and pods of a namespace whose claims were
        // resolved, to set up their volumes.
        #[cfg(feature = "uplink")]
        {
            let mut namespaces = self.ctx.services.take_changed();
            let all = namespaces.contains(crate::kuberuntime::service_env::MASTER_NAMESPACE);
            namespaces.extend(self.ctx.claims.take_changed());
            for w in self.workers.values() {
                if all || namespaces.contains(&w.pod.metadata.namespace) {
                    let _ = w.tx.try_send(Msg::Wake);
                }
            }
        }
        let changes = self.ctx.store.borrow_mut().changes();
        if changes.objects {
            // Before the reconcile, so that new workers are not woken twice.
            self.wake_all();
        }
        let relabelled = self.ctx.node_labels.take_changed() && self.forget_local_refusals();
        if changes.pods || relabelled {
            self.reconcile_desired();
        }
    }

    /// The Node's labels changed: local pods the node refused are judged again at the
    /// next reconcile (their owner has no controller to make them anew; one refused for
    /// its node selector may fit now). A refused cluster pod stays refused: its `Failed`
    /// is terminal in the API, as with kubelet, and its controller makes a new pod,
    /// which is judged by the new labels. True when one was forgotten.
    fn forget_local_refusals(&mut self) -> bool {
        let before = self.refused.len();
        self.refused
            .retain(|_, p| p.source() == crate::model::pod::Source::Api);
        self.refused.len() < before
    }

    /// The uids of the pods the runtime runs now (a ready sandbox), asked once before
    /// the first admission: after an agent restart these are pods the node admitted
    /// before. None when the runtime cannot say.
    async fn running_at_start(&self) -> BTreeSet<String> {
        match self.list().await {
            Ok(Some((_, snap))) => snap
                .into_iter()
                .filter(|(_, r)| r.sandboxes.iter().any(|s| s.ready))
                .map(|(uid, _)| uid)
                .collect(),
            Ok(None) => BTreeSet::new(),
            Err(e) => {
                log::warn!("listing the running pods at start: {e}; placement is judged for all");
                BTreeSet::new()
            }
        }
    }

    /// Starts workers for new pods, updates changed ones, deletes removed ones, as the
    /// plan says ([`super::reconcile`]: every new pod and every changed spec admitted
    /// first).
    fn reconcile_desired(&mut self) {
        let found = self.ctx.store.borrow_mut().desired_pods_keeping_damaged();
        let mut desired = found.pods;
        self.held_before = std::mem::take(&mut self.held);
        for d in found.damaged {
            self.damaged_pod(d, &mut desired);
        }
        let seen: BTreeSet<String> = desired
            .iter()
            .filter(|p| !p.terminating())
            .map(|p| p.metadata.uid.clone())
            .collect();
        let workers: Vec<reconcile::Worker<'_>> = self
            .workers
            .values()
            .map(|w| reconcile::Worker {
                pod: &w.pod,
                deleting: w.deleting,
                finished: w.finished.get(),
            })
            .collect();
        let plan = admission::plan(&self.ctx, desired, &workers, &self.refused, &self.adopted);
        drop(workers);
        for action in plan {
            match action {
                Action::Start(pod) => self.start(pod),
                Action::Adopt(pod) => {
                    let m = &pod.metadata;
                    log::info!(
                        "pod {}/{}: running before the agent started; kept though the node's \
                         labels no longer match its node selector or affinity",
                        m.namespace,
                        m.name
                    );
                    self.start(pod)
                }
                Action::Update(pod) => self.update(pod),
                Action::UpdateWithout { pod, refusal } => {
                    admission::not_run(&self.ctx, &pod, &refusal);
                    self.update(pod)
                }
                Action::Refuse { pod, refusal, stop } => self.refuse(pod, &refusal, stop),
                Action::Delete(uid) => self.delete(&uid),
                Action::Terminate(pod) => self.terminating(pod),
            }
        }
        self.refused.retain(|uid, _| seen.contains(uid));
    }

    /// Starts the worker of a pod the plan admitted (or that has finished).
    fn start(&mut self, pod: Pod) {
        let uid = pod.metadata.uid.clone();
        self.refused.remove(&uid);
        self.adopted.remove(&uid);
        log::info!(
            "pod {}/{}: added (uid {uid})",
            pod.metadata.namespace,
            pod.metadata.name
        );
        // Only a worker of this uid makes things for it, and there is none:
        // when the last relist saw nothing of it, there is nothing.
        let absent = self.last.as_ref().is_some_and(|s| !s.contains_key(&uid));
        let pod = Rc::new(pod);
        let finished = Rc::new(Cell::new(false));
        let (tx, task) = worker::spawn(self.ctx.clone(), pod.clone(), absent, finished.clone());
        let handle = WorkerHandle {
            tx,
            task,
            pod,
            deleting: false,
            finished,
        };
        self.workers.insert(uid, handle);
    }

    /// Gives a worker its pod's new version: an admitted spec, or new metadata.
    fn update(&mut self, pod: Pod) {
        self.refused.remove(&pod.metadata.uid);
        let Some(w) = self.workers.get_mut(&pod.metadata.uid) else {
            return;
        };
        if w.pod.spec != pod.spec {
            let m = &pod.metadata;
            log::info!("pod {}/{}: spec changed (admitted)", m.namespace, m.name);
        }
        w.pod = Rc::new(pod);
        let _ = w.tx.try_send(Msg::Update(w.pod.clone()));
    }

    /// The node does not run `pod`'s spec: when a worker runs an earlier one (`stop`), it
    /// stops the pod and leaves its status Failed with the refusal (see
    /// [`Msg::Refused`]); otherwise the status and event are left here. The refusal is
    /// kept until the spec changes (its labels, or the API's word that it failed,
    /// change nothing).
    fn refuse(&mut self, pod: Pod, r: &Refusal, stop: bool) {
        self.adopted.remove(&pod.metadata.uid);
        match self.workers.get_mut(&pod.metadata.uid) {
            Some(w) if stop => {
                let m = &pod.metadata;
                log::warn!(
                    "pod {}/{}: changed spec refused by the node ({}): stopping it",
                    m.namespace,
                    m.name,
                    r.reason
                );
                w.deleting = true;
                let _ = w.tx.try_send(Msg::Refused(r.clone()));
            }
            _ => admission::refused(&self.ctx, &pod, r),
        }
        self.refused.insert(pod.metadata.uid.clone(), Rc::new(pod));
    }

    /// The pod of `uid` left the desired set: its worker deletes it.
    fn delete(&mut self, uid: &str) {
        let Some(w) = self.workers.get_mut(uid) else {
            return;
        };
        log::info!(
            "pod {}/{}: removed from the desired set (uid {uid})",
            w.pod.metadata.namespace,
            w.pod.metadata.name
        );
        w.deleting = true;
        let _ = w.tx.try_send(Msg::Delete);
    }

    /// A cluster pod the API server is deleting: its worker stops it with the deletion's
    /// grace period (preStop hooks first) and removes it; a new worker does only that
    /// (see the module doc). Once it has finished, nothing more is done here.
    fn terminating(&mut self, pod: Pod) {
        let uid = pod.metadata.uid.clone();
        let (ns, name) = (&pod.metadata.namespace, &pod.metadata.name);
        let grace = super::kill::grace_period(&pod);
        match self.workers.get_mut(&uid) {
            Some(w) if w.deleting => {}
            Some(w) => {
                log::info!("pod {ns}/{name}: deleted in the cluster (grace period {grace:?})");
                w.pod = Rc::new(pod);
                w.deleting = true;
                let _ = w.tx.try_send(Msg::Update(w.pod.clone()));
                let _ = w.tx.try_send(Msg::Delete);
            }
            None if self.ctx.store.borrow().is_terminated(&uid) => {}
            None => {
                log::info!("pod {ns}/{name}: deleted in the cluster; making sure it is stopped");
                let pod = Rc::new(pod);
                let finished = Rc::new(Cell::new(false));
                let (tx, task) =
                    worker::spawn(self.ctx.clone(), pod.clone(), false, finished.clone());
                let handle = WorkerHandle {
                    tx,
                    task,
                    pod,
                    deleting: true,
                    finished,
                };
                self.workers.insert(uid, handle);
            }
        }
    }

    /// A pod file that cannot be read: with a worker for the pod, its spec stays
    /// desired and is written back over the damaged file (quarantined); without one the
    /// pod is held (see the module doc).
    fn damaged_pod(&mut self, d: DamagedPod, desired: &mut Vec<Pod>) {
        let (ns, name, path) = (&d.namespace, &d.name, d.path.display());
        let live = self.workers.values().find(|w| {
            !w.deleting && w.pod.metadata.namespace == *ns && w.pod.metadata.name == *name
        });
        let Some(w) = live else {
            self.hold_or_quarantine(d);
            return;
        };
        let uid = &w.pod.metadata.uid;
        desired.retain(|p| {
            p.metadata.uid != *uid && (&p.metadata.namespace, &p.metadata.name) != (ns, name)
        });
        desired.push(Pod::clone(&w.pod));
        match self.ctx.store.borrow_mut().restore_pod(&w.pod) {
            Ok(Some(moved)) => {
                let note = format!(
                    "desired file {path} was damaged and moved to {}; the last good spec \
                     was written back and keeps running",
                    moved.display()
                );
                log::error!("pod {ns}/{name} (uid {uid}): {note}");
                let _ = w.tx.try_send(Msg::DesiredFileRestored(note));
            }
            // Applied or deleted meanwhile: the next look at the store acts on that.
            Ok(None) => {}
            Err(e) => log::error!(
                "pod {ns}/{name} (uid {uid}): desired file {path} is damaged ({}) and the \
                 last good spec could not be written back: {e}; the pod keeps running it",
                d.reason
            ),
        }
    }

    /// A damaged pod file whose spec no worker holds. When the last relist saw nothing
    /// of the pod (it never ran here, e.g. a file that was bad from the start), there is
    /// nothing to protect: the file goes to quarantine. Otherwise (or before the first
    /// relist) the pod is held: the file stays and its containers are not taken for
    /// orphans. The error is logged when the hold starts, not at every look.
    fn hold_or_quarantine(&mut self, d: DamagedPod) {
        let (ns, name) = (&d.namespace, &d.name);
        let on_runtime = |snap: &Snapshot| {
            snap.values()
                .flat_map(|r| &r.sandboxes)
                .any(|s| s.namespace == *ns && s.name == *name)
        };
        if self.last.as_ref().is_some_and(|s| !on_runtime(s)) {
            match self.ctx.store.borrow_mut().quarantine_pod_file(&d) {
                Ok(_) => return,
                Err(e) => log::error!("{}: cannot be quarantined: {e}", d.path.display()),
            }
        }
        let key = (d.namespace.clone(), d.name.clone());
        if !self.held_before.contains(&key) {
            log::error!(
                "{}: {}; no good copy of pod {ns}/{name} is known, so the file stays \
                 where it is and the pod's containers keep running unsupervised until it \
                 is fixed (tinylet apply) or removed (tinylet delete pod {ns}/{name})",
                d.path.display(),
                d.reason
            );
        }
        self.held.insert(key);
    }

    /// Lists the runtime: the fingerprint and snapshot of what it holds, or `None` when
    /// the lists are the same as at the last relist (nothing decoded then).
    async fn list(&self) -> Result<Option<(u64, Snapshot)>, RelistError> {
        let rt = &self.ctx.cri.runtime;
        let s = rt
            .list_pod_sandbox_items()
            .await
            .map_err(RelistError::Cri)?;
        let c = rt.list_containers_items().await.map_err(RelistError::Cri)?;
        let fp = pleg::fingerprint(&s, &c);
        if self.last.is_some() && self.last_fingerprint == fp {
            return Ok(None);
        }
        let mut sandboxes =
            pleg::decode::<pb::PodSandbox>(&s).map_err(|e| RelistError::Decode("sandboxes", e))?;
        let mut containers =
            pleg::decode::<pb::Container>(&c).map_err(|e| RelistError::Decode("containers", e))?;
        // Another agent's pods on the same runtime are neither adopted nor orphans here.
        let mark = agent_mark::mark(&self.ctx.cfg.state_dir);
        agent_mark::retain_ours(&mark, &mut sandboxes, &mut containers);
        Ok(Some((fp, pleg::snapshot(&sandboxes, &containers))))
    }

    async fn relist(&mut self) {
        let start = Instant::now();
        let listed = self.list().await;
        crate::metrics::relist(start.elapsed());
        crate::metrics::health::ticked(listed.as_ref().err().map(|e| e.to_string()));
        let fresh = match listed {
            Ok(x) => x,
            Err(e) => {
                if !self.relist_failing {
                    log::warn!(
                        "relist failed, retrying every {:?}: {e}",
                        self.ctx.cfg.pleg_period
                    );
                }
                self.relist_failing = true;
                return;
            }
        };
        if std::mem::take(&mut self.relist_failing) {
            log::info!("relist works again; resyncing every pod");
            self.wake_all();
        }
        if let Some((fp, snap)) = fresh {
            if let Some(old) = &self.last {
                for ev in pleg::diff(old, &snap) {
                    log::debug!("pleg: {ev:?}");
                    crate::metrics::pleg_event(ev.kind());
                    if let Some(w) = self.workers.get(ev.pod_uid()) {
                        let _ = w.tx.try_send(Msg::Wake);
                    }
                }
            }
            let first = self.last.is_none();
            self.last = Some(snap);
            self.last_fingerprint = fp;
            if first && !self.held.is_empty() {
                // Held before the runtime was seen: those it holds nothing of go now.
                self.reconcile_desired();
            }
        }
        // Also with an unchanged snapshot: the workers may have changed.
        if let Some(snap) = self.last.take() {
            self.remove_orphans(&snap);
            self.last = Some(snap);
        }
        if !self.ready {
            self.ready = true;
            log::info!("first relist done: {} pods desired", self.workers.len());
            if let Err(e) = crate::sdnotify::notify("READY=1") {
                log::warn!("sd_notify READY=1: {e}");
            }
        }
    }

    fn wake_all(&self) {
        for w in self.workers.values() {
            let _ = w.tx.try_send(Msg::Wake);
        }
    }

    /// Stops and removes pods on the runtime with our labels that no worker owns.
    fn remove_orphans(&mut self, snap: &Snapshot) {
        for uid in snap.keys() {
            if self.workers.contains_key(uid) || self.orphans.contains_key(uid) {
                continue;
            }
            let rec = &snap[uid];
            let held = rec.sandboxes.iter().any(|s| {
                self.held
                    .iter()
                    .any(|(ns, name)| s.namespace == *ns && s.name == *name)
            });
            if held {
                continue;
            }
            log::info!(
                "pod uid {uid} is not desired: removing its {} sandboxes and {} containers",
                rec.sandboxes.len(),
                rec.containers.len()
            );
            // Its cgroups are this agent's to remove once it is gone.
            if let Some(cg) = &self.ctx.cgroups {
                cg.claim(uid);
            }
            let (ctx, uid2) = (self.ctx.clone(), uid.clone());
            self.orphans.insert(
                uid.clone(),
                crate::rt::spawn(async move { remove_orphan(ctx, uid2).await }),
            );
        }
    }
}

async fn remove_orphan(ctx: Rc<Context>, uid: String) {
    const ORPHAN_GRACE: Duration = Duration::from_secs(10);
    match observe::observe(&ctx, &uid).await {
        Ok(o) => {
            kill::stop_pod(&ctx, None, &o, ORPHAN_GRACE).await;
            kill::remove_pod(&ctx, &o).await;
        }
        Err(e) => log::warn!("orphan pod uid {uid}: {e}"),
    }
}

/// Why a relist failed: a list call (the runtime's error, with its gRPC code), or an
/// answer whose items do not decode (which list, which item).
#[derive(Debug)]
enum RelistError {
    Cri(CriError),
    Decode(&'static str, pleg::BadItem),
}

impl std::fmt::Display for RelistError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelistError::Cri(e) => std::fmt::Display::fmt(e, f),
            RelistError::Decode(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for RelistError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RelistError::Cri(e) => Some(e),
            RelistError::Decode(_, e) => Some(e),
        }
    }
}
