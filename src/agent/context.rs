//! What every task of the agent shares: config, CRI client, the store and host facts.
//! One thread, so the store sits in a `RefCell`; no borrow is ever held across an
//! `.await`.

use super::host::HostFacts;
use super::silent_registries::SilentRegistries;
use crate::config::Config;
use crate::cri::CriClient;
use crate::kuberuntime::env::Objects;
use crate::model::{ConfigMap, Pod, Secret};
use crate::store::Store;
use std::cell::RefCell;

/// What every task of the agent shares: config, runtime client, store and host facts.
pub struct Context {
    /// The agent's config.
    pub cfg: Config,
    /// The CRI client.
    pub cri: CriClient,
    /// The pod cache and status files.
    pub store: RefCell<Store>,
    /// What the agent found out about the host at start.
    pub host: HostFacts,
    /// The pods' cgroups; `None` where the machine cannot have them (warned at start).
    pub cgroups: Option<crate::node::PodCgroups>,
    /// The node's pressure as last observed (housekeeping, every 10 s).
    pub pressure: std::cell::Cell<crate::node::Pressure>,
    /// The labels the API last showed on this Node (the uplink's registration and its
    /// watch of the Node; at start the copy on flash), for admission's node selector
    /// and affinity checks; empty without the uplink.
    pub node_labels: super::node_labels::NodeLabels,
    /// The runtime's name from Version (`containerd`), for container ids in status.
    pub runtime_name: RefCell<String>,
    /// Registry hosts whose pulls lately ran into their deadline (every pod's worker
    /// consults and updates it).
    pub silent_registries: SilentRegistries,
    /// The service-account tokens of the cluster's pods (in memory only).
    #[cfg(feature = "uplink")]
    pub tokens: super::tokens::Tokens,
    /// Pod events (in memory only): for `tinylet describe`, and sent by the uplink.
    pub events: super::events::Recorder,
    /// The cluster's Services for the pods' environment (filled by the uplink).
    #[cfg(feature = "uplink")]
    pub services: super::services::Services,
    /// The cluster pods' PersistentVolumeClaims, resolved (filled by the uplink).
    #[cfg(feature = "uplink")]
    pub claims: super::claims::Claims,
    /// The node's admission verdicts: the uplink fetches for admitted pods only.
    #[cfg(feature = "uplink")]
    pub verdicts: super::verdicts::Verdicts,
}

impl Context {
    /// Records a pod event (kubelet's `reason`; `container` empty for the pod itself).
    pub fn event(
        &self,
        pod: &Pod,
        container: &str,
        warning: bool,
        reason: crate::model::reason::EventReason,
        message: impl FnOnce() -> String,
    ) {
        self.events
            .record(pod, container, warning, reason.as_str(), message());
    }
}

impl Objects for Context {
    fn configmap(&self, pod: &Pod, name: &str) -> Option<ConfigMap> {
        let ns = &pod.metadata.namespace;
        self.store
            .borrow_mut()
            .configmap_for(pod.source(), ns, name)
    }
    fn secret(&self, pod: &Pod, name: &str) -> Option<Secret> {
        let ns = &pod.metadata.namespace;
        self.store.borrow_mut().secret_for(pod.source(), ns, name)
    }
    /// A cluster pod's token is the one the uplink holds for it.
    #[cfg(feature = "uplink")]
    fn service_account_token(
        &self,
        pod: &Pod,
        source: &crate::model::projected::ServiceAccountTokenProjection,
    ) -> Result<Vec<u8>, crate::kuberuntime::env::NoToken> {
        self.tokens.lookup(pod, source)
    }
    fn node_allocatable(&self) -> crate::model::NodeResources {
        self.host.allocatable
    }
    #[cfg(feature = "uplink")]
    fn claim(
        &self,
        pod: &Pod,
        claim: &str,
    ) -> Result<crate::kuberuntime::env::BoundVolume, crate::kuberuntime::SyncError> {
        self.claims.lookup(pod, claim)
    }
    #[cfg(feature = "uplink")]
    fn services(
        &self,
        pod: &Pod,
    ) -> Result<Vec<crate::kuberuntime::service_env::ServiceEntry>, crate::kuberuntime::SyncError>
    {
        self.services.for_pod(pod, std::time::Instant::now())
    }
}
