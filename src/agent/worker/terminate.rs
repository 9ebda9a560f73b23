//! The end of a pod that is no longer desired, or whose changed spec the node refused:
//! stopped with its grace period (preStop hooks first, see [`crate::agent::kill`]),
//! removed from the runtime, its directory under `podsDir` (volumes, tmpfs mounts)
//! gone, and its status file too, unless it was refused: then the status says Failed
//! with the refusal (and an event says so), as for a pod refused when new. The runtime
//! may be away at that moment: the worker waits for it, as the pod must not be left
//! running.

use super::{Worker, RETRY};
use crate::agent::image_refresh::Offline;
use crate::agent::{admission, kill, observe};
use crate::kuberuntime::teardown;
use crate::node::admit::Refusal;
use smol::Timer;

impl Worker {
    /// Stops the pod with its grace period, removes it from the runtime and forgets its
    /// volumes, and its status unless `refused`. Retries while the runtime is
    /// unreachable.
    pub(super) async fn terminate(mut self, refused: Option<Refusal>) {
        // Background pulls are of no use any more.
        self.offline = Offline::default();
        let uid = self.pod.metadata.uid.clone();
        // The grace period of the spec that runs (the refused one never did).
        let grace = kill::grace_period(&self.pod);
        if let Some(r) = &refused {
            log::info!("pod {}: stopping (grace period {grace:?})", self.name());
            admission::refused(&self.ctx, &self.pod, r);
        } else {
            log::info!("pod {}: deleting (grace period {grace:?})", self.name());
            // For `tinylet get`: shown as being deleted until its containers are gone.
            let recorded = self
                .ctx
                .store
                .borrow_mut()
                .record_deletion(&self.pod, grace);
            if let Err(e) = recorded {
                log::warn!("pod {}: cannot record its deletion: {e}", self.name());
            }
        }
        loop {
            match observe::observe(&self.ctx, &uid).await {
                Ok(o) => {
                    kill::stop_pod(&self.ctx, Some(&self.pod), &o, grace).await;
                    let after = observe::observe(&self.ctx, &uid).await.unwrap_or(o);
                    kill::remove_pod(&self.ctx, &after).await;
                    break;
                }
                Err(e) => {
                    log::warn!("pod {}: delete waits for the runtime: {e}", self.name());
                    Timer::after(RETRY).await;
                }
            }
        }
        if let Some(cg) = &self.ctx.cgroups {
            cg.remove(&uid);
        }
        let (ns, name) = (&self.pod.metadata.namespace, &self.pod.metadata.name);
        if refused.is_none() {
            if let Err(e) = self.ctx.store.borrow_mut().remove_status(ns, name) {
                log::warn!("pod {ns}/{name}: cannot remove status: {e}");
            }
        }
        let dir = self.ctx.cfg.pods_dir.join(&uid);
        match teardown::remove(&dir) {
            Ok(done) => done
                .iter()
                .for_each(|d| log::info!("pod {ns}/{name}: unmounted {}", d.display())),
            Err(e) => log::warn!("pod {ns}/{name}: cannot remove {}: {e}", dir.display()),
        }
        // Nothing of the pod is left: it no longer counts toward the node's pods and
        // resources, even before the sync loop notices this task has ended.
        self.finished.set(true);
        match refused {
            Some(_) => log::info!("pod {ns}/{name}: stopped and removed (refused)"),
            None => log::info!("pod {ns}/{name}: deleted"),
        }
    }
}
