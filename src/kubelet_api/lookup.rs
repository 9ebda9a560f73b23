//! The pod and container a request names, found in the store: what the log and stream
//! requests share. Not on this node: 404 with kubelet's words; a store that cannot be
//! read: 500.

use crate::config::Config;
use crate::http::query::Refused;
use crate::model::pod::Pod;
use crate::model::Object;
use crate::store::{Kind, Store};

/// 404 for a pod that is not on this node.
pub fn pod_not_found(ns: &str, name: &str) -> Refused {
    Refused(404, format!("pod {ns}/{name} not found"))
}

/// The pod `ns/name` from the store.
pub fn pod(cfg: &Config, ns: &str, name: &str) -> Result<Box<Pod>, Refused> {
    let store = &mut Store::open_read_only(cfg);
    match store.get(Kind::Pod, ns, name) {
        Ok(Some(e)) => match e.object {
            Object::Pod(p) => Ok(p),
            _ => Err(pod_not_found(ns, name)),
        },
        Ok(None) => Err(pod_not_found(ns, name)),
        Err(e) => Err(Refused(500, e.to_string())),
    }
}

/// 404 unless the pod (`name` as the request gave it) has a container or init container
/// named `c`.
pub fn container(pod: &Pod, name: &str, c: &str) -> Result<(), Refused> {
    let spec = &pod.spec;
    let known = spec
        .containers
        .iter()
        .chain(&spec.init_containers)
        .any(|x| x.name == c);
    if known {
        return Ok(());
    }
    Err(Refused(
        404,
        format!("container {c:?} not found in pod {name:?}"),
    ))
}
