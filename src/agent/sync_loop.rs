//! The sync loop: the one owner of "which pods exist". Every PLEG period it picks up
//! store changes (apply/delete), relists the runtime, routes PLEG events to the workers
//! of the pods they concern, and removes what carries our labels but belongs to no
//! desired pod (orphans, e.g. after a pod was deleted while the agent was down). A
//! failed relist is logged and retried; the loop never exits on a runtime outage.

use super::context::Context;
use super::housekeeping::Housekeeping;
use super::pleg::{self, Snapshot};
use super::worker::{self, Msg};
use super::{kill, observe};
use crate::model::Pod;
use async_io::Async;
use rustix::fd::OwnedFd;
use smol::channel::Sender;
use smol::{future, Task, Timer};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

struct WorkerHandle {
    tx: Sender<Msg>,
    task: Task<()>,
    pod: Pod,
    deleting: bool,
}

pub struct SyncLoop {
    ctx: Rc<Context>,
    workers: BTreeMap<String, WorkerHandle>,
    last: Option<Snapshot>,
    orphans: BTreeMap<String, Task<()>>,
    relist_failing: bool,
    ready: bool,
    housekeeping: Housekeeping,
}

impl SyncLoop {
    pub fn new(ctx: Rc<Context>) -> SyncLoop {
        SyncLoop {
            housekeeping: Housekeeping::new(&ctx),
            ctx,
            workers: BTreeMap::new(),
            last: None,
            orphans: BTreeMap::new(),
            relist_failing: false,
            ready: false,
        }
    }

    /// Runs forever: a tick every PLEG period, and at once when the store's watch
    /// says a desired object changed (so `apply` does not wait for the next period).
    pub async fn run(mut self) {
        let watch = self.store_watch();
        loop {
            self.tick().await;
            let period = Timer::after(self.ctx.cfg.pleg_period);
            match &watch {
                Some(w) => {
                    future::or(
                        async {
                            let _ = w.readable().await;
                        },
                        async {
                            period.await;
                        },
                    )
                    .await
                }
                None => {
                    period.await;
                }
            }
        }
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
        let changed = self.ctx.store.borrow_mut().changed();
        if changed {
            self.reconcile_desired();
            // A ConfigMap or Secret may have changed: let every pod refresh its
            // projected files and env sources.
            self.wake_all();
        }
        self.relist().await;
        self.workers.retain(|uid, w| {
            let done = w.deleting && w.task.is_finished();
            if done {
                log::debug!("worker of pod {uid} finished");
            }
            !done
        });
        self.orphans.retain(|_, t| !t.is_finished());
        // GC needs the complete desired set: only once the store has been read.
        if self.ready {
            let desired: Vec<&Pod> = self
                .workers
                .values()
                .filter(|w| !w.deleting)
                .map(|w| &w.pod)
                .collect();
            self.housekeeping.tick(&self.ctx, &desired).await;
        }
    }

    /// Starts workers for new pods, updates changed ones, deletes removed ones.
    fn reconcile_desired(&mut self) {
        let desired = self.ctx.store.borrow_mut().desired_pods();
        let mut seen = BTreeSet::new();
        for pod in desired {
            let uid = pod.metadata.uid.clone();
            seen.insert(uid.clone());
            match self.workers.get_mut(&uid) {
                Some(w) if w.deleting => {}
                Some(w) if w.pod != pod => {
                    log::info!(
                        "pod {}/{}: spec changed",
                        pod.metadata.namespace,
                        pod.metadata.name
                    );
                    w.pod = pod.clone();
                    let _ = w.tx.try_send(Msg::Update(Box::new(pod)));
                }
                // Something else in the store changed (a configMap or secret, maybe one
                // this pod projects or reads env from): let the worker sync, which
                // rewrites changed projected files (a no-op otherwise).
                Some(w) => {
                    let _ = w.tx.try_send(Msg::Wake);
                }
                None => {
                    log::info!(
                        "pod {}/{}: added (uid {uid})",
                        pod.metadata.namespace,
                        pod.metadata.name
                    );
                    let (tx, task) = worker::spawn(self.ctx.clone(), pod.clone());
                    self.workers.insert(
                        uid,
                        WorkerHandle {
                            tx,
                            task,
                            pod,
                            deleting: false,
                        },
                    );
                }
            }
        }
        for (uid, w) in self
            .workers
            .iter_mut()
            .filter(|(uid, w)| !seen.contains(*uid) && !w.deleting)
        {
            log::info!(
                "pod {}/{}: removed from the desired set (uid {uid})",
                w.pod.metadata.namespace,
                w.pod.metadata.name
            );
            w.deleting = true;
            let _ = w.tx.try_send(Msg::Delete);
        }
    }

    async fn relist(&mut self) {
        let rt = &self.ctx.cri.runtime;
        let listed = match rt.list_pod_sandbox(None).await {
            Ok(s) => rt.list_containers(None).await.map(|c| (s, c)),
            Err(e) => Err(e),
        };
        let (sandboxes, containers) = match listed {
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
        let snap = pleg::snapshot(&sandboxes, &containers);
        if let Some(old) = &self.last {
            for ev in pleg::diff(old, &snap) {
                log::debug!("pleg: {ev:?}");
                if let Some(w) = self.workers.get(ev.pod_uid()) {
                    let _ = w.tx.try_send(Msg::Wake);
                }
            }
        }
        self.remove_orphans(&snap);
        self.last = Some(snap);
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
            log::info!(
                "pod uid {uid} is not desired: removing its {} sandboxes and {} containers",
                rec.sandboxes.len(),
                rec.containers.len()
            );
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
