//! The configMaps and secrets that bound pods reference (volumes and projected volume
//! sources, `env` valueFrom, `envFrom`, `imagePullSecrets`: `kube-root-ca.crt` of every
//! default pod's `kube-api-access-*` volume among them), each fetched and watched from
//! the API on its own ([`super::objects_watch`]: a single-object list + watch, what the
//! Node authorizer allows a node) and cached in `STATE/cluster/`. [`ObjectWatches::set`]
//! is told the referenced set whenever the cached pods change: new references get a
//! watch, objects no pod references any longer lose theirs and leave the cache.

use super::agent::Uplink;
pub use super::objects_watch::ObjectRef;
use crate::model::Pod;
use crate::store::Kind;
use smol::Task;
use std::rc::Rc;

/// Every configMap and secret `pod` references, in its namespace; sorted, without
/// duplicates.
pub fn references(pod: &Pod) -> Vec<ObjectRef> {
    let ns = &pod.metadata.namespace;
    let mut out = Vec::new();
    let mut add = |kind: Kind, name: &str| {
        if !name.is_empty() {
            out.push(ObjectRef {
                kind,
                namespace: ns.clone(),
                name: name.to_string(),
            });
        }
    };
    for v in &pod.spec.volumes {
        if let Some(cm) = &v.config_map {
            add(Kind::ConfigMap, &cm.name);
        }
        if let Some(s) = &v.secret {
            add(Kind::Secret, &s.secret_name);
        }
        for s in v.projected.iter().flat_map(|p| &p.sources) {
            if let Some(cm) = &s.config_map {
                add(Kind::ConfigMap, &cm.name);
            }
            if let Some(s) = &s.secret {
                add(Kind::Secret, &s.name);
            }
        }
    }
    for r in &pod.spec.image_pull_secrets {
        add(Kind::Secret, &r.name);
    }
    for c in pod.all_containers() {
        for from in &c.env_from {
            if let Some(r) = &from.config_map_ref {
                add(Kind::ConfigMap, &r.name);
            }
            if let Some(r) = &from.secret_ref {
                add(Kind::Secret, &r.name);
            }
        }
        for var in c.env.iter().filter_map(|e| e.value_from.as_ref()) {
            if let Some(k) = &var.config_map_key_ref {
                add(Kind::ConfigMap, &k.name);
            }
            if let Some(k) = &var.secret_key_ref {
                add(Kind::Secret, &k.name);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// One running watch per referenced object (a few per pod: a list is enough).
pub struct ObjectWatches {
    up: Rc<Uplink>,
    watches: Vec<(ObjectRef, Task<()>)>,
}

impl ObjectWatches {
    /// No watches yet; cached objects no pod references are removed by the first
    /// [`ObjectWatches::set`].
    pub fn new(up: Rc<Uplink>) -> ObjectWatches {
        ObjectWatches {
            up,
            watches: Vec::new(),
        }
    }

    /// Makes the watched set `wanted`: starts the new ones, stops the others and
    /// removes their cached copies (also those left from an earlier run).
    pub fn set(&mut self, wanted: &[ObjectRef]) {
        self.watches.retain(|(r, _)| wanted.contains(r));
        for r in wanted {
            if !self.watches.iter().any(|(w, _)| w == r) {
                let task = crate::rt::spawn(super::objects_watch::run(self.up.clone(), r.clone()));
                self.watches.push((r.clone(), task));
            }
        }
        let mut store = self.up.ctx.store.borrow_mut();
        for kind in [Kind::ConfigMap, Kind::Secret] {
            for (namespace, name) in store.cluster_names(kind) {
                let r = ObjectRef {
                    kind,
                    namespace,
                    name,
                };
                if wanted.contains(&r) {
                    continue;
                }
                match store.remove_cluster(kind, &r.namespace, &r.name) {
                    Ok(_) => log::info!("uplink: {r} is referenced by no bound pod; dropped"),
                    Err(e) => log::warn!("uplink: {r}: cannot remove it from the cache: {e}"),
                }
            }
        }
    }

    /// How many objects are watched.
    pub fn len(&self) -> usize {
        self.watches.len()
    }

    /// Whether no object is watched.
    pub fn is_empty(&self) -> bool {
        self.watches.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse_pod;

    #[test]
    fn every_kind_of_reference_is_found_once() {
        let pod = parse_pod(
            "t",
            br#"{"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "ns"},
                "spec": {
                  "imagePullSecrets": [{"name": "pull"}],
                  "volumes": [
                    {"name": "a", "configMap": {"name": "cm-vol"}},
                    {"name": "b", "secret": {"secretName": "s-vol"}},
                    {"name": "c", "emptyDir": {}},
                    {"name": "d", "projected": {"sources": [
                      {"configMap": {"name": "kube-root-ca.crt"}},
                      {"secret": {"name": "s-proj"}},
                      {"serviceAccountToken": {"path": "token"}}]}}
                  ],
                  "initContainers": [{"name": "i", "image": "busybox:1",
                    "envFrom": [{"configMapRef": {"name": "cm-from"}},
                                {"secretRef": {"name": "s-from"}}]}],
                  "containers": [{"name": "c", "image": "busybox:1",
                    "env": [
                      {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm-key", "key": "k"}}},
                      {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s-vol", "key": "k"}}},
                      {"name": "C", "value": "plain"}
                    ]}]
                }}"#,
        )
        .unwrap();
        let got: Vec<String> = references(&pod).iter().map(|r| r.to_string()).collect();
        assert_eq!(
            got,
            [
                "configmap ns/cm-from",
                "configmap ns/cm-key",
                "configmap ns/cm-vol",
                "configmap ns/kube-root-ca.crt",
                "secret ns/pull",
                "secret ns/s-from",
                "secret ns/s-proj",
                "secret ns/s-vol",
            ]
        );
    }
}
