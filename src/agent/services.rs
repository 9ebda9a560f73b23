//! The cluster's Services as the pods' environment needs them
//! ([`crate::kuberuntime::service_env`]), by namespace, in the agent's context: the
//! uplink's service watches (`crate::uplink::services`) fill it and keep a copy in the
//! state directory (so that a reboot without the uplink gives the pods the same
//! variables), the workers read it when they make a container. Here so the agent needs
//! nothing of the uplink.
//!
//! Which namespaces: `default` (the master service) and each namespace this node has
//! cluster pods in, only while it has them. A namespace whose Services were never
//! listed (not since the start, and no copy on disk) holds its new pods' containers
//! for a few seconds ([`HOLD`]) so that they start with the variables, as kubelet
//! waits for its Service informer; past that, or with the uplink away, they start
//! with what is known.

use crate::kuberuntime::service_env::{ServiceEntry, MASTER_NAME, MASTER_NAMESPACE};
use crate::kuberuntime::SyncError;
use crate::model::pod::Source;
use crate::model::{Pod, Reason};
use smol::channel::{Receiver, Sender};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// How long a new namespace's first list may hold its pods' containers.
pub const HOLD: Duration = Duration::from_secs(5);

/// What is known of one namespace's Services.
#[derive(Debug, Clone)]
struct Known {
    /// Listed (now or before a restart): the set is what the cluster has, as far as
    /// the node knows.
    listed: bool,
    /// When the node started asking (for the hold).
    since: Instant,
    /// By name.
    services: BTreeMap<String, ServiceEntry>,
}

/// The Services of the namespaces the node watches, and the namespaces whose set
/// changed since the sync loop last looked.
pub struct Services {
    by_ns: RefCell<BTreeMap<String, Known>>,
    changed: RefCell<BTreeSet<String>>,
    wake: (Sender<()>, Receiver<()>),
    /// The address pods are told for the master service instead of its cluster IP
    /// (`apiServer.kubernetesServiceFromKubeconfig`): host and port.
    master_override: RefCell<Option<(String, i32)>>,
}

impl Default for Services {
    fn default() -> Services {
        Services {
            by_ns: RefCell::default(),
            changed: RefCell::default(),
            wake: smol::channel::bounded(1),
            master_override: RefCell::default(),
        }
    }
}

impl Services {
    /// The Services `pod`'s containers get: the master service always, and with
    /// `enableServiceLinks` (default true) those of its namespace. A cluster pod in a
    /// namespace still being listed for the first time waits (`ContainerCreating`),
    /// at most [`HOLD`].
    pub fn for_pod(&self, pod: &Pod, now: Instant) -> Result<Vec<ServiceEntry>, SyncError> {
        let by_ns = self.by_ns.borrow();
        let ns = &pod.metadata.namespace;
        let links = pod.spec.enable_service_links.unwrap_or(true);
        if pod.source() == Source::Api {
            for wanted in [Some(MASTER_NAMESPACE), links.then_some(ns.as_str())] {
                let Some(k) = wanted.and_then(|n| by_ns.get(n)) else {
                    continue;
                };
                if !k.listed && now.duration_since(k.since) < HOLD {
                    return Err(SyncError::new(
                        Reason::ContainerCreating,
                        format!("waiting for the Services of namespace {ns:?} (service links)"),
                    ));
                }
            }
        }
        let mut out: BTreeMap<&str, ServiceEntry> = BTreeMap::new();
        if links {
            if let Some(k) = by_ns.get(ns) {
                out.extend(k.services.iter().map(|(n, s)| (n.as_str(), s.clone())));
            }
        }
        // The master service, unless the pod's namespace has one of that name.
        let master = by_ns
            .get(MASTER_NAMESPACE)
            .and_then(|k| k.services.get(MASTER_NAME));
        if let Some(m) = master {
            if !(links && ns != MASTER_NAMESPACE && out.contains_key(MASTER_NAME)) {
                out.insert(MASTER_NAME, self.master(m));
            }
        }
        Ok(out.into_values().collect())
    }

    /// The master service as pods are told it (see `master_override`).
    fn master(&self, m: &ServiceEntry) -> ServiceEntry {
        let Some((host, port)) = self.master_override.borrow().clone() else {
            return m.clone();
        };
        let mut m = m.clone();
        m.cluster_ip = host;
        for p in &mut m.ports {
            p.port = port;
        }
        m
    }

    /// Tells pods `host:port` for the master service instead of its cluster IP.
    pub fn set_master_override(&self, host: String, port: i32) {
        *self.master_override.borrow_mut() = Some((host, port));
    }

    /// Starts watching namespace `ns` (known from a copy on disk when `cached`).
    pub fn want(&self, ns: &str, cached: Option<Vec<ServiceEntry>>, now: Instant) {
        let mut by_ns = self.by_ns.borrow_mut();
        by_ns.entry(ns.to_string()).or_insert_with(|| Known {
            listed: cached.is_some(),
            since: now,
            services: cached
                .unwrap_or_default()
                .into_iter()
                .map(|s| (s.name.clone(), s))
                .collect(),
        });
    }

