//! The environment variables kubelet gives a container for the Services it may reach:
//! `{NAME}_SERVICE_HOST`, `{NAME}_SERVICE_PORT` (and one per named port), and the
//! Docker-link variables `{NAME}_PORT`, `{NAME}_PORT_{PORT}_{PROTO}` with `_PROTO`,
//! `_PORT`, `_ADDR`. Which Services: the master service (`kubernetes` in `default`)
//! always, and with `enableServiceLinks` (the default) every Service of the pod's
//! namespace; a Service without a cluster IP (headless, `None`) gives none. The
//! variables come after the container's own (which win on a clash), and `$(VAR)` in
//! the container's env, command and args may refer to them.

use serde::{Deserialize, Serialize};

/// The master service's namespace and name (kubelet's).
pub const MASTER_NAMESPACE: &str = "default";
/// See [`MASTER_NAMESPACE`].
pub const MASTER_NAME: &str = "kubernetes";

/// What a pod's environment needs of one Service.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceEntry {
    /// The Service's name.
    pub name: String,
    /// `spec.clusterIP` (or, for the master service, the address the node is told to
    /// give pods instead).
    #[serde(rename = "clusterIP")]
    pub cluster_ip: String,
    /// `spec.ports`, in order.
    pub ports: Vec<ServicePort>,
}

/// One of a Service's ports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServicePort {
    /// Its name (only the first port may have none).
    pub name: String,
    /// The port number.
    pub port: i32,
    /// `TCP` when empty, `UDP`, `SCTP`.
    pub protocol: String,
}

impl ServiceEntry {
    /// Whether the Service has a cluster IP (not headless).
    pub fn has_ip(&self) -> bool {
        !self.cluster_ip.is_empty() && self.cluster_ip != "None"
    }
}

/// The variables of `services` (already chosen for the pod), sorted by name so that a
/// container made twice gets the same environment.
pub fn env_vars(services: &[ServiceEntry]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in services.iter().filter(|s| s.has_ip()) {
        let Some(first) = s.ports.first() else {
            continue;
        };
        let prefix = var_name(&s.name);
        out.push((format!("{prefix}_SERVICE_HOST"), s.cluster_ip.clone()));
        let port_var = format!("{prefix}_SERVICE_PORT");
        out.push((port_var.clone(), first.port.to_string()));
        for p in s.ports.iter().filter(|p| !p.name.is_empty()) {
            out.push((
                format!("{port_var}_{}", var_name(&p.name)),
                p.port.to_string(),
            ));
        }
        out.extend(link_vars(&prefix, s));
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// Docker's link variables of `s` (its first port also as `{NAME}_PORT`).
fn link_vars(prefix: &str, s: &ServiceEntry) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, p) in s.ports.iter().enumerate() {
        let proto = if p.protocol.is_empty() {
            "TCP".to_string()
        } else {
            p.protocol.to_ascii_uppercase()
        };
        let lower = proto.to_ascii_lowercase();
        let url = format!("{lower}://{}", join_host_port(&s.cluster_ip, p.port));
        if i == 0 {
            out.push((format!("{prefix}_PORT"), url.clone()));
        }
        let pp = format!("{prefix}_PORT_{}_{proto}", p.port);
        out.push((format!("{pp}_PROTO"), lower));
        out.push((format!("{pp}_PORT"), p.port.to_string()));
        out.push((format!("{pp}_ADDR"), s.cluster_ip.clone()));
        out.push((pp, url));
    }
    out
}

/// `host:port`, with an IPv6 address in brackets (Go's `net.JoinHostPort`).
fn join_host_port(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A Service or port name as a variable name: upper case, `-` as `_`.
fn var_name(name: &str) -> String {
    name.to_ascii_uppercase().replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(name: &str, ip: &str, ports: &[(&str, i32, &str)]) -> ServiceEntry {
        ServiceEntry {
            name: name.into(),
            cluster_ip: ip.into(),
            ports: ports
                .iter()
                .map(|(n, port, proto)| ServicePort {
                    name: n.to_string(),
                    port: *port,
                    protocol: proto.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn variables_as_kubelet_makes_them() {
        let vars = env_vars(&[
            svc("kubernetes", "10.96.0.1", &[("https", 443, "TCP")]),
            svc("fooservice", "10.96.0.9", &[("", 8765, "")]),
            svc(
                "my-db",
                "fd00::5",
                &[("pg", 5432, "TCP"), ("stats", 9187, "UDP")],
            ),
            svc("headless", "None", &[("", 80, "TCP")]),
            svc("noports", "10.96.0.7", &[]),
        ]);
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("KUBERNETES_SERVICE_HOST"), Some("10.96.0.1"));
        assert_eq!(get("KUBERNETES_SERVICE_PORT"), Some("443"));
        assert_eq!(get("KUBERNETES_SERVICE_PORT_HTTPS"), Some("443"));
        assert_eq!(get("KUBERNETES_PORT"), Some("tcp://10.96.0.1:443"));
        assert_eq!(get("KUBERNETES_PORT_443_TCP"), Some("tcp://10.96.0.1:443"));
        assert_eq!(get("KUBERNETES_PORT_443_TCP_PROTO"), Some("tcp"));
        assert_eq!(get("KUBERNETES_PORT_443_TCP_PORT"), Some("443"));
        assert_eq!(get("KUBERNETES_PORT_443_TCP_ADDR"), Some("10.96.0.1"));
        assert_eq!(get("FOOSERVICE_SERVICE_HOST"), Some("10.96.0.9"));
        assert_eq!(get("FOOSERVICE_SERVICE_PORT"), Some("8765"));
        assert_eq!(
            get("FOOSERVICE_PORT_8765_TCP"),
            Some("tcp://10.96.0.9:8765")
        );
        assert_eq!(get("MY_DB_SERVICE_PORT_STATS"), Some("9187"));
        assert_eq!(get("MY_DB_PORT"), Some("tcp://[fd00::5]:5432"));
        assert_eq!(get("MY_DB_PORT_9187_UDP"), Some("udp://[fd00::5]:9187"));
        assert_eq!(get("HEADLESS_SERVICE_HOST"), None);
        assert_eq!(get("NOPORTS_SERVICE_HOST"), None);
        let mut sorted = vars.clone();
        sorted.sort();
        assert_eq!(vars, sorted);
    }
}
