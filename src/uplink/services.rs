//! The Services the pods' environment needs ([`crate::agent::services`]), kept current
//! from the API without watching every Service of the cluster: the master service
//! (`default/kubernetes`, by name) always, and every Service of each namespace this
//! node has cluster pods in, only while it has them (the Node authorizer lets a node
//! list and watch Services). One list + watch per namespace ([`super::list_watch`]:
//! bookmarks on, resumed from the last resourceVersion, relisted after any failure),
//! each Service reduced to
//! its name, cluster IP and ports, the namespace's set copied to the state directory
//! when it changed, so pods made after a reboot without the uplink get the same
//! variables.

use super::agent::Uplink;
use super::list_watch::{self, Keep};
use super::objects_projection::meta_str;
use super::{resource_path, EventType, ListParams};
use crate::kuberuntime::service_env::{ServiceEntry, ServicePort, MASTER_NAME, MASTER_NAMESPACE};
use crate::store::kept::Kept;
use serde_json::Value;
use smol::Task;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Instant;

/// The most Services kept per namespace (each a few dozen bytes): a namespace with
/// more gives its pods the first this many by name, and says so.
pub const MAX_PER_NAMESPACE: usize = 512;
/// The name part of a namespace's kept copy (`NS_services.json`).
const KEPT_NAME: &str = "services";
/// The most ports kept per Service.
const MAX_PORTS: usize = 32;

/// What one watch covers: a whole namespace, or only the master service (the node
/// has no pod in `default`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Scope {
    namespace: String,
    master_only: bool,
}

/// The running watches, one per scope.
pub struct ServiceWatches {
    up: Rc<Uplink>,
    watches: Vec<(Scope, Task<()>)>,
}

impl ServiceWatches {
    /// No watches yet; the agent's table learns the copies on disk at the first
    /// [`ServiceWatches::set`], and the master-service override from the config.
    pub fn new(up: Rc<Uplink>) -> ServiceWatches {
        let api = up.ctx.cfg.api_server.as_ref();
        if api.is_some_and(|a| a.kubernetes_service_from_kubeconfig) {
            let (host, port) = up.client.server_host_port();
            up.ctx.services.set_master_override(host, i32::from(port));
        }
        ServiceWatches {
            up,
            watches: Vec::new(),
        }
    }

    /// Watches the master service and the namespaces in `pod_namespaces` (those of the
    /// cached pods); stops the others and drops their copies.
    pub fn set(&mut self, pod_namespaces: &BTreeSet<String>) {
        let mut wanted: Vec<Scope> = pod_namespaces
            .iter()
            .map(|ns| Scope {
                namespace: ns.clone(),
                master_only: false,
            })
            .collect();
        if !pod_namespaces.contains(MASTER_NAMESPACE) {
            wanted.push(Scope {
                namespace: MASTER_NAMESPACE.into(),
                master_only: true,
            });
        }
        let table = &self.up.ctx.services;
        self.watches.retain(|(s, _)| wanted.contains(s));
        for s in &wanted {
            if self.watches.iter().any(|(w, _)| w == s) {
                continue;
            }
            table.want(&s.namespace, self.cached(&s.namespace), Instant::now());
            let task = crate::rt::spawn(run(self.up.clone(), s.clone()));
            self.watches.push((s.clone(), task));
        }
        let mut store = self.up.ctx.store.borrow_mut();
        let keep: BTreeSet<&str> = wanted.iter().map(|s| s.namespace.as_str()).collect();
        let known = table.namespaces();
        let on_disk: Vec<String> = store
            .kept_names(Kept::Services)
            .into_iter()
            .map(|k| k.0)
            .collect();
        for ns in known.iter().chain(&on_disk) {
            if keep.contains(ns.as_str()) {
                continue;
            }
            table.forget(ns);
            if let Err(e) = store.remove_kept(Kept::Services, ns, KEPT_NAME) {
                log::warn!("uplink: Services of namespace {ns}: cannot drop the copy: {e}");
            }
        }
    }

    /// The copy on disk of `ns`'s Services, if there is a readable one.
    fn cached(&self, ns: &str) -> Option<Vec<ServiceEntry>> {
        let bytes = self
            .up
            .ctx
            .store
            .borrow()
            .kept(Kept::Services, ns, KEPT_NAME)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| log::warn!("uplink: the kept Services of namespace {ns}: {e}; ignored"))
            .ok()
    }
}

