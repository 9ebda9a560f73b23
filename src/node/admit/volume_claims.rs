//! A PersistentVolumeClaim bound to a `local` or `hostPath` PersistentVolume is a
//! directory of the host, so the policy judges it as the hostPath it is: at `baseline`
//! and `restricted` only with `podPolicy.allowHostPaths` (and, when mounted, only below
//! `allowedHostPaths`, read-only unless the prefix is writable for the pod, as a
//! hostPath). The volume's `nodeAffinity.required` must match this node: a volume
//! pinned to another node's disk is not this node's directory of the same path.
//!
//! The uplink resolves claims after the pod is admitted (asynchronously, from the API),
//! so this runs where a resolved claim is used: when the pod's volumes are set up,
//! before anything of the pod is made or run (`crate::agent::context`).

use super::{policy, Refusal};
use crate::config::pod_policy::Level;
use crate::config::Config;
use crate::kuberuntime::env::BoundVolume;
use crate::model::pod::Source;
use crate::model::Pod;
use std::collections::BTreeMap;

/// The reason of a volume pinned to other nodes (the scheduler's words).
pub const AFFINITY_REASON: &str = "VolumeNodeAffinityConflict";

/// Checks `pod`'s claim `claim`, bound to `bound`, on the node `node_name` with `labels`.
pub fn check(
    pod: &Pod,
    claim: &str,
    bound: &BoundVolume,
    cfg: &Config,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> Result<(), Refusal> {
    let index = pod.spec.volumes.iter().position(|v| {
        v.persistent_volume_claim
            .as_ref()
            .is_some_and(|c| c.claim_name == claim)
    });
    let field = format!(
        "spec.volumes[{}].persistentVolumeClaim",
        index.unwrap_or_default()
    );
    let what = format!(
        "{field} {claim:?} is bound to volume {:?}, the host's directory {:?}",
        bound.volume_name, bound.path
    );
    let from_cluster = pod.source() == Source::Api;
    let p = &cfg.pod_policy;
    let (level, source) = if from_cluster {
        (p.cluster, "cluster")
    } else {
        (p.local, "local")
    };
    if level != Level::Privileged && !p.allow_host_paths {
        return Err(Refusal::new(
            policy::REASON,
            format_args!(
                "violates the node's pod policy {:?} for {source} pods: {what}: hostPath \
                 volumes are not allowed (podPolicy.allowHostPaths can allow them below \
                 allowedHostPaths)",
                level.as_str()
            ),
        ));
    }
    let Some(affinity) = &bound.node_affinity else {
        return Ok(());
    };
    let here = affinity
        .node_selector_terms
        .iter()
        .any(|t| t.matches(labels, node_name));
    if here {
        return Ok(());
    }
    Err(Refusal::new(
        AFFINITY_REASON,
        format_args!(
            "{what}: the volume's nodeAffinity does not match node {node_name:?} (it is \
             another node's disk)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::affinity::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
    use crate::model::pod::{HostPathType, PersistentVolumeClaimVolumeSource, Volume};

    fn pod() -> Pod {
        let mut p = Pod::default();
        p.metadata
            .annotations
            .insert(crate::model::pod::CONFIG_SOURCE.into(), "api".into());
        p.spec.volumes = vec![
            Volume {
                name: "scratch".into(),
                ..Default::default()
            },
            Volume {
                name: "data".into(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: "www-web-0".into(),
                    read_only: false,
                }),
                ..Default::default()
            },
        ];
        p
    }

    fn bound(on: Option<&str>) -> BoundVolume {
        let term = |host: &str| NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement {
                key: "kubernetes.io/hostname".into(),
                operator: "In".into(),
                values: vec![host.into()],
            }],
            match_fields: vec![],
        };
        BoundVolume {
            volume_name: "pv1".into(),
            path: "/srv/disk".into(),
            host_path_type: HostPathType::Directory,
            node_affinity: on.map(|h| NodeSelector {
                node_selector_terms: vec![term(h)],
            }),
        }
    }

    fn labels() -> BTreeMap<String, String> {
        [("kubernetes.io/hostname".to_string(), "gw1".to_string())].into()
    }

    #[test]
    fn a_host_directory_claim_needs_allow_host_paths_above_privileged() {
        let mut cfg = Config::default();
        let (p, b) = (pod(), bound(None));
        assert!(check(&p, "www-web-0", &b, &cfg, "gw1", &labels()).is_ok());
        for level in [Level::Baseline, Level::Restricted] {
            cfg.pod_policy.cluster = level;
            let r = check(&p, "www-web-0", &b, &cfg, "gw1", &labels()).unwrap_err();
            assert_eq!(r.reason, "PodSecurity");
            let m = r.message;
            assert!(
                m.contains(&format!(
                    "pod policy \"{}\" for cluster pods",
                    level.as_str()
                )),
                "{m}"
            );
            assert!(
                m.contains("spec.volumes[1].persistentVolumeClaim \"www-web-0\" is bound to volume \"pv1\", the host's directory \"/srv/disk\""),
                "{m}"
            );
        }
        cfg.pod_policy.allow_host_paths = true;
        assert!(check(&p, "www-web-0", &b, &cfg, "gw1", &labels()).is_ok());
    }

    #[test]
    fn a_volume_pinned_to_another_node_is_refused() {
        let cfg = Config::default();
        let p = pod();
        assert!(check(&p, "www-web-0", &bound(Some("gw1")), &cfg, "gw1", &labels()).is_ok());
        let r = check(&p, "www-web-0", &bound(Some("gw2")), &cfg, "gw1", &labels()).unwrap_err();
        assert_eq!(r.reason, AFFINITY_REASON);
        assert!(
            r.message.contains("does not match node \"gw1\""),
            "{}",
            r.message
        );
        assert!(r.message.contains("\"pv1\""), "{}", r.message);
    }
}
