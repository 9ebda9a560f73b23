// About 500 lines: the config, its defaults, loading and checks (~400), then its tests.
//! The agent's configuration: one JSON file with camelCase keys in kubelet's style.
//!
//! Every field has a default, so `{}` is a valid config. Durations are strings in Go's
//! style (`"1s"`, `"500ms"`, `"2m0s"`) or a number of seconds; byte sizes are Kubernetes
//! quantities (`"10Mi"`, `"1G"`) or a plain number of bytes. Unknown keys are refused, so
//! a typo in a board config is an error rather than a silently ignored setting.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod eviction;
pub mod host_paths;
mod node_resources;
pub mod pod_policy;
mod units;
pub use eviction::{eviction_threshold, soft_threshold, Threshold, SIGNALS};
pub use node_resources::{reserved, CgroupDriver, Reserved};
use units::{bytes, duration};
pub use units::{format_duration, format_size, parse_duration, parse_size, BadDuration, BadSize};

#[cfg(feature = "uplink")]
mod api_server;
#[cfg(feature = "uplink")]
pub use api_server::{ApiServerConfig, Taint};

/// Without the `uplink` feature an `apiServer` section is read only to be refused
/// (see [`Config::validate`]), so the local-only binary carries none of its code.
#[cfg(not(feature = "uplink"))]
#[derive(Debug, Clone, PartialEq)]
pub struct ApiServerConfig;

#[cfg(not(feature = "uplink"))]
impl<'de> Deserialize<'de> for ApiServerConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| ApiServerConfig)
    }
}

#[cfg(not(feature = "uplink"))]
impl Serialize for ApiServerConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

/// Where the agent looks for its config when `--config` is not given.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/tinylet/config.json";

