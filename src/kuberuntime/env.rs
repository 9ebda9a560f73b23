//! A container's environment as kubelet builds it: `envFrom` sources first (ConfigMaps
//! and Secrets, each key prefixed), then `env` in order, where a value may use `$(VAR)`
//! to refer to a variable defined before it. `valueFrom` reads a pod field, a resource
//! of the container, or a key of a ConfigMap/Secret from the store. The same expansion
//! applies to `command` and `args`; it is bounded (`expand.rs`).

pub use super::expand::Env;
use super::service_env::{self, ServiceEntry};
use super::SyncError;
use crate::model::container::{EnvVar, ResourceFieldSelector};
use crate::model::projected::ServiceAccountTokenProjection;
use crate::model::{ConfigMap, Container, NodeResources, Pod, Reason, Secret};

/// Lookups of the objects a pod refers to (implemented by the store): `name` in the
/// pod's namespace, from the pod's own source (a cluster pod sees only the cluster's
/// objects, a local pod only the device's; see [`crate::model::pod::Source`]).
pub trait Objects {
    /// The configMap `name` in the pod's namespace, if there is one.
    fn configmap(&self, pod: &Pod, name: &str) -> Option<ConfigMap>;
    /// The secret `name` in the pod's namespace, if there is one.
    fn secret(&self, pod: &Pod, name: &str) -> Option<Secret>;

    /// The service-account token a projected `serviceAccountToken` source of `pod`
    /// shows, or why there is none ([`NoToken`]). Only the cluster issues tokens (the
    /// uplink holds them in memory); this default is a local pod's answer.
    fn service_account_token(
        &self,
        pod: &Pod,
        _source: &ServiceAccountTokenProjection,
    ) -> Result<Vec<u8>, NoToken> {
        Err(NoToken::Refused(no_token(pod)))
    }

    /// The node's allocatable resources: what a `resourceFieldRef` to a limit the
    /// container does not set reads. This default (nothing) is for tests.
    fn node_allocatable(&self) -> NodeResources {
        NodeResources::default()
    }

    /// The directory on this node of the PersistentVolume bound to `pod`'s claim
    /// `claim` ([`BoundVolume`]); an error when it is not (yet) known. Only the
    /// cluster has claims: this default is a local pod's answer.
    fn claim(&self, pod: &Pod, claim: &str) -> Result<BoundVolume, SyncError> {
        Err(config_error(format!(
            "persistentVolumeClaim {claim:?}: claims are the cluster's; pod {}/{} is not",
            pod.metadata.namespace, pod.metadata.name
        )))
    }

    /// The Services whose variables `pod`'s containers get ([`super::service_env`]);
    /// an error when they are not known yet and worth a short wait. Only the cluster
    /// has Services: this default (none) is a local-only node's answer.
    fn services(&self, _pod: &Pod) -> Result<Vec<ServiceEntry>, SyncError> {
        Ok(Vec::new())
    }
}

/// Where a PersistentVolume bound to a claim lives on this node: the path of a `local`
/// or `hostPath` volume, mounted like a hostPath (checked against `allowedHostPaths`,
/// no symlink followed below the allowed prefix).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BoundVolume {
    /// The PersistentVolume's name.
    pub volume_name: String,
    /// Its path on the node.
    pub path: String,
    /// What must be there: a `local` volume's directory (`Directory`), a `hostPath`
    /// volume's `type`.
    pub host_path_type: crate::model::pod::HostPathType,
    /// The volume's `nodeAffinity.required`: the nodes it is on (checked against this
    /// node's labels before the volume is used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<crate::model::affinity::NodeSelector>,
}

/// Why a projected `serviceAccountToken` source has no token to show. In each case a
/// token the volume already shows is kept (one issued before the agent restarted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoToken {
    /// None can be had now (the cluster is away or has not answered): the pod starts
    /// with an empty token file, filled in place when a token arrives.
    Later,
    /// Asked for a moment ago: the containers wait (`ContainerCreating`) a few seconds
    /// at most, so that a pod starting with its cluster up starts with its token.
    Asked,
    /// Refused, never issued (the message says why): the containers wait with
    /// `CreateContainerConfigError`.
    Refused(String),
}

/// Why a local pod has no service-account token.
pub fn no_token(pod: &Pod) -> String {
    format!(
        "no token for service account {:?}: tokens come only from the cluster, and none is held for this pod",
        pod.spec.service_account_name
    )
}

/// Runtime facts a `fieldRef` can ask for.
#[derive(Debug, Clone, Default)]
pub struct PodFacts {
    /// The node's name (`spec.nodeName`).
    pub node_name: String,
    /// The host's IP (`status.hostIP`).
    pub host_ip: String,
    /// The pod's IP (`status.podIP`).
    pub pod_ip: String,
}

