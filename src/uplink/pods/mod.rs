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

use super::agent::Uplink;
use super::backoff;
use super::claims::{self, ClaimWatches};
use super::lean::LeanValue;
use super::mirror;
use super::objects::{references, ObjectRef, ObjectWatches};
use super::objects_projection::{finished_phase, meta_str, project, to_bytes};
use super::pods_bound::{self, api_ips, Bound, Refusal};
use super::resume::{watch_timeout, Resume};
use super::services::ServiceWatches;
use super::status_patch::{shows_refusal, shows_status, status_patch};
use super::tokens::{self, TokenRequests, TokenWant};
use super::{resource_path, EventType, ListParams};
use crate::model::{parse_pod, Object, Pod};
use crate::store::notify::PodName;
use crate::store::Kind;
use async_io::Timer;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// Reason of a pod refused by validation.
pub const UNSUPPORTED: &str = crate::model::Reason::UnsupportedPodSpec.as_str();
/// Longest refusal message sent (the model's messages are bounded, but many of them
/// would make a status nobody reads).
const MAX_MESSAGE: usize = 1024;

/// How the API's copy of a pod's status stands to the node's.
enum Shown {
    /// It shows what the node would send.
    Latest,
    /// It does not; the hash of what the node would send.
    Lags(u64),
    /// Not a status the node's status file says (see [`PodSource::shown`]).
    Unsure,
}

struct PodSource {
    up: Rc<Uplink>,
    bound: Rc<Bound>,
    objects: ObjectWatches,
    /// The references last given to `objects`.
    watched: Vec<ObjectRef>,
    tokens: TokenRequests,
    /// The tokens last given to `tokens`: asked for, and held.
    requested: (Vec<TokenWant>, Vec<TokenWant>),
    services: ServiceWatches,
    /// The namespaces last given to `services`.
    namespaces: Option<BTreeSet<String>>,
    claims: ClaimWatches,
    /// The claims last given to `claims`.
    claimed: Option<Vec<(String, String)>>,
    /// The resourceVersion of the next list.
    resume: Resume,
    failures: u32,
}

/// Starts the pod source, which runs for as long as the agent runs. The cached pods'
/// objects are watched and their tokens asked for at once, before the sync loop's first
/// look: a worker then finds its pod's token on its way (and waits for it briefly).
pub fn start(up: Rc<Uplink>, bound: Rc<Bound>) -> smol::Task<()> {
    crate::rt::spawn(run(PodSource::new(up, bound)))
}