/// A config file larger than this is refused unread (real ones are a few KiB).
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// The agent's config (JSON, camelCase; every field has a default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Config {
    /// The node's name, used for `spec.nodeName` and the fieldRef `spec.nodeName`.
    pub node_name: String,
    /// CRI runtime service endpoint, `unix:///path` or a bare path.
    pub runtime_endpoint: String,
    /// CRI image service endpoint; empty means the runtime endpoint.
    pub image_endpoint: String,
    /// Persistent state: pod cache, status files, image last-use times.
    pub state_dir: PathBuf,
    /// Read-only manifest directories (pods baked into firmware).
    pub manifest_dirs: Vec<PathBuf>,
    /// Root of the CRI log directories (`ROOT/NS_NAME_UID/CONTAINER/N.log`).
    pub pod_logs_dir: PathBuf,
    /// Root of per-pod volume data (emptyDir, projected configMap/secret files).
    pub pods_dir: PathBuf,
    /// How often the PLEG relists the runtime.
    #[serde(with = "duration")]
    pub pleg_period: Duration,
    /// Deadline of each CRI call, except image pulls.
    #[serde(with = "duration")]
    pub runtime_request_timeout: Duration,
    /// Deadline of one PullImage call.
    #[serde(with = "duration")]
    pub image_pull_timeout: Duration,
    /// At most this many RunPodSandbox/CreateContainer/StartContainer calls in flight
    /// at once, and as many PullImage calls: a small board's runtime thrashes when
    /// asked for many at once (after a reboot) and every call outlasts its deadline.
    pub max_parallel_runtime_operations: u32,
    /// How long a pull that the pull policy asks for may keep a container waiting when
    /// a local copy of its image exists: past it the local copy runs (`OfflineImage`)
    /// and the pull goes on in the background with `imagePullTimeout`. 0: the local
    /// copy runs at once.
    #[serde(with = "duration")]
    pub image_pull_fallback_timeout: Duration,
    /// The sandbox (pause) image; never garbage collected.
    pub sandbox_image: String,
    /// hostPath volumes (and claims bound to host directories) are allowed only at or
    /// below one of these prefixes; each a path or an object ([`host_paths`]).
    pub allowed_host_paths: Vec<host_paths::HostPathPrefix>,
    /// kubelet's `maxPods`: the most pods (local and cluster, not finished) the node
    /// admits, and the `pods` capacity the Node advertises.
    pub max_pods: u32,
    /// The owner's pod policy: a Pod Security Standards level per source, allowances.
    pub pod_policy: pod_policy::PodPolicy,
    /// kubelet's `allowedUnsafeSysctls`: sysctls (or prefixes ending in `*`) pods may set
    /// beyond kubelet's safe set; only namespaced ones (`kernel.shm*`, `kernel.msg*`,
    /// `kernel.sem`, `fs.mqueue.*`, `net.*`). For local pods, and cluster pods at
    /// `privileged`, unless `podPolicy.allowedUnsafeSysctls` sets their source's own.
    pub allowed_unsafe_sysctls: Vec<String>,
    /// kubelet's `seccompDefault`: containers that set no seccomp profile get the
    /// runtime's default one (else they run unconfined). On by default here: a
    /// gateway's pods are to be treated as hostile.
    pub seccomp_default: bool,
    /// Where `Localhost` seccomp profiles live (kubelet's `<root-dir>/seccomp`).
    pub seccomp_profile_root: PathBuf,
    /// Host resolv.conf used for dnsPolicy ClusterFirst/Default.
    pub resolv_conf: PathBuf,
    /// kubelet's `clusterDomain`: a pod with a `subdomain` is
    /// `HOSTNAME.SUBDOMAIN.NAMESPACE.svc.CLUSTERDOMAIN` in its managed `/etc/hosts`.
    pub cluster_domain: String,
    /// kubelet's `nodeIP`: the address the node reports (`InternalIP`, `status.hostIP`,
    /// hostNetwork pods' IP). Empty: the address of the interface of the default route.
    /// It must be an address of one of this machine's interfaces (checked at start).
    #[serde(rename = "nodeIP")]
    pub node_ip: String,
    /// Image garbage collection.
    #[serde(rename = "imageGC")]
    pub image_gc: ImageGcConfig,
    /// Container garbage collection.
    #[serde(rename = "containerGC")]
    pub container_gc: ContainerGcConfig,
    /// A container's CRI log is rotated when it reaches this size.
    #[serde(with = "bytes")]
    pub container_log_max_size: u64,
    /// At most this many log files (current + rotated) per container.
    pub container_log_max_files: u32,
    /// Optional read-only status endpoint (`/healthz`, `/pods`, `/metrics`) at
    /// `IP:PORT`, e.g. `127.0.0.1:10255`; empty disables it. Loopback only unless
    /// `statusAllowNonLoopback` is set.
    pub status_address: String,
    /// Lets `statusAddress` be a non-loopback address (the endpoint has no
    /// authentication: anyone who reaches it sees the pods and metrics).
    pub status_allow_non_loopback: bool,
    /// Default log filter when RUST_LOG is not set (`error`..`trace`).
    pub log_level: String,
    /// Give back the pages of the agent's own binary it no longer runs (30 s after the
    /// start, then every minute; see `code_pages`): about 1 MiB less resident at a
    /// steady state, at ~0.5 ms a minute. Off keeps every page of code it ran mapped.
    pub code_page_trim: bool,
    /// The runtime's cgroup driver (`cgroupfs` or `systemd`); must match runc's
    /// `SystemdCgroup` option.
    pub cgroup_driver: CgroupDriver,
    /// kubelet's `cgroupsPerQOS`: pod cgroups under QoS tiers; false leaves pods in the
    /// runtime's default cgroup (and enforces nothing).
    #[serde(rename = "cgroupsPerQOS")]
    pub cgroups_per_qos: bool,
    /// The cgroup the pods' parent is made under (kubelet's `cgroupRoot`).
    pub cgroup_root: String,
    /// The name of the pods' parent cgroup (kubelet's fixed `kubepods`).
    pub pods_cgroup_name: String,
    /// Held back for the system (firmware) from pods: `cpu`, `memory`, `pid`.
    pub system_reserved: Reserved,
    /// Held back for the agent and the runtime from pods: `cpu`, `memory`, `pid`.
    pub kube_reserved: Reserved,
    /// `["pods"]`: the pods' parent cgroup is limited to node allocatable; `["none"]`
    /// or `[]`: allocatable is only reported.
    pub enforce_node_allocatable: Vec<String>,
    /// kubelet's hard eviction thresholds by signal (`memory.available`,
    /// `nodefs.available`, `nodefs.inodesFree`, `imagefs.available`,
    /// `imagefs.inodesFree`, `pid.available`): a quantity or a percentage of capacity.
    pub eviction_hard: std::collections::BTreeMap<String, String>,
    /// Soft thresholds: met only once the signal stayed below for its grace period.
    pub eviction_soft: std::collections::BTreeMap<String, String>,
    /// The grace period of each soft threshold (a duration).
    pub eviction_soft_grace_period: std::collections::BTreeMap<String, String>,
    /// The most seconds a pod evicted on a soft threshold is given to stop.
    pub eviction_max_pod_grace_period: i64,
    /// How long a pressure condition stays true after its signal cleared.
    #[serde(with = "duration")]
    pub eviction_pressure_transition_period: Duration,
    /// The cluster uplink; absent means local-only (pods from `apply` and manifest
    /// directories only). Needs a build with the `uplink` feature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server: Option<ApiServerConfig>,
}

