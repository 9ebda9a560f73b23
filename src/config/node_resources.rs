//! The config of pod cgroups and node allocatable, with kubelet's names:
//! `cgroupDriver`, `cgroupsPerQOS`, `cgroupRoot`, `systemReserved`, `kubeReserved`,
//! `enforceNodeAllocatable`, plus `podsCgroupName` (kubelet's fixed `kubepods`).

use super::{Config, ConfigError};
use crate::model::Quantity;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How cgroups are named and made, as the runtime's driver expects: runc's
/// `SystemdCgroup = true` takes systemd slice names, `false` cgroupfs paths. The two
/// must agree, or the runtime refuses the sandbox's `cgroup_parent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupDriver {
    /// Paths such as `/kubepods/burstable/pod<UID>` (kubelet's default).
    #[default]
    Cgroupfs,
    /// Slices such as `kubepods-burstable-pod<UID>.slice`.
    Systemd,
}

/// Resources held back from pods (`systemReserved`, `kubeReserved`): `cpu`, `memory`
/// and `pid` quantities.
pub type Reserved = BTreeMap<String, Quantity>;

/// The resource names a reservation may hold (kubelet's; no ephemeral-storage here).
const RESERVABLE: [&str; 3] = ["cpu", "memory", "pid"];

/// Checks the reservations and `enforceNodeAllocatable`, naming the field at fault.
pub fn validate(cfg: &Config) -> Result<(), ConfigError> {
    for (field, map) in [
        ("systemReserved", &cfg.system_reserved),
        ("kubeReserved", &cfg.kube_reserved),
    ] {
        for (k, q) in map {
            if !RESERVABLE.contains(&k.as_str()) {
                return Err(ConfigError(format!(
                    "{field}.{k}: unknown resource; expected cpu, memory or pid"
                )));
            }
            if q.nanos() < 0 {
                return Err(ConfigError(format!(
                    "{field}.{k}: must not be negative, got {q}"
                )));
            }
        }
    }
    for (i, e) in cfg.enforce_node_allocatable.iter().enumerate() {
        if e != "pods" && e != "none" {
            return Err(ConfigError(format!(
                "enforceNodeAllocatable[{i}]: expected \"pods\" or \"none\" (no separate \
                 system-reserved/kube-reserved cgroups here), got {e:?}"
            )));
        }
    }
    let name = &cfg.pods_cgroup_name;
    if name.is_empty() || name.contains(['/', '-', '.']) {
        return Err(ConfigError(format!(
            "podsCgroupName: expected one cgroup name without '/', '-' or '.', got {name:?}"
        )));
    }
    if !cfg.cgroup_root.starts_with('/') || cfg.cgroup_root.split('/').any(|p| p == "..") {
        return Err(ConfigError(format!(
            "cgroupRoot: expected an absolute cgroup path without '..', got {:?}",
            cfg.cgroup_root
        )));
    }
    Ok(())
}

/// The sum of a resource over both reservations, in the quantity's base unit (bytes,
/// pids) or in millis for `cpu`.
pub fn reserved(cfg: &Config, resource: &str) -> i64 {
    [&cfg.system_reserved, &cfg.kube_reserved]
        .iter()
        .filter_map(|m| m.get(resource))
        .map(|q| {
            if resource == "cpu" {
                q.milli_value()
            } else {
                q.value()
            }
        })
        .fold(0i64, i64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sums() {
        let c = Config::parse(
            r#"{"cgroupDriver":"systemd","systemReserved":{"memory":"32Mi","cpu":"100m"},
                "kubeReserved":{"memory":"16Mi","pid":"100"}}"#,
        )
        .unwrap();
        assert_eq!(c.cgroup_driver, CgroupDriver::Systemd);
        assert_eq!(reserved(&c, "memory"), 48 << 20);
        assert_eq!(reserved(&c, "cpu"), 100);
        assert_eq!(reserved(&c, "pid"), 100);
        assert_eq!(Config::parse(&c.to_pretty_json()).unwrap(), c);
    }

    #[test]
    fn bad_values_name_the_field() {
        let e = Config::parse(r#"{"systemReserved":{"disk":"1Gi"}}"#).unwrap_err();
        assert!(
            e.0.starts_with("systemReserved.disk: unknown resource"),
            "{e}"
        );
        let e =
            Config::parse(r#"{"enforceNodeAllocatable":["pods","kube-reserved"]}"#).unwrap_err();
        assert!(e.0.starts_with("enforceNodeAllocatable[1]: "), "{e}");
        let e = Config::parse(r#"{"podsCgroupName":"a/b"}"#).unwrap_err();
        assert!(e.0.starts_with("podsCgroupName: "), "{e}");
        let e = Config::parse(r#"{"cgroupRoot":"/x/../y"}"#).unwrap_err();
        assert!(e.0.starts_with("cgroupRoot: "), "{e}");
        let e = Config::parse(r#"{"cgroupDriver":"cgroupv2"}"#).unwrap_err();
        assert!(e.0.starts_with("cgroupDriver: "), "{e}");
    }
}
