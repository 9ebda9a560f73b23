//! The end of a pod that is no longer desired: stopped with its grace period (preStop
//! hooks first, see [`crate::agent::kill`]), removed from the runtime, its status file
//! and its directory under `podsDir` (volumes, tmpfs mounts) gone. The runtime may be
//! away at that moment: the worker waits for it, as the pod must not be left running.

use super::{Worker, RETRY};
use crate::agent::image_refresh::Offline;
use crate::agent::{kill, observe};
use crate::kuberuntime::teardown;
use smol::Timer;

impl Worker {
    /// Stops the pod with its grace period, removes it from the runtime and forgets its
    /// status and volumes. Retries while the runtime is unreachable.
    pub(super) async fn terminate(mut self) {
        // Background pulls are of no use any more.
        self.offline = Offline::default();
        let uid = self.pod.metadata.uid.clone();
        let grace = kill::grace_period(&self.pod);
        log::info!("pod {}: deleting (grace period {grace:?})", self.name());
        // For `tinylet get`: the pod is shown as being deleted until its containers are gone.
        if let Err(e) = self
            .ctx
            .store
            .borrow_mut()
            .record_deletion(&self.pod, grace)
        {
            log::warn!("pod {}: cannot record its deletion: {e}", self.name());
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
        if let Err(e) = self.ctx.store.borrow_mut().remove_status(ns, name) {
            log::warn!("pod {ns}/{name}: cannot remove status: {e}");
        }
        let dir = self.ctx.cfg.pods_dir.join(&uid);
        match teardown::remove(&dir) {
            Ok(done) => done
                .iter()
                .for_each(|d| log::info!("pod {ns}/{name}: unmounted {}", d.display())),
            Err(e) => log::warn!("pod {ns}/{name}: cannot remove {}: {e}", dir.display()),
        }
        log::info!("pod {ns}/{name}: deleted");
    }
}