/// When and how images are garbage-collected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ImageGcConfig {
    /// Above this percentage of the image filesystem, GC runs. 100 disables it.
    pub high_threshold_percent: u8,
    /// GC frees images until usage is below this percentage.
    pub low_threshold_percent: u8,
    /// Absolute budget for image bytes; 0 means no absolute budget.
    #[serde(with = "bytes")]
    pub max_bytes: u64,
    /// Images younger than this (since first seen unused) are never removed.
    #[serde(with = "duration")]
    pub min_age: Duration,
    /// How often an image GC pass runs.
    #[serde(with = "duration")]
    pub period: Duration,
    /// Images that are never removed (besides the sandbox image and images in use).
    pub pinned_images: Vec<String>,
}

/// When and how dead containers are garbage-collected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ContainerGcConfig {
    /// How often a container GC pass runs.
    #[serde(with = "duration")]
    pub period: Duration,
    /// Dead containers younger than this are kept.
    #[serde(with = "duration")]
    pub min_age: Duration,
    /// Dead containers kept per (pod, container name); the newest are kept.
    pub max_per_pod_container: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            node_name: String::new(),
            runtime_endpoint: "unix:///run/containerd/containerd.sock".into(),
            image_endpoint: String::new(),
            state_dir: "/var/lib/tinylet".into(),
            manifest_dirs: vec!["/etc/tinylet/manifests".into()],
            pod_logs_dir: "/var/log/pods".into(),
            pods_dir: "/var/lib/tinylet/pods".into(),
            pleg_period: Duration::from_secs(1),
            runtime_request_timeout: Duration::from_secs(120),
            image_pull_timeout: Duration::from_secs(600),
            max_parallel_runtime_operations: 8,
            image_pull_fallback_timeout: Duration::from_secs(3),
            sandbox_image: "registry.k8s.io/pause:3.9".into(),
            allowed_host_paths: Vec::new(),
            max_pods: 110,
            pod_policy: pod_policy::PodPolicy::default(),
            allowed_unsafe_sysctls: Vec::new(),
            seccomp_default: true,
            seccomp_profile_root: "/var/lib/kubelet/seccomp".into(),
            resolv_conf: "/etc/resolv.conf".into(),
            cluster_domain: "cluster.local".into(),
            node_ip: String::new(),
            image_gc: ImageGcConfig::default(),
            container_gc: ContainerGcConfig::default(),
            container_log_max_size: 10 << 20,
            container_log_max_files: 5,
            status_address: String::new(),
            status_allow_non_loopback: false,
            log_level: "info".into(),
            code_page_trim: true,
            cgroup_driver: CgroupDriver::default(),
            cgroups_per_qos: true,
            cgroup_root: "/".into(),
            pods_cgroup_name: "kubepods".into(),
            system_reserved: Reserved::new(),
            kube_reserved: Reserved::new(),
            enforce_node_allocatable: vec!["pods".into()],
            eviction_hard: eviction::default_eviction_hard(),
            eviction_soft: Default::default(),
            eviction_soft_grace_period: Default::default(),
            eviction_max_pod_grace_period: 0,
            eviction_pressure_transition_period: eviction::DEFAULT_TRANSITION_PERIOD,
            api_server: None,
        }
    }
}

impl Default for ImageGcConfig {
    fn default() -> Self {
        // kubelet's defaults.
        ImageGcConfig {
            high_threshold_percent: 85,
            low_threshold_percent: 80,
            max_bytes: 0,
            min_age: Duration::from_secs(120),
            period: Duration::from_secs(300),
            pinned_images: Vec::new(),
        }
    }
}