    /// Forgets namespace `ns` (no pod of this node is there any longer).
    pub fn forget(&self, ns: &str) {
        self.by_ns.borrow_mut().remove(ns);
    }

    /// The watched namespaces.
    pub fn namespaces(&self) -> Vec<String> {
        self.by_ns.borrow().keys().cloned().collect()
    }

    /// Records what a list or watch says namespace `ns` holds now; true when that
    /// changed something or is the first list since the start (the caller then keeps a
    /// copy, also of an empty set: after a reboot without the uplink, a namespace with
    /// no Services is known to have none, and its pods do not wait). Wakes the
    /// namespace's pods.
    pub fn set(&self, ns: &str, services: Vec<ServiceEntry>) -> bool {
        let mut by_ns = self.by_ns.borrow_mut();
        let Some(k) = by_ns.get_mut(ns) else {
            return false;
        };
        let now: BTreeMap<String, ServiceEntry> =
            services.into_iter().map(|s| (s.name.clone(), s)).collect();
        let first = !std::mem::replace(&mut k.listed, true);
        if k.services == now && !first {
            return false;
        }
        k.services = now;
        self.changed(ns);
        true
    }

    /// The services known in `ns`, sorted by name.
    pub fn in_namespace(&self, ns: &str) -> Vec<ServiceEntry> {
        self.by_ns
            .borrow()
            .get(ns)
            .map(|k| k.services.values().cloned().collect())
            .unwrap_or_default()
    }

    fn changed(&self, ns: &str) {
        self.changed.borrow_mut().insert(ns.to_string());
        let _ = self.wake.0.try_send(());
    }

    /// The namespaces whose Services changed (or were listed first) since the last call.
    pub fn take_changed(&self) -> BTreeSet<String> {
        std::mem::take(&mut self.changed.borrow_mut())
    }

    /// Returns once a namespace changed (then [`Services::take_changed`] says which).
    pub async fn changed_wait(&self) {
        let _ = self.wake.1.recv().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kuberuntime::service_env::ServicePort;
    use crate::model::pod::CONFIG_SOURCE;

    fn svc(name: &str, ip: &str) -> ServiceEntry {
        ServiceEntry {
            name: name.into(),
            cluster_ip: ip.into(),
            ports: vec![ServicePort {
                name: String::new(),
                port: 443,
                protocol: "TCP".into(),
            }],
        }
    }

    fn pod(ns: &str, links: Option<bool>) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = ns.into();
        p.metadata
            .annotations
            .insert(CONFIG_SOURCE.into(), "api".into());
        p.spec.enable_service_links = links;
        p
    }

    fn names(v: Vec<ServiceEntry>) -> Vec<String> {
        v.into_iter().map(|s| s.name).collect()
    }

    #[test]
    fn the_master_service_always_the_namespace_with_links() {
        let t = Services::default();
        let now = Instant::now();
        t.want("default", None, now);
        t.want("app", None, now);
        // Not listed yet: a cluster pod waits, at most HOLD.
        let e = t.for_pod(&pod("app", None), now).unwrap_err();
        assert_eq!(e.reason, Reason::ContainerCreating);
        assert!(t.for_pod(&pod("app", None), now + HOLD).is_ok());
        assert!(t.set("default", vec![svc("kubernetes", "10.96.0.1")]));
        assert!(t.set("app", vec![svc("db", "10.96.0.5"), svc("web", "None")]));
        assert_eq!(t.take_changed().len(), 2);
        assert_eq!(
            names(t.for_pod(&pod("app", None), now).unwrap()),
            ["db", "kubernetes", "web"]
        );
        assert_eq!(
            names(t.for_pod(&pod("app", Some(false)), now).unwrap()),
            ["kubernetes"]
        );
        // The same set again changes nothing; a first list, even empty, does.
        assert!(!t.set("app", vec![svc("web", "None"), svc("db", "10.96.0.5")]));
        assert!(t.take_changed().is_empty());
        t.want("empty", None, now);
        assert!(t.set("empty", vec![]));
        assert!(!t.set("empty", vec![]));
        assert_eq!(t.take_changed().len(), 1);
        // Told another address for the master service.
        t.set_master_override("api.example".into(), 6443);
        let m = t.for_pod(&pod("app", Some(false)), now).unwrap();
        assert_eq!(
            (m[0].cluster_ip.as_str(), m[0].ports[0].port),
            ("api.example", 6443)
        );
        t.forget("app");
        assert_eq!(
            names(t.for_pod(&pod("app", None), now).unwrap()),
            ["kubernetes"]
        );
    }

    #[test]
    fn a_copy_from_disk_counts_as_listed() {
        let t = Services::default();
        let now = Instant::now();
        t.want("default", Some(vec![svc("kubernetes", "10.96.0.1")]), now);
        assert_eq!(
            names(t.for_pod(&pod("x", None), now).unwrap()),
            ["kubernetes"]
        );
    }
}
