//! The `apiServer` section: joining a Kubernetes cluster as a Node (feature `uplink`).
//! Only the section's own fields are checked here; the kubeconfig file is read by
//! `check-config` and when the agent starts.

use super::{duration, format_duration, ConfigError};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// `apiServer`: joining a Kubernetes cluster as a Node, with kubelet's names and
/// defaults for what they share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ApiServerConfig {
    /// A kubeconfig file as kubectl or kubeadm write it: the API server, its CA and
    /// the node's credentials (a client certificate for `system:node:NAME`).
    pub kubeconfig: PathBuf,
    /// The Node's name; empty means the top-level `nodeName`, else the host name.
    pub node_name: String,
    /// Labels the Node is registered with, besides kubelet's own
    /// (`kubernetes.io/hostname`, `kubernetes.io/os`, `kubernetes.io/arch`).
    pub node_labels: std::collections::BTreeMap<String, String>,
    /// Taints the Node is registered with.
    pub register_with_taints: Vec<Taint>,
    /// The node Lease's duration; it is renewed every 60 % of it.
    pub node_lease_duration_seconds: u32,
    /// How often the node's status is computed (and sent when it changed).
    #[serde(with = "duration")]
    pub node_status_update_frequency: Duration,
    /// How often the node's status is sent even when nothing changed.
    #[serde(with = "duration")]
    pub node_status_report_frequency: Duration,
    /// kubelet's `port`: where the kubelet API (`/containerLogs`, ...) listens; 0: off.
    pub port: u16,
    /// kubelet's `address`: the IP the kubelet API binds.
    pub address: String,
    /// kubelet's `tlsCertFile`: the kubelet API's serving certificate (PEM chain).
    /// Without it (and `tlsPrivateKeyFile`) the kubelet API does not serve.
    pub tls_cert_file: PathBuf,
    /// kubelet's `tlsPrivateKeyFile`: its key (PEM).
    pub tls_private_key_file: PathBuf,
    /// kubelet's `serverTLSBootstrap`: without `tlsCertFile`, request the serving
    /// certificate from the cluster (a CSR for signer `kubernetes.io/kubelet-serving`).
    #[serde(rename = "serverTLSBootstrap")]
    pub server_tls_bootstrap: bool,
    /// kubelet's `authentication`: who may call the kubelet API.
    pub authentication: Authentication,
    /// kubelet's `streamingConnectionIdleTimeout`: an exec, attach or port-forward
    /// stream with no byte in either direction for this long is closed.
    #[serde(with = "duration")]
    pub streaming_connection_idle_timeout: Duration,
    /// Long-lived requests open at once (exec, attach and port-forward streams, followed
    /// logs); one more is answered 429.
    pub max_streams: u32,
    /// Tell pods the API server's address from the node's kubeconfig as
    /// `KUBERNETES_SERVICE_HOST`/`_PORT` (and the master service's link variables)
    /// instead of the `kubernetes` Service's cluster IP: for gateways that run no
    /// service proxy, where the cluster IP leads nowhere. Off by default (kubelet's
    /// behaviour, which the conformance suite checks).
    pub kubernetes_service_from_kubeconfig: bool,
    /// Keep the cluster's secrets the pods reference in the state directory (0600), so
    /// the pods start with them after a reboot without the uplink (the default on a
    /// gateway); false holds them in memory only, as kubelet does: nothing secret rests
    /// on the flash if the device is stolen, but after an offline reboot a pod that needs
    /// a secret waits for the uplink.
    pub cache_secrets: bool,
}

/// The most `maxStreams` may be. Streams are counted apart from the kubelet API's
/// connection bound (`kubelet_api::MAX_CONNECTIONS`, which short requests keep), so
/// this only bounds memory: an open stream costs the agent a few KiB while quiet and at
/// most two relay chunks plus TLS records while it moves (docs/measurements.md); 32 of
/// them stay within the 4 MiB target's headroom.
pub const MAX_STREAMS_LIMIT: u32 = 32;

/// kubelet's `authentication` (only `x509`: anonymous requests are refused).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Authentication {
    /// Client certificates.
    pub x509: X509Authentication,
}