impl Default for ContainerGcConfig {
    fn default() -> Self {
        ContainerGcConfig {
            period: Duration::from_secs(60),
            min_age: Duration::ZERO,
            max_per_pod_container: 1,
        }
    }
}

/// A config that could not be read or does not make sense; names the file and field.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = crate::bounded::read_to_string(path, MAX_CONFIG_BYTES)
            .map_err(|e| ConfigError(format!("{}: cannot read: {e}", path.display())))?;
        Self::parse(&text).map_err(|e| ConfigError(format!("{}: {}", path.display(), e.0)))
    }

    /// Like [`Config::load`], but a missing file at the default path means "all defaults".
    pub fn load_or_default(path: &Path, explicit: bool) -> Result<Config, ConfigError> {
        if !explicit && !path.exists() {
            return Ok(Config::default());
        }
        Self::load(path)
    }

    /// Parses and validates config JSON.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let cfg: Config =
            // from_slice, not from_str: one deserializer per type in the binary (the
            // messages are the same for text that is UTF-8 already).
            serde_json::from_slice(text.as_bytes())
                .map_err(|e| ConfigError(describe_json_error(text, &e)))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks relations between fields that serde cannot.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, msg: String| Err(ConfigError(format!("{field}: {msg}")));
        if self.runtime_endpoint.is_empty() {
            return err("runtimeEndpoint", "must not be empty".into());
        }
        if !self.state_dir.is_absolute() {
            return err(
                "stateDir",
                format!("must be an absolute path, got {:?}", self.state_dir),
            );
        }
        for (i, p) in self.allowed_host_paths.iter().enumerate() {
            p.validate(i)?;
        }
        if !self.seccomp_profile_root.is_absolute() {
            return err(
                "seccompProfileRoot",
                format!("must be absolute, got {:?}", self.seccomp_profile_root),
            );
        }
        if self.max_pods == 0 {
            return err("maxPods", "must be at least 1".into());
        }
        self.pod_policy.validate()?;
        pod_policy::validate_sysctl_patterns("allowedUnsafeSysctls", &self.allowed_unsafe_sysctls)?;
        if !self.node_ip.is_empty() && self.node_ip.parse::<std::net::IpAddr>().is_err() {
            return err(
                "nodeIP",
                format!("must be an IPv4 or IPv6 address, got {:?}", self.node_ip),
            );
        }
        if crate::model::validate::dns1123_subdomain(&self.cluster_domain).is_err() {
            return err(
                "clusterDomain",
                format!(
                    "must be a DNS name (lowercase labels of letters, digits and '-',                      joined by '.'), got {:?}",
                    self.cluster_domain
                ),
            );
        }
        if self.pleg_period < Duration::from_millis(100) {
            return err(
                "plegPeriod",
                format!("must be at least 100ms, got {:?}", self.pleg_period),
            );
        }
        if self.max_parallel_runtime_operations == 0 {
            return err(
                "maxParallelRuntimeOperations",
                "must be at least 1, got 0".into(),
            );
        }
        if self.image_pull_fallback_timeout > self.image_pull_timeout {
            return err(
                "imagePullFallbackTimeout",
                format!(
                    "must not exceed imagePullTimeout ({}), got {}",
                    format_duration(self.image_pull_timeout),
                    format_duration(self.image_pull_fallback_timeout)
                ),
            );
        }
        let gc = &self.image_gc;
        if gc.high_threshold_percent > 100 {
            return err(
                "imageGC.highThresholdPercent",
                format!("must be 0-100, got {}", gc.high_threshold_percent),
            );
        }
        if gc.low_threshold_percent > gc.high_threshold_percent {
            return err(
                "imageGC.lowThresholdPercent",
                format!(
                    "must not exceed highThresholdPercent ({}), got {}",
                    gc.high_threshold_percent, gc.low_threshold_percent
                ),
            );
        }
        if self.container_log_max_files < 2 {
            return err(
                "containerLogMaxFiles",
                format!("must be at least 2, got {}", self.container_log_max_files),
            );
        }
        if self.container_log_max_size < 4096 {
            return err(
                "containerLogMaxSize",
                format!("must be at least 4Ki, got {}", self.container_log_max_size),
            );
        }
        self.status_socket_address()?;
        node_resources::validate(self)?;
        eviction::validate(self)?;
        match &self.api_server {
            #[cfg(not(feature = "uplink"))]
            Some(_) => err(
                "apiServer",
                "this tinylet was built without the cluster uplink (cargo feature \
                 `uplink`); remove the section for a local-only node, or use a build \
                 with the uplink"
                    .into(),
            ),
            #[cfg(feature = "uplink")]
            Some(api) => api.validate(&self.node_name),
            None => Ok(()),
        }
    }

    /// The node's name: `apiServer.nodeName`, else `nodeName`, else the host name in
    /// lower case (as kubelet does).
    pub fn effective_node_name(&self) -> String {
        #[cfg(feature = "uplink")]
        if let Some(api) = self.api_server.as_ref().filter(|a| !a.node_name.is_empty()) {
            return api.node_name.clone();
        }
        if !self.node_name.is_empty() {
            return self.node_name.clone();
        }
        rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .to_lowercase()
    }

    /// Where the status endpoint listens: `None` when off. A non-loopback address
    /// needs `statusAllowNonLoopback`.
    pub fn status_socket_address(&self) -> Result<Option<std::net::SocketAddr>, ConfigError> {
        if self.status_address.is_empty() {
            return Ok(None);
        }
        let addr: std::net::SocketAddr = self.status_address.parse().map_err(|_| {
            ConfigError(format!(
                "statusAddress: expected IP:PORT (e.g. 127.0.0.1:10255), got {:?}",
                self.status_address
            ))
        })?;
        if !addr.ip().is_loopback() && !self.status_allow_non_loopback {
            return Err(ConfigError(format!(
                "statusAddress: {addr} is not a loopback address; the endpoint has no \
                 authentication, so set statusAllowNonLoopback to true to serve it there"
            )));
        }
        Ok(Some(addr))
    }

    /// The image service endpoint: the runtime's unless set apart.
    pub fn image_endpoint(&self) -> &str {
        if self.image_endpoint.is_empty() {
            &self.runtime_endpoint
        } else {
            &self.image_endpoint
        }
    }

    /// Effective values as pretty JSON, for `check-config`.
    pub fn to_pretty_json(&self) -> String {
        crate::model::pretty::pretty(&serde_json::to_vec(self).unwrap_or_default())
    }
}

