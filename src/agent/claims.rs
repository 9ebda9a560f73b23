//! The PersistentVolumeClaims of the cluster's pods, resolved to the directory of the
//! `local` or `hostPath` PersistentVolume bound to each, in the agent's context: the
//! uplink (`crate::uplink::claims`) fills it and keeps a copy in the state directory (a
//! StatefulSet pinned to a gateway finds its data after a reboot without the uplink);
//! the workers read it when they set up a pod's volumes. Here so the agent needs
//! nothing of the uplink.

use crate::kuberuntime::env::BoundVolume;
use crate::kuberuntime::SyncError;
use crate::model::pod::Source;
use crate::model::{Pod, Reason};
use smol::channel::{Receiver, Sender};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// A claim by namespace and name.
pub type ClaimKey = (String, String);

/// Where one wanted claim stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Not bound yet (or not read yet): its pods wait.
    Pending(String),
    /// Bound to a volume this node can mount.
    Bound(BoundVolume),
    /// Bound to a volume this node cannot use (the message says why): its pods wait
    /// with `CreateContainerConfigError`.
    Refused(String),
}

/// The claims the uplink resolves, and the namespaces whose claims changed since the
/// sync loop last looked.
pub struct Claims {
    held: RefCell<BTreeMap<ClaimKey, Claim>>,
    changed: RefCell<BTreeSet<String>>,
    wake: (Sender<()>, Receiver<()>),
}

impl Default for Claims {
    fn default() -> Claims {
        Claims {
            held: RefCell::default(),
            changed: RefCell::default(),
            wake: smol::channel::bounded(1),
        }
    }
}

impl Claims {
    /// The volume bound to `pod`'s claim `name`, or why there is none yet.
    pub fn lookup(&self, pod: &Pod, name: &str) -> Result<BoundVolume, SyncError> {
        let ns = &pod.metadata.namespace;
        if pod.source() != Source::Api {
            return Err(SyncError::new(
                Reason::CreateContainerConfigError,
                format!("persistentVolumeClaim {name:?}: claims are the cluster's, and this pod is local"),
            ));
        }
        match self.held.borrow().get(&(ns.clone(), name.to_string())) {
            Some(Claim::Bound(b)) => Ok(b.clone()),
            Some(Claim::Refused(why)) => Err(SyncError::new(
                Reason::CreateContainerConfigError,
                format!("persistentVolumeClaim {name:?}: {why}"),
            )),
            Some(Claim::Pending(why)) => Err(SyncError::new(
                Reason::ContainerCreating,
                format!("persistentVolumeClaim {name:?}: {why}"),
            )),
            None => Err(SyncError::new(
                Reason::ContainerCreating,
                format!("persistentVolumeClaim {name:?}: not read from the cluster yet"),
            )),
        }
    }

    /// Records where claim `k` stands; wakes its namespace's pods on a change.
    pub fn set(&self, k: &ClaimKey, now: Claim) {
        let mut held = self.held.borrow_mut();
        if held.get(k) == Some(&now) {
            return;
        }
        held.insert(k.clone(), now);
        self.changed.borrow_mut().insert(k.0.clone());
        let _ = self.wake.0.try_send(());
    }

    /// Where claim `k` stands, if it is held.
    pub fn get(&self, k: &ClaimKey) -> Option<Claim> {
        self.held.borrow().get(k).cloned()
    }

    /// Drops every claim `keep` refuses (no pod references it any longer).
    pub fn retain(&self, keep: impl Fn(&ClaimKey) -> bool) {
        self.held.borrow_mut().retain(|k, _| keep(k));
    }

    /// The namespaces whose claims changed since the last call.
    pub fn take_changed(&self) -> BTreeSet<String> {
        std::mem::take(&mut self.changed.borrow_mut())
    }

    /// Returns once a claim changed (then [`Claims::take_changed`] says where).
    pub async fn changed_wait(&self) {
        let _ = self.wake.1.recv().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pod::{HostPathType, CONFIG_SOURCE};

    #[test]
    fn a_cluster_pod_sees_its_namespaces_bound_claims() {
        let c = Claims::default();
        let mut pod = Pod::default();
        pod.metadata.namespace = "app".into();
        let e = c.lookup(&pod, "data").unwrap_err();
        assert_eq!(e.reason, Reason::CreateContainerConfigError, "a local pod");
        pod.metadata
            .annotations
            .insert(CONFIG_SOURCE.into(), "api".into());
        assert_eq!(
            c.lookup(&pod, "data").unwrap_err().reason,
            Reason::ContainerCreating
        );
        let k = ("app".to_string(), "data".to_string());
        let b = BoundVolume {
            volume_name: "pv1".into(),
            path: "/srv/pv1".into(),
            host_path_type: HostPathType::Directory,
            node_affinity: None,
        };
        c.set(&k, Claim::Bound(b.clone()));
        assert_eq!(c.take_changed().into_iter().collect::<Vec<_>>(), ["app"]);
        assert_eq!(c.lookup(&pod, "data").unwrap(), b);
        c.set(&k, Claim::Bound(b));
        assert!(c.take_changed().is_empty(), "no change, no wake");
        c.set(&k, Claim::Refused("volume pv1 is nfs".into()));
        let e = c.lookup(&pod, "data").unwrap_err();
        assert_eq!(e.reason, Reason::CreateContainerConfigError);
        assert!(e.message.contains("nfs"), "{}", e.message);
        pod.metadata.namespace = "other".into();
        assert_eq!(
            c.lookup(&pod, "data").unwrap_err().reason,
            Reason::ContainerCreating
        );
    }
}
