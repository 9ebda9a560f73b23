//! The cluster as a source of pods: list + watch of the pods bound to this node
//! (`fieldSelector=spec.nodeName=NODE`), cached in `STATE/cluster/pods/` as the
//! projection of [`super::objects_projection`], so the sync loop runs them like any
//! other desired pod and they survive a reboot without an uplink.
//!
//! - A list replaces the cached set: pods gone from the API leave the cache (and so
//!   stop); every cached pod whose status the list does not show as the node has it
//!   is sent again ([`crate::store::Store::mark_pod_dirty`]), so the API is current
//!   after an outage without a patch for each pod that did not change. Then a watch from the list's
//!   resourceVersion (bookmarks on; the server ends it after 2-4 hours and it is
//!   resumed from the last resourceVersion). 410 Gone, an ERROR event or any failure:
//!   relist (after a short wait: the connection's own back-off paces reconnecting).
//!   The loop is the uplink's one list-then-watch loop ([`super::list_watch`]); here
//!   is what a list and an event do (`take.rs`: one pod; `shown.rs`: its status in the
//!   API; `refusal.rs`: a refused pod's message), and what is fetched for the pods
//!   (`fetch.rs`), also when a verdict of the node's admission changes while a watch
//!   is open.
//! - A pod the model refuses (`model::parse_object`: an unsupported volume, a bad
//!   field) is never cached: it is reported `Failed` with reason `UnsupportedPodSpec`
//!   and a message naming the fields ([`Bound`], sent by [`super::status`]). A pod
//!   the API shows in a terminal phase is never started again (kubelet's rule): one
//!   this node ran stays cached with that phase, its stopped containers and logs kept
//!   (`kubectl logs` of a finished pod) until it is deleted from the API; one it never
//!   cached is not run at all.
//! - The configMaps and secrets the cached pods reference are watched
//!   ([`super::objects`]); the service-account tokens their projected volumes need are
//!   requested and kept current ([`super::tokens`]); the Services of their namespaces
//!   (and the master service) are watched for their environment ([`super::services`]);
//!   the PersistentVolumeClaims they name are resolved to a directory ([`super::claims`]).
//! - This node's mirror pods (annotation `kubernetes.io/config.mirror`) are never run:
//!   they are recorded for [`super::mirror`], which keeps them in step with the local
//!   pods.
//!
//! While the API server is away nothing here changes the cache: the pods keep running.

mod fetch;
mod refusal;
mod shown;
mod take;

use super::agent::Uplink;
use super::backoff;
use super::claims;
use super::list_watch::{self, Failed, Keep};
use super::mirror;
use super::objects::references;
use super::pods_bound::Bound;
use super::tokens;
use super::{resource_path, ApiError, EventType, ListParams};
use crate::model::Object;
use crate::store::Kind;
use fetch::Fetches;
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

/// The pods bound to the node, followed: the keeper of their list-then-watch loop.
struct PodSource {
    up: Rc<Uplink>,
    bound: Rc<Bound>,
    /// What the cached pods reference, fetched.
    fetches: Fetches,
    /// The last list failed (said once, and again when a list succeeds).
    failing: bool,
}

/// Starts the pod source, which runs for as long as the agent runs. The cached pods'
/// objects are watched and their tokens asked for at once, before the sync loop's first
/// look: a worker then finds its pod's token on its way (and waits for it briefly).
pub fn start(up: Rc<Uplink>, bound: Rc<Bound>) -> smol::Task<()> {
    let mut source = PodSource::new(up.clone(), bound);
    crate::rt::spawn(async move {
        let path = resource_path("v1", None, "pods", None, None);
        let params = ListParams {
            field_selector: Some(format!("spec.nodeName={}", up.node_name)),
            ..Default::default()
        };
        list_watch::run(&up.client, &path, &params, &mut source).await
    })
}