/// kubelet's `authentication.x509`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct X509Authentication {
    /// CA bundle (PEM) client certificates must chain to; empty: the CA of the node's
    /// kubeconfig (the cluster's).
    #[serde(rename = "clientCAFile")]
    pub client_ca_file: PathBuf,
}

/// A Node taint, as in `v1.Taint`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Taint {
    /// The taint's key.
    pub key: String,
    /// The taint's value (may be empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

impl Default for ApiServerConfig {
    fn default() -> Self {
        // kubelet's defaults.
        ApiServerConfig {
            kubeconfig: PathBuf::new(),
            node_name: String::new(),
            node_labels: Default::default(),
            register_with_taints: Vec::new(),
            node_lease_duration_seconds: 40,
            node_status_update_frequency: Duration::from_secs(10),
            node_status_report_frequency: Duration::from_secs(300),
            port: 10250,
            address: "0.0.0.0".into(),
            tls_cert_file: PathBuf::new(),
            tls_private_key_file: PathBuf::new(),
            server_tls_bootstrap: false,
            authentication: Authentication::default(),
            streaming_connection_idle_timeout: Duration::from_secs(4 * 3600),
            max_streams: 8,
            kubernetes_service_from_kubeconfig: false,
            cache_secrets: true,
        }
    }
}

impl ApiServerConfig {
    /// Checks the section's own fields (`top_node_name`: the config's `nodeName`).
    /// The kubeconfig file itself is read by `check-config` and at the agent's start.
    pub(super) fn validate(&self, top_node_name: &str) -> Result<(), ConfigError> {
        let err = |field: &str, msg: String| Err(ConfigError(format!("apiServer.{field}: {msg}")));
        if self.kubeconfig.as_os_str().is_empty() {
            return err(
                "kubeconfig",
                "required: the path of the node's kubeconfig file".into(),
            );
        }
        if !self.kubeconfig.is_absolute() {
            return err(
                "kubeconfig",
                format!("must be an absolute path, got {:?}", self.kubeconfig),
            );
        }
        if !self.node_name.is_empty() {
            if let Err(e) = crate::model::validate::dns1123_subdomain(&self.node_name) {
                return err("nodeName", e.to_string());
            }
            if !top_node_name.is_empty() && top_node_name != self.node_name {
                return err(
                    "nodeName",
                    format!(
                        "{:?} differs from the top-level nodeName {top_node_name:?}; set one \
                         (pods see the node's name through spec.nodeName)",
                        self.node_name
                    ),
                );
            }
        }
        for (k, v) in &self.node_labels {
            if !crate::model::validate::is_qualified_name(k) {
                return err(
                    &format!("nodeLabels[{k}]"),
                    "key must be a qualified name like example.com/zone".into(),
                );
            }
            if !crate::model::validate::is_label_value(v) {
                return err(
                    &format!("nodeLabels[{k}]"),
                    format!("value must be at most 63 letters, digits, '-', '_' or '.', got {v:?}"),
                );
            }
            if !kubelet_may_set(k) {
                return err(
                    &format!("nodeLabels[{k}]"),
                    "a node may set labels under kubernetes.io or k8s.io only in \
                     kubelet.kubernetes.io/, node.kubernetes.io/ or kubelet's own set \
                     (NodeRestriction refuses the others)"
                        .into(),
                );
            }
        }
        for (i, t) in self.register_with_taints.iter().enumerate() {
            if !crate::model::validate::is_qualified_name(&t.key) {
                return err(
                    &format!("registerWithTaints[{i}].key"),
                    format!("must be a qualified name, got {:?}", t.key),
                );
            }
            if !crate::model::validate::is_label_value(&t.value) {
                return err(
                    &format!("registerWithTaints[{i}].value"),
                    format!("must be a label value, got {:?}", t.value),
                );
            }
            if !matches!(
                t.effect.as_str(),
                "NoSchedule" | "PreferNoSchedule" | "NoExecute"
            ) {
                return err(
                    &format!("registerWithTaints[{i}].effect"),
                    format!(
                        "must be NoSchedule, PreferNoSchedule or NoExecute, got {:?}",
                        t.effect
                    ),
                );
            }
        }
        self.validate_kubelet_api()?;
        if self.node_lease_duration_seconds == 0 {
            return err("nodeLeaseDurationSeconds", "must be at least 1".into());
        }
        for (field, d) in [
            (
                "nodeStatusUpdateFrequency",
                self.node_status_update_frequency,
            ),
            (
                "nodeStatusReportFrequency",
                self.node_status_report_frequency,
            ),
        ] {
            if d < Duration::from_secs(1) {
                return err(
                    field,
                    format!("must be at least 1s, got {}", format_duration(d)),
                );
            }
        }
        Ok(())
    }
}

