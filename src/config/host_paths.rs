//! `allowedHostPaths`: the host directories pods may mount (hostPath volumes, and the
//! claims bound to `local`/`hostPath` PersistentVolumes), each a prefix.
//!
//! An entry is a path (`"/srv/pods"`: every pod may use it; local pods may write it,
//! cluster pods only read it) or an object, as PodSecurityPolicy's was:
//! `{"pathPrefix": "/srv/tenants/{namespace}", "readOnly": false, "source": "cluster"}`.
//! - `readOnly`: `true`, every mount of it is read-only; `false`, writable; absent,
//!   writable for local pods and read-only for cluster pods, so a tenant never writes
//!   the host unless the owner marked the prefix writable.
//! - `source`: `local` or `cluster` limits the entry to the pods of that source.
//! - `{namespace}` as the last component: a directory per namespace, the pod's own,
//!   made (0755) in the parent when missing; the pod reaches nothing of the others.
//!
//! Of nested entries the outermost a path is below decides (what a pod can write
//! through it, it can reach there anyway): a read-only entry inside one the pod may
//! write restricts nothing.

use super::ConfigError;
use serde::{Deserialize, Deserializer, Serialize};
use std::path::{Path, PathBuf};

/// The placeholder for the pod's namespace.
pub const NAMESPACE: &str = "{namespace}";

/// One entry of `allowedHostPaths`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostPathPrefix {
    /// The prefix (absolute; `{namespace}` may be its last component).
    pub path_prefix: PathBuf,
    /// Forces its mounts read-only (`true`) or lets them be written (`false`); absent:
    /// read-only for cluster pods only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Only pods of this source may use it; absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PodSource>,
}

/// Where a pod comes from, as the config names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PodSource {
    /// Applied and firmware pods (the owner's).
    Local,
    /// Pods the API server binds to the node.
    Cluster,
}

/// A prefix as it applies to one pod: the admin's directory (`base`, symlinks in it
/// followed), the pod's namespace directory below it for a `{namespace}` entry, and
/// whether the pod's mounts of it are read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowance {
    /// The directory as written in the config (without `{namespace}`).
    pub base: PathBuf,
    /// The pod's namespace, for a `{namespace}` entry: a directory made in `base`.
    pub namespace: Option<String>,
    /// The pod's mounts of it are read-only.
    pub read_only: bool,
}

impl Allowance {
    /// The prefix the pod sees (`base`, or `base/NAMESPACE`).
    pub fn path(&self) -> PathBuf {
        match &self.namespace {
            Some(ns) => self.base.join(ns),
            None => self.base.clone(),
        }
    }
}

impl HostPathPrefix {
    /// A prefix for every pod, writable by local pods only (the plain-path form).
    pub fn plain(path: impl Into<PathBuf>) -> HostPathPrefix {
        HostPathPrefix {
            path_prefix: path.into(),
            read_only: None,
            source: None,
        }
    }

    /// What this entry allows a pod of `namespace` (from the cluster or not), if anything.
    pub fn for_pod(&self, from_cluster: bool, namespace: &str) -> Option<Allowance> {
        let source = if from_cluster {
            PodSource::Cluster
        } else {
            PodSource::Local
        };
        if self.source.is_some_and(|s| s != source) {
            return None;
        }
        let read_only = self.read_only.unwrap_or(from_cluster);
        if self.path_prefix.file_name() != Some(NAMESPACE.as_ref()) {
            return Some(Allowance {
                base: self.path_prefix.clone(),
                namespace: None,
                read_only,
            });
        }
        // A namespace is a DNS label; anything else never names a directory here.
        let label = crate::model::validate::dns1123_label(namespace).is_ok();
        label.then(|| Allowance {
            base: self.path_prefix.parent().unwrap_or(Path::new("/")).into(),
            namespace: Some(namespace.to_string()),
            read_only,
        })
    }