/// Builds the ordered environment of `c`. Missing non-optional references are a
/// `CreateContainerConfigError`, as in kubelet, and so is a value past the bounds.
pub fn container_env(
    pod: &Pod,
    c: &Container,
    facts: &PodFacts,
    objects: &dyn Objects,
) -> Result<Env, SyncError> {
    let mut env = Env::with_later(service_env::env_vars(&objects.services(pod)?));
    for from in &c.env_from {
        let entries = if let Some(r) = &from.config_map_ref {
            match objects.configmap(pod, &r.name) {
                Some(cm) => cm.entries(),
                None if r.optional == Some(true) => continue,
                None => return Err(config_error(format!("configmap \"{}\" not found", r.name))),
            }
        } else if let Some(r) = &from.secret_ref {
            match objects.secret(pod, &r.name) {
                Some(s) => s.entries(),
                None if r.optional == Some(true) => continue,
                None => return Err(config_error(format!("secret \"{}\" not found", r.name))),
            }
        } else {
            continue;
        };
        for (k, v) in entries {
            env.set(
                format!("{}{k}", from.prefix),
                String::from_utf8_lossy(&v).into_owned(),
            )?;
        }
    }
    for var in &c.env {
        match &var.value_from {
            None => env.set_expanded(var.name.clone(), &var.value)?,
            Some(_) => {
                if let Some(v) = value_from(pod, c, var, facts, objects)? {
                    env.set(var.name.clone(), v)?;
                }
            }
        }
    }
    env.define_later()?;
    Ok(env)
}

fn config_error(message: String) -> SyncError {
    SyncError::new(Reason::CreateContainerConfigError, message)
}

/// The value of a `valueFrom` variable; `None` when an optional source is missing.
fn value_from(
    pod: &Pod,
    c: &Container,
    var: &EnvVar,
    facts: &PodFacts,
    objects: &dyn Objects,
) -> Result<Option<String>, SyncError> {
    let ns = &pod.metadata.namespace;
    let Some(src) = &var.value_from else {
        return Ok(None);
    };
    if let Some(f) = &src.field_ref {
        return field_value(pod, facts, &f.field_path).map(Some);
    }
    if let Some(r) = &src.resource_field_ref {
        return resource_value(c, r, &objects.node_allocatable()).map(Some);
    }
    let (kind, sel, value) = if let Some(sel) = &src.config_map_key_ref {
        let obj = objects.configmap(pod, &sel.name);
        ("configmap", sel, obj.as_ref().map(|o| o.get(&sel.key)))
    } else if let Some(sel) = &src.secret_key_ref {
        let obj = objects.secret(pod, &sel.name);
        ("secret", sel, obj.as_ref().map(|o| o.get(&sel.key)))
    } else {
        return Ok(None);
    };
    match value {
        Some(Some(bytes)) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        _ if sel.optional == Some(true) => Ok(None),
        None => Err(config_error(format!("{kind} \"{}\" not found", sel.name))),
        Some(None) => Err(config_error(format!(
            "couldn't find key {} in {kind} {ns}/{}",
            sel.key, sel.name
        ))),
    }
}

/// A pod field by its `fieldPath`, for the paths Kubernetes allows in env.
fn field_value(pod: &Pod, facts: &PodFacts, path: &str) -> Result<String, SyncError> {
    let m = &pod.metadata;
    let subscript = |prefix: &str| {
        path.strip_prefix(prefix)
            .and_then(|r| r.strip_suffix("']"))
            .map(str::to_string)
    };
    Ok(match path {
        "metadata.name" => m.name.clone(),
        "metadata.namespace" => m.namespace.clone(),
        "metadata.uid" => m.uid.clone(),
        "spec.nodeName" => facts.node_name.clone(),
        "spec.serviceAccountName" => pod.spec.service_account_name.clone(),
        "status.podIP" | "status.podIPs" => facts.pod_ip.clone(),
        "status.hostIP" | "status.hostIPs" => facts.host_ip.clone(),
        _ => {
            if let Some(k) = subscript("metadata.labels['") {
                m.labels.get(&k).cloned().unwrap_or_default()
            } else if let Some(k) = subscript("metadata.annotations['") {
                m.annotations.get(&k).cloned().unwrap_or_default()
            } else {
                return Err(config_error(format!("unsupported fieldPath {path:?}")));
            }
        }
    })
}

/// `limits.cpu`, `requests.memory`, ... of the container, divided by the divisor
/// (default 1) and rounded up, as kubelet does. A limit the container does not set
/// reads as the node's allocatable (kubelet's rule); a request it does not set, 0.
pub(super) fn resource_value(
    c: &Container,
    r: &ResourceFieldSelector,
    alloc: &NodeResources,
) -> Result<String, SyncError> {
    let (limits, name) = match r.resource.split_once('.') {
        Some(("limits", n)) => (true, n),
        Some(("requests", n)) => (false, n),
        _ => {
            return Err(config_error(format!(
                "unsupported resourceFieldRef {:?}",
                r.resource
            )))
        }
    };
    let map = if limits {
        &c.resources.limits
    } else {
        &c.resources.requests
    };
    let nanos = match map.get(name) {
        Some(q) => q.nanos(),
        None if limits => allocatable_nanos(alloc, name),
        None => 0,
    };
    let divisor = r.divisor.as_ref().map_or(1_000_000_000, |d| d.nanos());
    if divisor <= 0 {
        return Err(config_error(format!(
            "resourceFieldRef {:?}: divisor must be positive",
            r.resource
        )));
    }
    Ok(((nanos + divisor - 1) / divisor).to_string())
}

/// The node's allocatable `resource` in nanos of its unit (cores, bytes).
fn allocatable_nanos(alloc: &NodeResources, resource: &str) -> i128 {
    const NANO: i128 = 1_000_000_000;
    match resource {
        "cpu" => i128::from(alloc.cpu_milli) * 1_000_000,
        "memory" => i128::from(alloc.memory) * NANO,
        "ephemeral-storage" => i128::from(alloc.ephemeral_storage) * NANO,
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