impl ApiServerConfig {
    /// The kubelet API's keys: an IP to bind, the cert and key files as a pair, absolute.
    fn validate_kubelet_api(&self) -> Result<(), ConfigError> {
        let err = |field: &str, msg: String| Err(ConfigError(format!("apiServer.{field}: {msg}")));
        if self.address.parse::<std::net::IpAddr>().is_err() {
            return err(
                "address",
                format!(
                    "expected an IP address (e.g. 0.0.0.0), got {:?}",
                    self.address
                ),
            );
        }
        let files = [
            ("tlsCertFile", &self.tls_cert_file),
            ("tlsPrivateKeyFile", &self.tls_private_key_file),
            (
                "authentication.x509.clientCAFile",
                &self.authentication.x509.client_ca_file,
            ),
        ];
        for (field, path) in files {
            if !path.as_os_str().is_empty() && !path.is_absolute() {
                return err(field, format!("must be an absolute path, got {path:?}"));
            }
        }
        if self.tls_cert_file.as_os_str().is_empty()
            != self.tls_private_key_file.as_os_str().is_empty()
        {
            return err(
                "tlsCertFile",
                "tlsCertFile and tlsPrivateKeyFile are set together or not at all".into(),
            );
        }
        if !(1..=MAX_STREAMS_LIMIT).contains(&self.max_streams) {
            return err(
                "maxStreams",
                format!(
                    "expected 1 to {MAX_STREAMS_LIMIT} (concurrent exec, attach and \
                     port-forward streams and followed logs), got {}",
                    self.max_streams
                ),
            );
        }
        if self.streaming_connection_idle_timeout < Duration::from_secs(1) {
            return err(
                "streamingConnectionIdleTimeout",
                format!(
                    "must be at least 1s, got {}",
                    format_duration(self.streaming_connection_idle_timeout)
                ),
            );
        }
        Ok(())
    }

    /// The kubelet API's address, when it serves (a port and a certificate: files, or
    /// one to request).
    pub fn kubelet_api_address(&self) -> Option<std::net::SocketAddr> {
        let ip = self.address.parse().ok()?;
        let cert = !self.tls_cert_file.as_os_str().is_empty() || self.server_tls_bootstrap;
        let serve = self.port != 0 && cert;
        serve.then(|| std::net::SocketAddr::new(ip, self.port))
    }
}