async fn run(mut source: PodSource) {
    loop {
        let Some(mut rv) = source.list().await else {
            Timer::after(backoff::delay(source.failures, backoff::random())).await;
            continue;
        };
        while let Some(next) = source.watch(&rv).await {
            rv = next;
        }
        Timer::after(backoff::delay(1, backoff::random())).await;
    }
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
            objects: ObjectWatches::new(up.clone()),
            tokens: TokenRequests::new(up.clone()),
            services: ServiceWatches::new(up.clone()),
            namespaces: None,
            claims: ClaimWatches::new(up.clone()),
            claimed: None,
            up,
            bound,
            watched: Vec::new(),
            requested: (Vec::new(), Vec::new()),
            resume: Resume::default(),
            failures: 0,
        };
        source.sync_objects(true);
        source
    }

    fn path(&self) -> String {
        resource_path("v1", None, "pods", None, None)
    }

    fn params(&self) -> ListParams {
        ListParams {
            field_selector: Some(format!("spec.nodeName={}", self.up.node_name)),
            ..Default::default()
        }
    }

    /// Lists the node's pods and makes the cache what the list says; the list's
    /// resourceVersion, or `None` when the list failed.
    async fn list(&mut self) -> Option<String> {
        let params = ListParams {
            resource_version: self.resume.list_version(),
            ..self.params()
        };
        let list = match self
            .up
            .client
            .list::<LeanValue>(&self.path(), &params)
            .await
        {
            Ok(list) => list.0,
            Err(e) => {
                self.resume.failed(&e);
                self.failures = self.failures.saturating_add(1);
                if self.failures == 1 {
                    log::warn!(
                        "uplink: cannot list the pods bound to node {} ({e}); the cached \
                         pods keep running, trying again",
                        self.up.node_name
                    );
                } else {
                    log::debug!("uplink: listing pods: {e}");
                }
                return None;
            }
        };
        if std::mem::take(&mut self.failures) > 0 {
            log::info!("uplink: pods listed again");
        }
        let items = list["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        self.replace_all(items);
        let rv = meta_str(&list, "resourceVersion");
        self.resume.seen(rv);
        Some(rv.to_string())
    }

    /// One watch from `rv`: `Some(rv)` to resume from when the server ended it
    /// normally, `None` to relist.
    async fn watch(&mut self, rv: &str) -> Option<String> {
        let params = ListParams {
            resource_version: Some(rv.to_string()),
            timeout_seconds: Some(watch_timeout()),
            allow_watch_bookmarks: true,
            ..self.params()
        };
        let mut stream = match self.up.client.watch(&self.path(), &params).await {
            Ok(s) => s,
            Err(e) => {
                log::debug!("uplink: watching pods: {e}; relisting");
                self.resume.failed(&e);
                return None;
            }
        };
        let up = self.up.clone();
        loop {
            // A verdict of the node's admission may let the pods' objects be fetched.
            let next = smol::future::or(async { Some(stream.next().await) }, async {
                up.ctx.verdicts.changed().await;
                None
            })
            .await;
            let Some(next) = next else {
                self.sync_objects(false);
                continue;
            };
            self.resume.seen(stream.resource_version().unwrap_or(rv));
            if let Err(e) = &next {
                self.resume.failed(e);
            }
            match next {
                Ok(Some(ev)) => match ev.kind {
                    EventType::Added | EventType::Modified => {
                        if let Some(name) = self.upsert(&ev.object) {
                            self.answer_other_writers(&name, &ev.object["status"]);
                        }
                        self.sync_objects(false);
                    }
                    EventType::Deleted => self.remove(&ev.object),
                    EventType::Bookmark => {}
                },
                Ok(None) => return Some(stream.resource_version().unwrap_or(rv).to_string()),
                Err(e) if e.is_gone() => {
                    log::info!("uplink: pod watch too old ({e}); relisting");
                    return None;
                }
                Err(e) => {
                    log::info!("uplink: pod watch ended ({e}); relisting");
                    return None;
                }
            }
        }
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

    /// Whether the API's `status` of cached pod `name` is what the node would send: the
    /// pod runs as an ordinary cluster pod (not being deleted, no local pod of its name)
    /// and its status file says what the API shows.
    fn shows_latest(&self, name: &PodName, status: &Value) -> bool {
        matches!(self.shown(name, status), Shown::Latest)
    }

    /// How the API's `status` of pod `name` stands to the node's: only an ordinary
    /// cached pod's can be compared (a refused, terminating or shadowed pod's status is
    /// not the status file's, and a pod not run yet has none).
    fn shown(&self, name: &PodName, status: &Value) -> Shown {
        let known = self.bound.get(name).unwrap_or_default();
        let mut store = self.up.ctx.store.borrow_mut();
        let (ns, pod) = (&name.0, &name.1);
        let Some(Object::Pod(cached)) = store.cluster_get(Kind::Pod, ns, pod) else {
            return Shown::Unsure;
        };
        if known.refusal.is_some()
            || cached.terminating()
            || store.cluster_pod_shadowed(ns, pod)
            || store.local_pod_exists(ns, pod)
        {
            return Shown::Unsure;
        }
        let Some(st) = store.read_status(ns, pod) else {
            return Shown::Unsure;
        };
        let patch = status_patch(&cached.metadata.uid, &st, &known.api_ips);
        if shows_status(status, &patch) {
            return Shown::Latest;
        }
        let mut h = std::hash::DefaultHasher::new();
        patch.to_string().hash(&mut h);
        Shown::Lags(h.finish())
    }

    /// A watch event's pod whose status another writer changed (the node lifecycle
    /// controller marks a node's pods not Ready while it thinks the node is gone, and
    /// the node may have listed before it did): the node's status is sent again. Once
    /// per difference: a status the API never shows as sent must not become a loop of
    /// patches and events.
    fn answer_other_writers(&self, name: &PodName, status: &Value) {
        match self.shown(name, status) {
            Shown::Latest => self.bound.update(name, |k| k.resent = None),
            Shown::Lags(hash) => {
                if self
                    .bound
                    .update(name, |k| k.resent.replace(hash) != Some(hash))
                {
                    log::info!(
                        "uplink: pod {}/{}: the API shows a status the node did not send; \
                         sending the node's again",
                        name.0,
                        name.1
                    );
                    let mut store = self.up.ctx.store.borrow_mut();
                    store.mark_pod_dirty(&name.0, &name.1);
                }
            }
            Shown::Unsure => {}
        }
    }

    /// Takes one pod from the API: cached when the model accepts it, refused when not,
    /// left out when the API shows it finished. Returns its name.
    fn upsert(&mut self, obj: &Value) -> Option<PodName> {
        let (ns, name, uid) = (
            meta_str(obj, "namespace"),
            meta_str(obj, "name"),
            meta_str(obj, "uid"),
        );
        if ns.is_empty() || name.is_empty() {
            return None;
        }
        let key: PodName = (ns.to_string(), name.to_string());
        if obj["spec"]["nodeName"].as_str() != Some(self.up.node_name.as_str()) {
            // Not for this node (the selector says it cannot happen).
            self.forget(&key);
            self.bound.remove(&key);
            return None;
        }
        if mirror::seen(&self.up, &self.bound, &key, obj) {
            // One of this node's mirror pods: shown for a local pod, never run here.
            self.forget(&key);
            return Some(key);
        }
        // Not (or no longer) a mirror: a mirror seen earlier under this name is gone,
        // and the name is not a local pod's (for the kubelet API, nor for the mirror
        // task, which would otherwise delete this pod as a stale mirror).
        self.bound.update(&key, |k| k.mirror = None);
        let ips = api_ips(&obj["status"]);
        self.bound.update(&key, |k| k.api_ips = ips);
        let ran_here = self
            .bound
            .get(&key)
            .is_some_and(|k| k.cached && k.uid == uid);
        if finished_phase(obj).is_some() && !ran_here {
            // Finished before this node cached it (or another pod of the name): kubelet
            // never starts a finished pod, and there is nothing of it here to keep.
            self.forget(&key);
            self.bound.update(&key, |k| k.refusal = None);
            return Some(key);
        }
        let bytes = to_bytes(&project(Kind::Pod, obj));
        let source = format!("pod {ns}/{name}");
        match parse_pod(&source, &bytes) {
            Ok(pod) => self.keep(&key, &pod, &bytes),
            Err(e) => {
                let messages = name_volume_sources(&source, e.messages, obj);
                let refusal = Refusal {
                    reason: UNSUPPORTED,
                    message: refusal_message(&self.up.node_name, &source, &messages),
                };
                self.refuse(&key, uid, refusal, &obj["status"]);
            }
        }
        Some(key)
    }

    /// Caches a pod the model accepted.
    fn keep(&mut self, key: &PodName, pod: &Pod, bytes: &[u8]) {
        let (ns, name, uid) = (&key.0, &key.1, &pod.metadata.uid);
        let before = self.bound.get(key).filter(|k| k.cached);
        let mut store = self.up.ctx.store.borrow_mut();
        let known = before.as_ref().is_some_and(|k| k.uid == *uid);
        if known
            && pod.metadata.deletion_timestamp.is_some()
            && !store.cluster_exists(Kind::Pod, ns, name)
        {
            // Stopped and deleted by the status task; the API's last words on it (our
            // own gracePeriodSeconds 0) must not bring it back.
            return;
        }
        match store.put_cluster(Kind::Pod, ns, name, bytes) {
            Ok(true) => {
                let what = match before {
                    None => "bound to this node",
                    Some(_) if pod.metadata.deletion_timestamp.is_some() => "being deleted",
                    Some(_) if pod.finished().is_some() => "finished (kept until deleted)",
                    Some(_) => "changed",
                };
                log::info!("uplink: pod {ns}/{name} {what} (uid {uid})");
                store.mark_pod_dirty(ns, name);
            }
            Ok(false) => {}
            Err(e) => {
                log::error!("uplink: pod {ns}/{name}: cannot cache it: {e}");
                return;
            }
        }
        drop(store);
        let (refs, wants) = (references(pod), tokens::wants(pod));
        let named = claims::named(pod);
        self.bound.update(key, |k| {
            // Another pod of the name is a new pod: judged before anything is fetched.
            k.kept &= k.uid == *uid;
            k.uid = uid.clone();
            k.cached = true;
            k.refs = refs;
            k.tokens = wants;
            k.claims = named;
            k.refusal = None;
        });
    }

    /// Reports a pod this node does not run (unless the API already shows exactly
    /// that); a cached copy is removed.
    fn refuse(&mut self, key: &PodName, uid: &str, refusal: Refusal, status: &Value) {
        self.forget(key);
        let said = shows_refusal(status, refusal.reason, &refusal.message);
        let message = refusal.message.clone();
        let new = self.bound.update(key, |k| {
            let new = k.uid != uid || k.refusal.as_ref() != Some(&refusal);
            k.uid = uid.to_string();
            k.refusal = (!said).then_some(refusal);
            new && !said
        });
        if new {
            log::warn!("uplink: pod {}/{} refused: {message}", key.0, key.1);
            self.up
                .ctx
                .store
                .borrow_mut()
                .mark_pod_dirty(&key.0, &key.1);
        }
    }

    /// A DELETED event: the pod is forgotten (when it is the uid known).
    fn remove(&mut self, obj: &Value) {
        let key: PodName = (
            meta_str(obj, "namespace").to_string(),
            meta_str(obj, "name").to_string(),
        );
        let uid = meta_str(obj, "uid");
        let Some(known) = self.bound.get(&key).filter(|k| k.uid == uid) else {
            return;
        };
        if known.cached {
            log::info!("uplink: pod {}/{} deleted from the API", key.0, key.1);
        }
        self.forget(&key);
        self.bound.remove(&key);
        if known.mirror.is_some() {
            mirror::mark(&self.up, &key);
        }
        self.sync_objects(false);
    }

    /// Removes a pod from the cache, if it is there (its worker then stops it).
    fn forget(&mut self, key: &PodName) {
        let cached = self.bound.update(key, |k| std::mem::take(&mut k.cached));
        if !cached {
            return;
        }
        let mut store = self.up.ctx.store.borrow_mut();
        if let Err(e) = store.remove_cluster(Kind::Pod, &key.0, &key.1) {
            log::error!(
                "uplink: pod {}/{}: cannot remove it from the cache: {e}",
                key.0,
                key.1
            );
        }
    }

    /// Gives the object watches what the cached pods reference, and the token task
    /// the tokens they need, when it changed (`force`: in any case, e.g. to drop cached
    /// objects and tokens left from an earlier run).
    fn sync_objects(&mut self, force: bool) {
        // Only for pods the node admitted ([`crate::agent::verdicts`]).
        let verdicts = &self.up.ctx.verdicts;
        verdicts.retain(|uid| self.bound.has_uid(uid));
        let verdict = |uid: &str| verdicts.get(uid);
        let wanted = self.bound.references(verdict);
        if force || wanted != self.watched {
            self.objects.set(&wanted);
            self.watched = wanted;
        }
        let wanted = (
            self.bound.tokens(verdict),
            self.bound.tokens(pods_bound::all_admitted),
        );
        if force || wanted != self.requested {
            self.tokens.set(&wanted.0, &wanted.1);
            self.requested = wanted;
        }
        let namespaces: BTreeSet<String> = self.bound.cached().into_iter().map(|n| n.0).collect();
        if force || self.namespaces.as_ref() != Some(&namespaces) {
            self.services.set(&namespaces);
            self.namespaces = Some(namespaces);
        }
        let wanted = self.bound.claims(verdict);
        if force || self.claimed.as_ref() != Some(&wanted) {
            self.claims.set(&wanted);
            self.claimed = Some(wanted);
        }
    }
}

/// The model reads only the volume sources (and projection sources) it supports, so of
/// one with another kind it says "got none": name what the API object has there.
fn name_volume_sources(source: &str, messages: Vec<String>, obj: &Value) -> Vec<String> {
    messages
        .into_iter()
        .map(|m| match unread_source(source, &m, obj) {
            Some(kinds) => format!("{m} (this pod's source there is {kinds}: not supported)"),
            None => m,
        })
        .collect()
}

/// For a "got none" message at `spec.volumes[i]` or `spec.volumes[i].projected.sources[j]`,
/// the keys the API object has there (its `name` left out).
fn unread_source(source: &str, m: &str, obj: &Value) -> Option<String> {
    let (place, what) = m
        .strip_prefix(source)?
        .strip_prefix(": ")?
        .split_once(": ")?;
    if !what.ends_with("got none") {
        return None;
    }
    let index = |s: &str| s.strip_suffix(']')?.parse::<usize>().ok();
    let rest = place.strip_prefix("spec.volumes[")?;
    let (i, rest) = rest.split_once(']').unwrap_or((rest, ""));
    let mut at = &obj["spec"]["volumes"][i.parse::<usize>().ok()?];
    if let Some(j) = rest.strip_prefix(".projected.sources[") {
        at = &at["projected"]["sources"][index(j)?];
    } else if !rest.is_empty() {
        return None;
    }
    let kinds: Vec<&str> = at
        .as_object()?
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "name")
        .collect();
    (!kinds.is_empty()).then(|| kinds.join(", "))
}