    /// Checks entry `i`: absolute, `{namespace}` only as the whole last component.
    pub fn validate(&self, i: usize) -> Result<(), ConfigError> {
        let p = &self.path_prefix;
        let text = p.to_string_lossy();
        let err = |why: &str| {
            Err(ConfigError(format!(
                "allowedHostPaths[{i}].pathPrefix: {why}, got {text:?}"
            )))
        };
        if !p.is_absolute() {
            return err("must be absolute");
        }
        let placeholder_last = p.file_name() == Some(NAMESPACE.as_ref());
        let braces = text.matches(['{', '}']).count();
        if braces > 0 && !(placeholder_last && braces == 2) {
            return err("{namespace} may only be the whole last component, once");
        }
        if placeholder_last && p.parent().is_none_or(|d| d == Path::new("/")) {
            return err("{namespace} needs a parent directory other than /");
        }
        Ok(())
    }
}

/// The allowances of `entries` for a pod.
pub fn for_pod(entries: &[HostPathPrefix], from_cluster: bool, namespace: &str) -> Vec<Allowance> {
    entries
        .iter()
        .filter_map(|e| e.for_pod(from_cluster, namespace))
        .collect()
}

/// An entry is a path or an object (read as [`Object`]).
impl<'de> Deserialize<'de> for HostPathPrefix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = HostPathPrefix;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a path or {\"pathPrefix\", \"readOnly\", \"source\"}")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(HostPathPrefix::plain(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                m: A,
            ) -> Result<Self::Value, A::Error> {
                let o = Object::deserialize(serde::de::value::MapAccessDeserializer::new(m))?;
                Ok(HostPathPrefix {
                    path_prefix: o.path_prefix,
                    read_only: o.read_only,
                    source: o.source,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// The object form of an entry.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Object {
    path_prefix: PathBuf,
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    source: Option<PodSource>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Vec<HostPathPrefix>, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn paths_and_objects() {
        let v = parse(
            r#"["/srv/pods", {"pathPrefix": "/srv/t/{namespace}", "readOnly": false,
                "source": "cluster"}, {"pathPrefix": "/etc/ssl/certs", "readOnly": true}]"#,
        )
        .unwrap();
        assert_eq!(v[0], HostPathPrefix::plain("/srv/pods"));
        assert_eq!(v[1].source, Some(PodSource::Cluster));
        assert_eq!(v[2].read_only, Some(true));
        let e = parse(r#"[{"pathPrefix": "/x", "readonly": true}]"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `readonly`"), "{e}");
        let e = parse(r#"[3]"#).unwrap_err();
        assert!(e.to_string().contains("a path or {"), "{e}");
        let e = parse(r#"[{"pathPrefix": "/x", "source": "api"}]"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant `api`"), "{e}");
    }

    #[test]
    fn a_plain_prefix_is_read_only_for_cluster_pods() {
        let p = HostPathPrefix::plain("/srv/pods");
        assert!(!p.for_pod(false, "default").unwrap().read_only);
        assert!(p.for_pod(true, "default").unwrap().read_only);
        let writable = HostPathPrefix {
            read_only: Some(false),
            ..p.clone()
        };
        assert!(!writable.for_pod(true, "default").unwrap().read_only);
        let local = HostPathPrefix {
            source: Some(PodSource::Local),
            read_only: Some(true),
            ..p
        };
        assert!(
            local.for_pod(true, "default").is_none(),
            "not for the cluster"
        );
        assert!(local.for_pod(false, "default").unwrap().read_only);
    }

    #[test]
    fn a_namespace_prefix_is_the_pods_own_directory() {
        let p = HostPathPrefix::plain("/srv/tenants/{namespace}");
        let a = p.for_pod(true, "shop").unwrap();
        assert_eq!(a.base, Path::new("/srv/tenants"));
        assert_eq!(a.path(), Path::new("/srv/tenants/shop"));
        assert!(p.for_pod(true, "..").is_none());
        assert!(p.for_pod(true, "a/b").is_none());
        assert!(p.validate(0).is_ok());
        for (bad, why) in [
            ("srv/x", "must be absolute"),
            ("/srv/{namespace}/x", "only be the whole last component"),
            ("/srv/x{namespace}", "only be the whole last component"),
            (
                "/srv/{namespace}{namespace}",
                "only be the whole last component",
            ),
            ("/{namespace}", "a parent directory other than /"),
        ] {
            let e = HostPathPrefix::plain(bad).validate(3).unwrap_err().0;
            assert!(e.starts_with("allowedHostPaths[3].pathPrefix: "), "{e}");
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
