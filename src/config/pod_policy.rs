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
        Ok(())
    }
}

/// Checks `allowedUnsafeSysctls`: names or prefixes ending in `*` (kubelet's form).
pub fn validate_sysctl_patterns(patterns: &[String]) -> Result<(), ConfigError> {
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
                "allowedUnsafeSysctls[{i}]: must be a sysctl name or a prefix ending in * \
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
        assert!(
            validate_sysctl_patterns(&["kernel.msg*".into(), "net.core.somaxconn".into()]).is_ok()
        );
        for bad in ["*", "net.*.x", "Net.core", ""] {
            assert!(validate_sysctl_patterns(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