/// The message of a refusal: the model's problems without their `SOURCE: ` prefix,
/// joined, at most [`MAX_MESSAGE`] bytes.
fn refusal_message(node: &str, source: &str, messages: &[String]) -> String {
    let prefix = format!("{source}: ");
    let mut out = format!("node {node} (tinylet) cannot run this pod: ");
    for (i, m) in messages.iter().enumerate() {
        let m = m.strip_prefix(&prefix).unwrap_or(m);
        if out.len() + m.len() > MAX_MESSAGE {
            out.push_str(&format!("; ... and {} more", messages.len() - i));
            break;
        }
        if i > 0 {
            out.push_str("; ");
        }
        out.push_str(m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_messages_name_the_fields_and_are_bounded() {
        let m = refusal_message(
            "gw1",
            "pod d/p",
            &["pod d/p: spec.volumes[0]: unsupported volume source".into()],
        );
        assert_eq!(
            m,
            "node gw1 (tinylet) cannot run this pod: spec.volumes[0]: unsupported volume source"
        );
        let many: Vec<String> = (0..100)
            .map(|i| format!("pod d/p: spec.containers[{i}].image: {}", "x".repeat(50)))
            .collect();
        let m = refusal_message("gw1", "pod d/p", &many);
        assert!(m.len() < MAX_MESSAGE + 40, "{}", m.len());
        assert!(m.ends_with("more"), "{m}");
    }

    #[test]
    fn volume_sources_the_model_does_not_read_are_named() {
        let obj = serde_json::json!({"spec": {"volumes": [
            {"name": "ok", "emptyDir": {}},
            {"name": "remote", "nfs": {"server": "192.0.2.1", "path": "/"}},
            {"name": "kube-api-access-x", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token"}},
                {"clusterTrustBundle": {"path": "b"}}]}}
        ]}});
        let none = "must specify exactly one of emptyDir, hostPath, configMap, secret, projected, downwardAPI, persistentVolumeClaim, got none";
        let got = name_volume_sources(
            "pod d/p",
            vec![
                format!("pod d/p: spec.volumes[1]: {none}"),
                "pod d/p: spec.volumes[2].projected.sources[1]: must specify exactly one of configMap, secret, downwardAPI, serviceAccountToken, got none".into(),
                "pod d/p: spec.containers[0].image: required".into(),
                format!("pod d/p: spec.volumes[9]: {none}"),
            ],
            &obj,
        );
        assert!(
            got[0].ends_with("(this pod's source there is nfs: not supported)"),
            "{}",
            got[0]
        );
        assert!(
            got[1].ends_with("(this pod's source there is clusterTrustBundle: not supported)"),
            "{}",
            got[1]
        );
        assert_eq!(got[2], "pod d/p: spec.containers[0].image: required");
        assert!(got[3].ends_with("got none"), "no such volume: {}", got[3]);
    }
}