/// Keeps the Services of `scope` current until the task is dropped.
async fn run(up: Rc<Uplink>, scope: Scope) {
    let path = resource_path("v1", Some(&scope.namespace), "services", None, None);
    let params = ListParams {
        field_selector: scope
            .master_only
            .then(|| format!("metadata.name={MASTER_NAME}")),
        ..Default::default()
    };
    let mut keep = ScopeKeep {
        up: up.clone(),
        scope,
        known: BTreeMap::new(),
    };
    list_watch::run(&up.client, &path, &params, &mut keep).await
}

/// The Services of one scope, by name, as the list and the watch show them.
struct ScopeKeep {
    up: Rc<Uplink>,
    scope: Scope,
    known: BTreeMap<String, ServiceEntry>,
}

impl Keep for ScopeKeep {
    fn what(&self) -> String {
        format!("the Services of {}", self.scope.namespace)
    }

    fn listed(&mut self, items: &[Value]) {
        self.known = items
            .iter()
            .filter_map(entry)
            .map(|s| (s.name.clone(), s))
            .collect();
        publish(&self.up, &self.scope, &self.known);
    }

    fn event(&mut self, kind: EventType, object: &Value) {
        let name = meta_str(object, "name").to_string();
        match kind {
            EventType::Added | EventType::Modified => match entry(object) {
                Some(s) => self.known.insert(name, s),
                None => self.known.remove(&name),
            },
            _ => self.known.remove(&name),
        };
        publish(&self.up, &self.scope, &self.known);
    }
}

/// Gives the agent's table what `scope` holds now, and keeps a copy when it changed.
fn publish(up: &Uplink, scope: &Scope, known: &BTreeMap<String, ServiceEntry>) {
    if known.len() > MAX_PER_NAMESPACE {
        log::warn!(
            "uplink: namespace {} has {} Services; pods get the variables of the first {} by name",
            scope.namespace,
            known.len(),
            MAX_PER_NAMESPACE
        );
    }
    let now: Vec<ServiceEntry> = known.values().take(MAX_PER_NAMESPACE).cloned().collect();
    let ns = &scope.namespace;
    if !up.ctx.services.set(ns, now.clone()) {
        return;
    }
    // Written only when the bytes differ from the copy there (the first list after a
    // restart finds its own copy of before).

    let bytes = serde_json::to_vec(&now).unwrap_or_default();
    match up
        .ctx
        .store
        .borrow_mut()
        .put_kept(Kept::Services, ns, KEPT_NAME, &bytes)
    {
        Ok(true) => log::debug!("uplink: Services of namespace {ns}: {} kept", now.len()),
        Ok(false) => {}
        Err(e) => log::warn!("uplink: Services of namespace {ns}: cannot keep a copy: {e}"),
    }
}

/// What a pod's environment needs of an API Service object; `None` for one without
/// a name.
fn entry(obj: &Value) -> Option<ServiceEntry> {
    let name = meta_str(obj, "name");
    if name.is_empty() {
        return None;
    }
    let spec = &obj["spec"];
    let ports = spec["ports"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .take(MAX_PORTS)
        .map(|p| ServicePort {
            name: p["name"].as_str().unwrap_or_default().to_string(),
            port: p["port"]
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .unwrap_or(0),
            protocol: p["protocol"].as_str().unwrap_or_default().to_string(),
        })
        .collect();
    Some(ServiceEntry {
        name: name.to_string(),
        cluster_ip: spec["clusterIP"].as_str().unwrap_or_default().to_string(),
        ports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_service_becomes_an_entry() {
        let obj = serde_json::json!({"metadata": {"name": "db", "namespace": "app"},
            "spec": {"clusterIP": "10.96.0.5", "ports": [
                {"name": "pg", "port": 5432, "protocol": "TCP", "targetPort": 5432},
                {"name": "x", "port": 99999999999i64}]}});
        let e = entry(&obj).unwrap();
        assert_eq!(e.name, "db");
        assert_eq!(e.cluster_ip, "10.96.0.5");
        assert_eq!(e.ports[0].port, 5432);
        assert_eq!(e.ports[1].port, 0, "out of range: no port");
        assert!(entry(&serde_json::json!({"spec": {}})).is_none());
    }
}
