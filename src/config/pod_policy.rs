//! The device owner's pod policy (`podPolicy`) and kubelet's `allowedUnsafeSysctls`:
//! what pods this node runs at all, checked by the node's admission
//! (`crate::node::admit`) before anything of a pod is made.
//!
//! A Pod Security Standards level per source (`cluster`: pods the API server binds here;
//! `local`: applied and firmware pods): `privileged` (no restriction, kubelet's
//! behaviour and the default), `baseline` or `restricted`, with allowances on top of the
//! level: capabilities (`allowedCapabilities`), host namespaces (`allowedHostNamespaces`:
//! `network`, `pid`, `ipc`), hostPath volumes (`allowHostPaths`, still only below
//! `allowedHostPaths`) and host ports (`allowHostPorts`).
//!
//! kubelet's `allowedUnsafeSysctls` per source (`podPolicy.allowedUnsafeSysctls.cluster`
//! and `.local`): a source's own list when it is set; otherwise the top-level
//! `allowedUnsafeSysctls` for local pods and for cluster pods at `privileged` (kubelet's
//! meaning, every pod), and none for cluster pods at `baseline` or `restricted` (Pod
//! Security's baseline allows only the safe set: a list meant for the owner's pods must
//! not reach a tenant's).

use super::ConfigError;
use serde::{Deserialize, Serialize};

/// A Pod Security Standards level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Unrestricted (kubelet's own behaviour).
    #[default]
    Privileged,
    /// Known privilege escalations refused.
    Baseline,
    /// Hardened: baseline plus non-root, no privilege escalation, dropped
    /// capabilities, a seccomp profile, only volumes with no host access.
    Restricted,
}

impl Level {
    /// Its name, as the config and the refusals spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// `podPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PodPolicy {
    /// The level of pods from the cluster.
    pub cluster: Level,
    /// The level of local pods (applied, firmware manifests).
    pub local: Level,
    /// Capabilities pods may add beyond the level's (`NET_ADMIN`, `SYS_TIME`, ...;
    /// without the `CAP_` prefix).
    pub allowed_capabilities: Vec<String>,
    /// Host namespaces pods may share at baseline and restricted: `network`, `pid`,
    /// `ipc`.
    pub allowed_host_namespaces: Vec<String>,
    /// hostPath volumes at baseline and restricted (only below `allowedHostPaths`).
    pub allow_host_paths: bool,
    /// Container `hostPort`s at baseline and restricted.
    pub allow_host_ports: bool,
    /// `allowedUnsafeSysctls` per source (see the module's text).
    pub allowed_unsafe_sysctls: PerSource,
}

/// Sysctl patterns per source; `None`: not set (the top-level list may apply).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PerSource {
    /// For pods from the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Vec<String>>,
    /// For local pods (applied, firmware manifests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<Vec<String>>,
}

/// The host namespaces a policy can allow.
pub const HOST_NAMESPACES: [&str; 3] = ["network", "pid", "ipc"];

impl PodPolicy {
    /// Checks the allowances' spelling.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (i, ns) in self.allowed_host_namespaces.iter().enumerate() {
            if !HOST_NAMESPACES.contains(&ns.as_str()) {
                return Err(ConfigError(format!(
                    "podPolicy.allowedHostNamespaces[{i}]: must be one of network, pid, ipc, got {ns:?}"
                )));
            }
        }
        for (i, c) in self.allowed_capabilities.iter().enumerate() {
            let ok = !c.is_empty()
                && c.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            if !ok || c.starts_with("CAP_") {
                return Err(ConfigError(format!(
                    "podPolicy.allowedCapabilities[{i}]: must be a capability name in upper \
                     case without the CAP_ prefix (NET_ADMIN), got {c:?}"
                )));
            }
        }
        let per = &self.allowed_unsafe_sysctls;
        for (source, list) in [("cluster", &per.cluster), ("local", &per.local)] {
            let field = format!("podPolicy.allowedUnsafeSysctls.{source}");
            validate_sysctl_patterns(&field, list.as_deref().unwrap_or_default())?;
        }
        Ok(())
    }

    /// The unsafe sysctls a pod of this source may set; `top`: the config's top-level
    /// `allowedUnsafeSysctls`.
    pub fn unsafe_sysctls<'a>(&'a self, from_cluster: bool, top: &'a [String]) -> &'a [String] {
        let per = &self.allowed_unsafe_sysctls;
        let (own, level) = if from_cluster {
            (&per.cluster, self.cluster)
        } else {
            (&per.local, self.local)
        };
        match own {
            Some(list) => list,
            None if from_cluster && level != Level::Privileged => &[],
            None => top,
        }
    }
}

