//! Which pod a request on the node port names: exactly the pod the API server names,
//! never another one of the node's. The API server forwards `/exec/NS/NAME/C`,
//! `/attach/...`, `/portForward/NS/NAME` and `/containerLogs/NS/NAME/C` for the pod its
//! API holds under `NS/NAME` on this node (no UID in 1.20; `/exec/NS/NAME/UID/C` from
//! other clients), so a name resolves to:
//! - a cluster pod the node caches under that name (uid checked when the request
//!   carries one), unless a local pod has its name (the cluster pod is refused:
//!   `store::cluster_beside`) or the node refused it at admission;
//! - else a local pod (`tinylet apply`, firmware) only through its mirror: when the
//!   API object under that name is this node's mirror pod (`NAME-NODE`, with the mirror
//!   annotation naming the local pod's current hash, as the uplink last saw it:
//!   [`MirrorNames`]), the local pod it stands for, unless refused at admission (a
//!   request's uid may be the local pod's or the mirror's);
//! - else nothing: 404 with kubelet's words, as for a pod that is not on the node.
//!
//! A local pod is never found by its bare name: a tenant who may create pods could
//! otherwise make `NS/NAME` bound to this node (refused for the name clash, the object
//! stays) and reach the owner's pod `NS/NAME` through it. Nor by a mirror name the
//! API does not show as this node's mirror (a tenant's pod of that name, refused by
//! the uplink and so not cached, must not fall through to the local pod).
//!
//! The CLI on the device (`tinylet exec`, `tinylet logs`) names pods as the store does
//! and does not come here.

use crate::http::query::Refused;
use crate::model::pod::Pod;
use crate::model::status::{PodPhase, PodStatus};
use crate::model::Object;
use crate::store::local_pods::{hash_text, pod_digest};
use crate::store::{Kind, Store};

/// The local pod whose mirror the API shows under a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// The local pod's name (its namespace is the mirror's).
    pub local: String,
    /// The mirror pod's uid in the API.
    pub uid: String,
    /// Its `kubernetes.io/config.mirror` annotation: the hash of the local pod it was
    /// made from (anyone who may create pods can set the annotation; only the node
    /// knows a local pod's hash before its mirror shows it).
    pub hash: String,
}

/// Which API pod names are this node's mirror pods, as the uplink last saw the API
/// (it implements this: `crate::uplink::mirror`).
pub trait MirrorNames {
    /// The local pod the API object `ns/name` mirrors: `None` unless the API shows a
    /// pod of that name bound to this node, carrying the mirror annotation, named
    /// `LOCAL-NODE`.
    fn mirror(&self, ns: &str, name: &str) -> Option<Mirror>;
}

/// What a request names: namespace, name, and the uid when the path carries one.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    /// The namespace.
    pub ns: &'a str,
    /// The pod's name in the API.
    pub name: &'a str,
    /// The uid in the path, if any.
    pub uid: Option<&'a str>,
}

/// 404 for a pod that is not on this node (a refused one is answered the same).
pub fn pod_not_found(ns: &str, name: &str) -> Refused {
    Refused(404, format!("pod {ns}/{name} not found"))
}

/// The pod `asked` names (see the module doc); the pod as the store holds it (a local
/// pod under its own name, not its mirror's).
pub fn resolve(
    store: &mut Store,
    mirrors: &dyn MirrorNames,
    asked: Asked<'_>,
) -> Result<Box<Pod>, Refused> {
    let (ns, name) = (asked.ns, asked.name);
    let not_found = |why: &str| {
        log::debug!("kubelet API: pod {ns}/{name}: {why}");
        pod_not_found(ns, name)
    };
    if let Some(object) = store.cluster_get(Kind::Pod, ns, name) {
        // The API's pod of this name is a cluster pod: that one or none.
        let Object::Pod(pod) = object else {
            return Err(not_found("not a pod"));
        };
        if store.local_pod_exists(ns, name) || store.cluster_pod_shadowed(ns, name) {
            return Err(not_found("refused: a local pod has its name"));
        }
        if refused_at_admission(store.read_status(ns, name).as_ref()) {
            return Err(not_found("refused at admission"));
        }
        if asked.uid.is_some_and(|u| u != pod.metadata.uid) {
            return Err(not_found("another uid"));
        }
        return Ok(pod);
    }
    let Some(mirror) = mirrors.mirror(ns, name) else {
        return Err(not_found(
            "neither a cluster pod nor this node's mirror pod",
        ));
    };
    let local = match store.get_local(Kind::Pod, ns, &mirror.local) {
        Ok(Some(e)) => e.object,
        Ok(None) => return Err(not_found("a mirror of no local pod")),
        Err(e) => return Err(Refused(500, e.to_string())),
    };
    let Object::Pod(pod) = local else {
        return Err(not_found("not a pod"));
    };
    if hash_text(pod_digest(&pod)) != mirror.hash {
        // Not made from this version of the local pod: an older mirror the node is
        // replacing, or one someone else made.
        return Err(not_found("a mirror of another version of the local pod"));
    }
    if refused_at_admission(store.read_status(ns, &mirror.local).as_ref()) {
        return Err(not_found("its local pod was refused at admission"));
    }
    if asked
        .uid
        .is_some_and(|u| u != pod.metadata.uid && u != mirror.uid)
    {
        return Err(not_found("another uid"));
    }
    Ok(pod)
}