/// Labels under kubernetes.io / k8s.io a kubelet may set on its own Node (kubelet's
/// `IsKubeletLabel`, v1.20); any other key outside those namespaces is the user's.
fn kubelet_may_set(key: &str) -> bool {
    const OWN: [&str; 11] = [
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    ];
    let Some((prefix, _)) = key.split_once('/') else {
        return true;
    };
    let under = |domain: &str| prefix == domain || prefix.ends_with(&format!(".{domain}"));
    if !under("kubernetes.io") && !under("k8s.io") {
        return true;
    }
    OWN.contains(&key) || under("kubelet.kubernetes.io") || under("node.kubernetes.io")
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::time::Duration;

    #[test]
    fn api_server_section_has_kubelets_defaults() {
        let c = Config::parse(r#"{"apiServer":{"kubeconfig":"/etc/tinylet/kubelet.conf"}}"#);
        if !cfg!(feature = "uplink") {
            let e = c.unwrap_err();
            assert!(
                e.0.starts_with("apiServer: this tinylet was built without"),
                "{e}"
            );
            return;
        }
        let c = c.unwrap();
        let api = c.api_server.as_ref().unwrap();
        assert_eq!(api.node_lease_duration_seconds, 40);
        assert_eq!(api.node_status_update_frequency, Duration::from_secs(10));
        assert_eq!(api.node_status_report_frequency, Duration::from_secs(300));
        assert_eq!(
            api.streaming_connection_idle_timeout,
            Duration::from_secs(14400)
        );
        assert_eq!(api.max_streams, 8);
        assert!(api.node_labels.is_empty() && api.register_with_taints.is_empty());
        assert_eq!(Config::parse(&c.to_pretty_json()).unwrap(), c);
        // Absent means local-only, and check-config's JSON does not mention it.
        assert_eq!(Config::parse("{}").unwrap().api_server, None);
        assert!(!Config::default().to_pretty_json().contains("apiServer"));
    }

    #[test]
    fn api_server_fields_are_checked() {
        let cases = [
            (r#"{}"#, "apiServer.kubeconfig: required"),
            (
                r#"{"kubeconfig":"rel.conf"}"#,
                "apiServer.kubeconfig: must be an absolute path",
            ),
            (
                r#"{"kubeconfig":"/k","nodeName":"Bad_Name"}"#,
                "apiServer.nodeName",
            ),
            (
                r#"{"kubeconfig":"/k","nodeLabels":{"a b":"x"}}"#,
                "apiServer.nodeLabels[a b]",
            ),
            (
                r#"{"kubeconfig":"/k","nodeLabels":{"node-role.kubernetes.io/edge":""}}"#,
                "apiServer.nodeLabels[node-role.kubernetes.io/edge]: a node may set",
            ),
            (
                r#"{"kubeconfig":"/k","nodeLabels":{"node-restriction.kubernetes.io/a":"b"}}"#,
                "NodeRestriction refuses",
            ),
            (
                r#"{"kubeconfig":"/k","registerWithTaints":[{"key":"k","effect":"Sometimes"}]}"#,
                "registerWithTaints[0].effect",
            ),
            (
                r#"{"kubeconfig":"/k","nodeLeaseDurationSeconds":0}"#,
                "nodeLeaseDurationSeconds",
            ),
            (
                r#"{"kubeconfig":"/k","nodeStatusUpdateFrequency":"10ms"}"#,
                "nodeStatusUpdateFrequency",
            ),
            (
                r#"{"kubeconfig":"/k","nodeStatusReportFrequency":"5 min"}"#,
                "apiServer.nodeStatusReportFrequency: expected a duration",
            ),
            (
                r#"{"kubeconfig":"/k","maxStreams":0}"#,
                "apiServer.maxStreams: expected 1 to 32",
            ),
            (
                r#"{"kubeconfig":"/k","maxStreams":33}"#,
                "apiServer.maxStreams: expected 1 to 32",
            ),
            (
                r#"{"kubeconfig":"/k","streamingConnectionIdleTimeout":"0s"}"#,
                "apiServer.streamingConnectionIdleTimeout: must be at least 1s",
            ),
            (
                r#"{"kubeconfig":"/k","nodeLease":40}"#,
                "apiServer.nodeLease: unknown field",
            ),
        ];
        for (section, want) in cases {
            let e = Config::parse(&format!(r#"{{"apiServer":{section}}}"#)).unwrap_err();
            assert!(e.0.contains(want), "{section}: {e}");
        }
        let e = Config::parse(r#"{"nodeName":"a","apiServer":{"kubeconfig":"/k","nodeName":"b"}}"#)
            .unwrap_err();
        assert!(e.0.contains("differs from the top-level nodeName"), "{e}");
        let labels = r#"{"kubeconfig":"/k","nodeLabels":{"example.com/zone":"a",
            "node.kubernetes.io/role":"gw","x.kubelet.kubernetes.io/y":"1",
            "topology.kubernetes.io/zone":"z1","plain":"p"}}"#;
        Config::parse(&format!(r#"{{"apiServer":{labels}}}"#)).unwrap();
        let c = Config::parse(r#"{"apiServer":{"kubeconfig":"/k","nodeName":"gw-7"}}"#).unwrap();
        assert_eq!(c.effective_node_name(), "gw-7");
        let c = Config::parse(r#"{"nodeName":"gw-8","apiServer":{"kubeconfig":"/k"}}"#).unwrap();
        assert_eq!(c.effective_node_name(), "gw-8");
    }
}