/// Checks `allowedUnsafeSysctls`: names or prefixes ending in `*` (kubelet's form).
/// `field` names the list in the messages.
pub fn validate_sysctl_patterns(field: &str, patterns: &[String]) -> Result<(), ConfigError> {
    for (i, p) in patterns.iter().enumerate() {
        let name = p.strip_suffix('*').unwrap_or(p);
        let ok = !name.is_empty()
            && name.len() <= 253
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/".contains(&b))
            && !name.contains('*');
        if !ok {
            return Err(ConfigError(format!(
                "{field}[{i}]: must be a sysctl name or a prefix ending in * \
                 (net.core.somaxconn, kernel.msg*), got {p:?}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowances_are_checked() {
        let mut p = PodPolicy::default();
        assert!(p.validate().is_ok());
        p.allowed_host_namespaces = vec!["uts".into()];
        assert!(p
            .validate()
            .unwrap_err()
            .0
            .contains("allowedHostNamespaces[0]"));
        p.allowed_host_namespaces = vec!["network".into()];
        p.allowed_capabilities = vec!["CAP_NET_ADMIN".into()];
        assert!(p
            .validate()
            .unwrap_err()
            .0
            .contains("allowedCapabilities[0]"));
        p.allowed_capabilities = vec!["NET_ADMIN".into()];
        assert!(p.validate().is_ok());
        let ok = ["kernel.msg*".to_string(), "net.core.somaxconn".into()];
        assert!(validate_sysctl_patterns("allowedUnsafeSysctls", &ok).is_ok());
        for bad in ["*", "net.*.x", "Net.core", ""] {
            let e = validate_sysctl_patterns("allowedUnsafeSysctls", &[bad.into()]);
            assert!(
                e.unwrap_err().0.starts_with("allowedUnsafeSysctls[0]: "),
                "{bad}"
            );
        }
        p.allowed_unsafe_sysctls.local = Some(vec!["kernel.msgmax".into(), "bad*x".into()]);
        let e = p.validate().unwrap_err().0;
        assert!(
            e.starts_with("podPolicy.allowedUnsafeSysctls.local[1]: "),
            "{e}"
        );
    }

    #[test]
    fn the_top_level_sysctls_never_reach_a_restricted_source() {
        let top = ["net.core.somaxconn".to_string()];
        let mut p = PodPolicy::default();
        assert_eq!(
            p.unsafe_sysctls(true, &top),
            top,
            "privileged: kubelet's meaning"
        );
        assert_eq!(p.unsafe_sysctls(false, &top), top);
        p.cluster = Level::Baseline;
        p.local = Level::Restricted;
        assert!(p.unsafe_sysctls(true, &top).is_empty(), "a tenant's pods");
        assert_eq!(p.unsafe_sysctls(false, &top), top, "the owner's pods");
        p.allowed_unsafe_sysctls.cluster = Some(vec!["kernel.msgmax".into()]);
        p.allowed_unsafe_sysctls.local = Some(Vec::new());
        assert_eq!(p.unsafe_sysctls(true, &top), ["kernel.msgmax"]);
        assert!(
            p.unsafe_sysctls(false, &top).is_empty(),
            "set, even empty, wins"
        );
    }
}