/// Prefixes a serde error with the dotted path of the field that caused it
/// (`imageGC.minAge: expected a duration ...`), because serde's own message names the
/// position but not the key. Syntax errors are returned unchanged.
fn describe_json_error(text: &str, err: &serde_json::Error) -> String {
    let located = match serde_json::from_slice::<serde_json::Value>(text.as_bytes()) {
        Ok(serde_json::Value::Object(obj)) => failing_field::<Config>(&obj, ""),
        _ => None,
    };
    match located {
        Some(path) => format!("{path}: {err}"),
        None => err.to_string(),
    }
}

/// Finds the first key of `obj` that `T` refuses when given alone (every config struct
/// has defaults for all keys, so a one-key object fails only because of that key), and
/// descends into the nested GC sections.
fn failing_field<T: serde::de::DeserializeOwned>(
    obj: &serde_json::Map<String, serde_json::Value>,
    prefix: &str,
) -> Option<String> {
    obj.iter().find_map(|(key, value)| {
        let alone = serde_json::Map::from_iter([(key.clone(), value.clone())]);
        // Through text, as the whole file was read: the same deserializer (and so the
        // same verdict), and no second copy of it for `Value`s in the binary.
        let text = serde_json::to_vec(&serde_json::Value::Object(alone)).ok()?;
        serde_json::from_slice::<T>(&text).err()?;
        let path = format!("{prefix}{key}");
        let inner = match (prefix, key.as_str(), value) {
            ("", "imageGC", serde_json::Value::Object(m)) => {
                failing_field::<ImageGcConfig>(m, "imageGC.")
            }
            ("", "containerGC", serde_json::Value::Object(m)) => {
                failing_field::<ContainerGcConfig>(m, "containerGC.")
            }
            #[cfg(feature = "uplink")]
            ("", "apiServer", serde_json::Value::Object(m)) => {
                failing_field::<ApiServerConfig>(m, "apiServer.")
            }
            _ => None,
        };
        Some(inner.unwrap_or(path))
    })
}

#[cfg(test)]
mod tests;