impl PodSource {
    /// Starts from the cache: its pods' objects are watched before the first list, so
    /// a start without an uplink keeps them as they are.
    fn new(up: Rc<Uplink>, bound: Rc<Bound>) -> PodSource {
        let pods = up.ctx.store.borrow_mut().cluster_list(Kind::Pod);
        for p in pods.iter().filter_map(|o| match o {
            Object::Pod(p) => Some(p),
            _ => None,
        }) {
            let m = &p.metadata;
            bound.update(&(m.namespace.clone(), m.name.clone()), |k| {
                k.uid = m.uid.clone();
                k.cached = true;
                k.kept = true;
                k.refs = references(p);
                k.tokens = tokens::wants(p);
                k.claims = claims::named(p);
            });
        }
        let mut source = PodSource {
            fetches: Fetches::new(&up),
            up,
            bound,
            failing: false,
        };
        source.sync_objects(true);
        source
    }

    /// A list: every listed pod is taken, pods not listed are forgotten (and leave the
    /// cache), and every cached pod's status is to be sent again unless the list shows
    /// it already.
    fn replace_all(&mut self, items: &[Value]) {
        let mut listed = Vec::new();
        let mut shown = BTreeMap::new();
        for item in items {
            if let Some(name) = self.upsert(item) {
                shown.insert(name.clone(), &item["status"]);
                listed.push(name);
            }
        }
        for name in self.bound.names() {
            if !listed.contains(&name) {
                if self.bound.get(&name).is_some_and(|k| k.cached) {
                    log::info!("uplink: pod {}/{} is gone from the API", name.0, name.1);
                }
                self.forget(&name);
                self.bound.remove(&name);
                mirror::mark(&self.up, &name);
            }
        }
        for name in self.bound.cached() {
            if !shown
                .get(&name)
                .is_some_and(|s| self.shows_latest(&name, s))
            {
                let mut store = self.up.ctx.store.borrow_mut();
                store.mark_pod_dirty(&name.0, &name.1);
            }
        }
        mirror::listed(&self.up, &self.bound);
        self.sync_objects(false);
    }

    /// Gives the fetches what the cached pods now need (`force`: in any case).
    fn sync_objects(&mut self, force: bool) {
        self.fetches.sync(&self.up, &self.bound, force);
    }
}

impl Keep for PodSource {
    fn what(&self) -> String {
        "pods".into()
    }

    fn listed(&mut self, items: &[Value]) {
        if std::mem::take(&mut self.failing) {
            log::info!("uplink: pods listed again");
        }
        self.replace_all(items);
    }

    fn event(&mut self, kind: EventType, object: &Value) {
        if kind == EventType::Deleted {
            self.remove(object);
            return;
        }
        if let Some(name) = self.upsert(object) {
            self.answer_other_writers(&name, &object["status"]);
        }
        self.sync_objects(false);
    }

    /// The first failed list in a row is a warning (the pods keep running from the
    /// cache), a failed watch is said at info.
    fn failed(&mut self, e: &ApiError, what: Failed) -> Duration {
        match what {
            Failed::List(n) => {
                self.failing = true;
                if n > 1 {
                    return list_watch::quietly(&self.what(), e, what);
                }
                log::warn!(
                    "uplink: cannot list the pods bound to node {} ({e}); the cached \
                     pods keep running, trying again",
                    self.up.node_name
                );
                backoff::delay(n, backoff::random())
            }
            Failed::Watch => {
                let how = if e.is_gone() { "too old" } else { "ended" };
                log::info!("uplink: pod watch {how} ({e}); relisting");
                Duration::ZERO
            }
        }
    }

    /// A verdict of the node's admission may let the pods' objects be fetched.
    fn nudge(&mut self) -> Option<Pin<Box<dyn Future<Output = ()> + '_>>> {
        Some(Box::pin(async move {
            self.up.ctx.verdicts.changed().await;
            self.sync_objects(false);
        }))
    }
}