/// Whether a pod's last status is a refusal at admission: `Failed` with a reason and
/// no container ever started (`crate::agent::admission::refused` writes it so; a pod
/// that ran and failed has its containers' statuses).
fn refused_at_admission(status: Option<&PodStatus>) -> bool {
    status.is_some_and(|s| {
        s.phase == Some(PodPhase::Failed)
            && !s.reason.is_empty()
            && s.container_statuses.is_empty()
            && s.init_container_statuses.is_empty()
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The mirrors the API shows: (namespace, API name) to the mirror.
    #[derive(Default)]
    struct Shown(BTreeMap<(String, String), Mirror>);

    impl MirrorNames for Shown {
        fn mirror(&self, ns: &str, name: &str) -> Option<Mirror> {
            self.0.get(&(ns.to_string(), name.to_string())).cloned()
        }
    }

    impl Shown {
        /// The API shows `ns/api` as the mirror (`uid`) of `local` as the store holds it
        /// now (its hash).
        fn with(self, s: &mut Store, ns: &str, api: &str, local: &str, uid: &str) -> Shown {
            let hash = match s.get_local(Kind::Pod, ns, local) {
                Ok(Some(e)) => match e.object {
                    Object::Pod(p) => hash_text(pod_digest(&p)),
                    _ => "not-a-pod".into(),
                },
                _ => "no-such-local-pod".into(),
            };
            self.with_hash(ns, api, local, uid, &hash)
        }

        fn with_hash(mut self, ns: &str, api: &str, local: &str, uid: &str, hash: &str) -> Shown {
            let m = Mirror {
                local: local.into(),
                uid: uid.into(),
                hash: hash.into(),
            };
            self.0.insert((ns.into(), api.into()), m);
            self
        }
    }

    fn store(tag: &str) -> Store {
        let d = std::env::temp_dir().join(format!("tinylet-podnames-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Store::open_at(&d, &[]).unwrap()
    }

    fn pod_json(ns: &str, name: &str, uid: &str) -> Vec<u8> {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": uid},
            "spec": {"containers": [{"name": "app", "image": "busybox"}]},
        })
        .to_string()
        .into_bytes()
    }

    fn local(s: &mut Store, ns: &str, name: &str, uid: &str) {
        let obj = crate::model::parse_object("test", &pod_json(ns, name, uid)).unwrap();
        s.apply(obj).unwrap();
    }

    fn cluster(s: &mut Store, ns: &str, name: &str, uid: &str) {
        s.put_cluster(Kind::Pod, ns, name, &pod_json(ns, name, uid))
            .unwrap();
    }

    fn refuse(s: &mut Store, ns: &str, name: &str) {
        let status = PodStatus {
            phase: Some(PodPhase::Failed),
            reason: "PodSecurity".into(),
            message: "Pod privileged".into(),
            ..Default::default()
        };
        s.write_status(ns, name, &status).unwrap();
    }

    fn ask<'a>(ns: &'a str, name: &'a str, uid: Option<&'a str>) -> Asked<'a> {
        Asked { ns, name, uid }
    }

    /// The uid of the pod found, or the status of the refusal.
    fn found(s: &mut Store, m: &Shown, a: Asked<'_>) -> Result<String, u16> {
        resolve(s, m, a)
            .map(|p| p.metadata.uid.clone())
            .map_err(|r| r.0)
    }

    #[test]
    fn a_local_pod_is_reached_only_through_its_mirror() {
        let s = &mut store("mirror");
        local(s, "ns", "web", "local-uid");
        let none = Shown::default();
        assert_eq!(found(s, &none, ask("ns", "web", None)), Err(404));
        assert_eq!(found(s, &none, ask("ns", "web-gw1", None)), Err(404));
        let shown = Shown::default().with(s, "ns", "web-gw1", "web", "mirror-uid");
        assert_eq!(found(s, &shown, ask("ns", "web", None)), Err(404));
        assert_eq!(
            found(s, &shown, ask("ns", "web-gw1", None)),
            Ok("local-uid".into())
        );
        // A uid in the path: the local pod's or the mirror's, nothing else.
        for uid in ["local-uid", "mirror-uid"] {
            let got = found(s, &shown, ask("ns", "web-gw1", Some(uid)));
            assert_eq!(got, Ok("local-uid".into()), "{uid}");
        }
        assert_eq!(
            found(s, &shown, ask("ns", "web-gw1", Some("other"))),
            Err(404)
        );
        assert_eq!(found(s, &shown, ask("other", "web-gw1", None)), Err(404));
        // A mirror whose local pod is gone reaches nothing.
        let stale = Shown::default().with(s, "ns", "gone-gw1", "gone", "u");
        assert_eq!(found(s, &stale, ask("ns", "gone-gw1", None)), Err(404));
        // Nor one of another hash: a mirror made from an older version of the pod, or
        // one a tenant made with the annotation (any pod creator may set it).
        let forged = Shown::default().with_hash("ns", "web-gw1", "web", "t", "0123");
        assert_eq!(found(s, &forged, ask("ns", "web-gw1", None)), Err(404));
        local(s, "ns", "web", "local-uid-2");
        assert_eq!(found(s, &shown, ask("ns", "web-gw1", None)), Err(404));
    }

    #[test]
    fn a_cluster_pod_with_a_local_pods_name_reaches_nothing() {
        let s = &mut store("clash");
        local(s, "ns", "web", "local-uid");
        cluster(s, "ns", "web", "tenant-uid");
        let _ = s.desired_pods_keeping_damaged();
        let shown = Shown::default().with(s, "ns", "web-gw1", "web", "mirror-uid");
        assert_eq!(found(s, &shown, ask("ns", "web", None)), Err(404));
        assert_eq!(
            found(s, &shown, ask("ns", "web", Some("tenant-uid"))),
            Err(404)
        );
        assert_eq!(
            found(s, &shown, ask("ns", "web", Some("local-uid"))),
            Err(404)
        );
        // The owner's pod is still there under its mirror's name.
        let got = found(s, &shown, ask("ns", "web-gw1", None));
        assert_eq!(got, Ok("local-uid".into()));
    }

    #[test]
    fn a_cluster_pod_under_a_mirror_name_is_that_pod_not_the_local_one() {
        // A tenant took `web-gw1` before the mirror was made: the API names the
        // tenant's pod, never the owner's, even with a stale mirror entry.
        let s = &mut store("taken");
        local(s, "ns", "web", "local-uid");
        cluster(s, "ns", "web-gw1", "tenant-uid");
        let stale = Shown::default().with(s, "ns", "web-gw1", "web", "old-mirror");
        for m in [&Shown::default(), &stale] {
            let got = found(s, m, ask("ns", "web-gw1", None));
            assert_eq!(got, Ok("tenant-uid".into()));
        }
        refuse(s, "ns", "web-gw1");
        assert_eq!(found(s, &stale, ask("ns", "web-gw1", None)), Err(404));
    }

    #[test]
    fn cluster_pods_by_name_and_uid_refused_ones_by_nothing() {
        let s = &mut store("cluster");
        cluster(s, "ns", "api", "u1");
        let none = Shown::default();
        assert_eq!(found(s, &none, ask("ns", "api", None)), Ok("u1".into()));
        assert_eq!(
            found(s, &none, ask("ns", "api", Some("u1"))),
            Ok("u1".into())
        );
        assert_eq!(found(s, &none, ask("ns", "api", Some("u2"))), Err(404));
        assert_eq!(found(s, &none, ask("ns", "nope", None)), Err(404));
        refuse(s, "ns", "api");
        assert_eq!(found(s, &none, ask("ns", "api", None)), Err(404));
        // A pod that ran and failed is still there (its logs are read).
        let ran = PodStatus {
            phase: Some(PodPhase::Failed),
            reason: "Error".into(),
            container_statuses: vec![Default::default()],
            ..Default::default()
        };
        s.write_status("ns", "api", &ran).unwrap();
        assert_eq!(found(s, &none, ask("ns", "api", None)), Ok("u1".into()));
    }

    #[test]
    fn a_local_pod_refused_at_admission_reaches_nothing() {
        let s = &mut store("local-refused");
        local(s, "ns", "web", "local-uid");
        refuse(s, "ns", "web");
        let shown = Shown::default().with(s, "ns", "web-gw1", "web", "mirror-uid");
        assert_eq!(found(s, &shown, ask("ns", "web-gw1", None)), Err(404));
    }
}
