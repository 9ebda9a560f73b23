//! Validation before anything is stored, following the API server's rules for the
//! fields the agent uses. Every problem is reported (not only the first), each as
//! `field.path: what was expected, got what`. Names are checked here before any of them
//! is used to build a file path.

use super::configmap::ConfigMap;
use super::container::{Container, EnvVar, IntOrString, LifecycleHandler, Probe};
use super::container::{ContainerRestartPolicy, ResourceRequirements, VolumeMount};
use super::container::{HttpGetAction, UriScheme};
use super::meta::ObjectMeta;
use super::pod::{DnsPolicy, PodSpec, Volume};
use super::secret::{self, Secret};
use super::Object;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;

mod security;

/// All problems with `obj` (already defaulted); empty when it is valid.
pub fn validate(obj: &Object) -> Vec<String> {
    let mut v = Errors::default();
    v.meta(obj.meta());
    match obj {
        Object::Pod(p) => {
            v.pod_spec(&p.spec);
            v.app_armor_annotations(&p.metadata, &p.spec);
        }
        Object::ConfigMap(c) => v.config_map(c),
        Object::Secret(s) => v.secret(s),
    }
    v.0
}

/// The collected messages.
#[derive(Default)]
struct Errors(Vec<String>);

impl Errors {
    fn add(&mut self, path: impl Display, msg: impl Display) {
        self.0.push(format!("{path}: {msg}"));
    }

    /// `path: required` when `value` is empty, else the `check` result.
    fn name(&mut self, path: &str, value: &str, check: fn(&str) -> Result<(), String>) {
        if value.is_empty() {
            self.add(path, "required");
        } else if let Err(e) = check(value) {
            self.add(path, e);
        }
    }

    fn range(&mut self, path: impl Display, value: i64, lo: i64, hi: i64) {
        if value < lo || value > hi {
            self.add(path, format_args!("must be {lo}-{hi}, got {value}"));
        }
    }

    fn non_negative(&mut self, path: impl Display, value: i64) {
        if value < 0 {
            self.add(
                path,
                format_args!("must be greater than or equal to 0, got {value}"),
            );
        }
    }

    fn meta(&mut self, m: &ObjectMeta) {
        self.name("metadata.name", &m.name, dns1123_subdomain);
        self.name("metadata.namespace", &m.namespace, dns1123_label);
        if !m.uid.is_empty() && !is_safe_uid(&m.uid) {
            self.add(
                "metadata.uid",
                format_args!(
                    "must be 1-128 letters, digits, '-', '_' or '.', not starting with '.', got {:?}",
                    m.uid
                ),
            );
        }
        for (k, v) in &m.labels {
            if qualified_name(k).is_err() {
                self.add(format_args!("metadata.labels[{k}]"), QUALIFIED_KEY);
            }
            if !is_label_value(v) {
                self.add(
                    format_args!("metadata.labels[{k}]"),
                    format_args!("value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, got {v:?}"),
                );
            }
        }
        let mut annotation_bytes = 0;
        for (k, v) in &m.annotations {
            annotation_bytes += k.len() + v.len();
            if qualified_name(k).is_err() {
                self.add(format_args!("metadata.annotations[{k}]"), QUALIFIED_KEY);
            }
        }
        if annotation_bytes > MAX_ANNOTATION_BYTES {
            self.add(
                "metadata.annotations",
                format_args!(
                    "must be at most {MAX_ANNOTATION_BYTES} bytes in all, got {annotation_bytes}"
                ),
            );
        }
        if let Some(t) = &m.creation_timestamp {
            if let Err(e) = super::time::parse_rfc3339(t) {
                self.add("metadata.creationTimestamp", e);
            }
        }
    }

    fn pod_spec(&mut self, spec: &PodSpec) {
        if spec.containers.is_empty() {
            self.add("spec.containers", "at least one container is required");
        }
        let volumes = self.volumes(&spec.volumes);
        let mut names: BTreeMap<&str, String> = BTreeMap::new();
        let mut host_ports: BTreeMap<(i32, String, &str), String> = BTreeMap::new();
        let all = (spec
            .init_containers
            .iter()
            .map(|c| ("spec.initContainers", c)))
        .chain(spec.containers.iter().map(|c| ("spec.containers", c)));
        let mut index = BTreeMap::new();
        for (list, c) in all {
            let i = index.entry(list).and_modify(|i| *i += 1).or_insert(0);
            let path = format!("{list}[{i}]");
            let init = list == "spec.initContainers";
            if let Some(first) = names.insert(&c.name, format!("{path}.name")) {
                if !c.name.is_empty() {
                    self.add(
                        format_args!("{path}.name"),
                        format_args!("duplicate name {:?} (also {first})", c.name),
                    );
                }
            }
            self.container(&path, c, init, &volumes, spec);
            for (j, p) in c.ports.iter().enumerate() {
                if p.host_port == 0 {
                    continue;
                }
                let key = (p.host_port, format!("{:?}", p.protocol), p.host_ip.as_str());
                let here = format!("{path}.ports[{j}].hostPort");
                if let Some(first) = host_ports.insert(key, here.clone()) {
                    self.add(
                        here,
                        format_args!(
                            "duplicate host port {}/{:?} (also {first})",
                            p.host_port, p.protocol
                        ),
                    );
                }
            }
        }
        self.pod_level(spec);
    }

    fn pod_level(&mut self, spec: &PodSpec) {
        if let Some(g) = spec.termination_grace_period_seconds {
            self.non_negative("spec.terminationGracePeriodSeconds", g);
        }
        if let Some(d) = spec.active_deadline_seconds {
            self.range("spec.activeDeadlineSeconds", d, 1, i64::from(i32::MAX));
        }
        if !spec.hostname.is_empty() {
            self.name("spec.hostname", &spec.hostname, dns1123_label);
        }
        if !spec.subdomain.is_empty() {
            self.name("spec.subdomain", &spec.subdomain, dns1123_label);
        }
        if !spec.node_name.is_empty() {
            self.name("spec.nodeName", &spec.node_name, dns1123_subdomain);
        }
        for (i, r) in spec.image_pull_secrets.iter().enumerate() {
            let path = format!("spec.imagePullSecrets[{i}].name");
            self.name(&path, &r.name, dns1123_subdomain);
        }
        self.dns(spec);
        if let Some(sc) = &spec.security_context {
            let p = "spec.securityContext";
            self.id(format_args!("{p}.runAsUser"), sc.run_as_user);
            self.id(format_args!("{p}.runAsGroup"), sc.run_as_group);
            self.id(format_args!("{p}.fsGroup"), sc.fs_group);
            for (i, g) in sc.supplemental_groups.iter().enumerate() {
                self.id(format_args!("{p}.supplementalGroups[{i}]"), Some(*g));
            }
            if let Some(sp) = &sc.seccomp_profile {
                self.seccomp_profile(&format!("{p}.seccompProfile"), sp);
            }
            if let Some(ap) = &sc.app_armor_profile {
                self.app_armor_profile(&format!("{p}.appArmorProfile"), ap);
            }
            let mut seen = BTreeSet::new();
            for (i, s) in sc.sysctls.iter().enumerate() {
                let path = format!("{p}.sysctls[{i}].name");
                self.name(&path, &s.name, sysctl_name);
                if !seen.insert(&s.name) {
                    self.add(path, format_args!("duplicate sysctl {:?}", s.name));
                }
            }
        }
    }

    fn id(&mut self, path: impl Display, id: Option<i64>) {
        if let Some(id) = id {
            self.range(path, id, 0, i64::from(i32::MAX));
        }
    }

    fn dns(&mut self, spec: &PodSpec) {
        let cfg = spec.dns_config.as_ref();
        if spec.dns_policy == DnsPolicy::None && cfg.is_none_or(|c| c.nameservers.is_empty()) {
            self.add(
                "spec.dnsConfig.nameservers",
                "at least one nameserver is required when dnsPolicy is None",
            );
        }
        let Some(cfg) = cfg else { return };
        if cfg.nameservers.len() > 3 {
            self.add(
                "spec.dnsConfig.nameservers",
                format_args!("must have at most 3 entries, got {}", cfg.nameservers.len()),
            );
        }
        for (i, ns) in cfg.nameservers.iter().enumerate() {
            if ns.parse::<std::net::IpAddr>().is_err() {
                self.add(
                    format_args!("spec.dnsConfig.nameservers[{i}]"),
                    format_args!("must be an IP address, got {ns:?}"),
                );
            }
        }
        if cfg.searches.len() > 32 {
            self.add(
                "spec.dnsConfig.searches",
                format_args!("must have at most 32 entries, got {}", cfg.searches.len()),
            );
        }
        for (i, s) in cfg.searches.iter().enumerate() {
            let path = format!("spec.dnsConfig.searches[{i}]");
            let name = s.strip_suffix('.').unwrap_or(s);
            self.name(&path, name, dns1123_subdomain);
        }
        for (i, o) in cfg.options.iter().enumerate() {
            if o.name.is_empty() {
                self.add(format_args!("spec.dnsConfig.options[{i}].name"), "required");
            }
        }
    }

    /// Validates the volumes and returns their names.
    fn volumes<'a>(&mut self, volumes: &'a [Volume]) -> BTreeSet<&'a str> {
        let mut names = BTreeSet::new();
        for (i, v) in volumes.iter().enumerate() {
            let path = format!("spec.volumes[{i}]");
            self.name(&format!("{path}.name"), &v.name, dns1123_label);
            if !names.insert(v.name.as_str()) && !v.name.is_empty() {
                self.add(
                    format_args!("{path}.name"),
                    format_args!("duplicate volume name {:?}", v.name),
                );
            }
            self.volume_source(&path, v);
        }
        names
    }

    fn volume_source(&mut self, path: &str, v: &Volume) {
        let set = [
            ("emptyDir", v.empty_dir.is_some()),
            ("hostPath", v.host_path.is_some()),
            ("configMap", v.config_map.is_some()),
            ("secret", v.secret.is_some()),
        ];
        self.exactly_one(path, "emptyDir, hostPath, configMap, secret", &set);
        if let Some(e) = &v.empty_dir {
            if let Some(q) = e.size_limit.as_ref().filter(|q| q.nanos() < 0) {
                self.add(
                    format_args!("{path}.emptyDir.sizeLimit"),
                    format_args!("must be greater than or equal to 0, got {q}"),
                );
            }
        }
        if let Some(h) = &v.host_path {
            let p = format!("{path}.hostPath.path");
            if !h.path.starts_with('/') {
                self.add(
                    p,
                    format_args!("must be an absolute path, got {:?}", h.path),
                );
            } else if has_dotdot(&h.path) {
                self.add(p, format_args!("must not contain '..', got {:?}", h.path));
            }
        }
        if let Some(c) = &v.config_map {
            let p = format!("{path}.configMap");
            self.name(&format!("{p}.name"), &c.name, dns1123_subdomain);
            self.projection(&p, &c.items, c.default_mode);
        }
        if let Some(s) = &v.secret {
            let p = format!("{path}.secret");
            self.name(
                &format!("{p}.secretName"),
                &s.secret_name,
                dns1123_subdomain,
            );
            self.projection(&p, &s.items, s.default_mode);
        }
    }

    fn projection(&mut self, path: &str, items: &[super::pod::KeyToPath], mode: Option<i32>) {
        self.mode(format_args!("{path}.defaultMode"), mode);
        let mut seen = BTreeSet::new();
        for (i, it) in items.iter().enumerate() {
            let p = format!("{path}.items[{i}]");
            self.name(&format!("{p}.key"), &it.key, config_key);
            self.name(&format!("{p}.path"), &it.path, relative_path);
            if !seen.insert(&it.path) {
                self.add(
                    format_args!("{p}.path"),
                    format_args!("duplicate path {:?}", it.path),
                );
            }
            self.mode(format_args!("{p}.mode"), it.mode);
        }
    }

    fn mode(&mut self, path: impl Display, mode: Option<i32>) {
        if let Some(m) = mode.filter(|m| !(0..=0o777).contains(m)) {
            self.add(
                path,
                format_args!("must be a file mode 0-0777 (0-511), got {m}"),
            );
        }
    }

    /// `path: must specify exactly one of LIST, got ...` unless exactly one is set.
    fn exactly_one(&mut self, path: impl Display, list: &str, set: &[(&str, bool)]) {
        let chosen: Vec<&str> = set.iter().filter(|s| s.1).map(|s| s.0).collect();
        if chosen.len() != 1 {
            let got = if chosen.is_empty() {
                "none".to_string()
            } else {
                chosen.join(", ")
            };
            self.add(
                path,
                format_args!("must specify exactly one of {list}, got {got}"),
            );
        }
    }

    fn container(
        &mut self,
        path: &str,
        c: &Container,
        init: bool,
        volumes: &BTreeSet<&str>,
        spec: &PodSpec,
    ) {
        self.name(&format!("{path}.name"), &c.name, dns1123_label);
        if c.image.trim().is_empty() {
            self.add(format_args!("{path}.image"), "required");
        } else if c.image.trim() != c.image {
            self.add(
                format_args!("{path}.image"),
                format_args!(
                    "must not have leading or trailing whitespace, got {:?}",
                    c.image
                ),
            );
        } else if let Err(why) = super::image_name::check(&c.image) {
            self.add(
                format_args!("{path}.image"),
                format_args!(
                    "must be an image reference [host[:port]/]path[:tag][@digest]: {why}, got {:?}",
                    c.image
                ),
            );
        }
        if !c.termination_message_path.starts_with('/') {
            self.add(
                format_args!("{path}.terminationMessagePath"),
                format_args!(
                    "must be an absolute path, got {:?}",
                    c.termination_message_path
                ),
            );
        }
        match (init, c.restart_policy) {
            (true, Some(ContainerRestartPolicy::Always)) => self.add(
                format_args!("{path}.restartPolicy"),
                "sidecar containers (restartPolicy: Always on an init container) are not supported",
            ),
            (false, Some(_)) => self.add(
                format_args!("{path}.restartPolicy"),
                "only allowed for init containers",
            ),
            _ => {}
        }
        self.ports(path, c, spec.host_network);
        self.env(path, c, spec);
        self.mounts(path, &c.volume_mounts, volumes);
        self.termination_mount(path, c);
        self.resources(&format!("{path}.resources"), &c.resources);
        self.probes(path, c, init);
        self.security_context(path, c);
    }

    fn ports(&mut self, path: &str, c: &Container, host_network: bool) {
        let mut names = BTreeSet::new();
        for (i, p) in c.ports.iter().enumerate() {
            let pp = format!("{path}.ports[{i}]");
            self.range(
                format_args!("{pp}.containerPort"),
                p.container_port.into(),
                1,
                65535,
            );
            if p.host_port != 0 && !(1..=65535).contains(&p.host_port) {
                self.add(
                    format_args!("{pp}.hostPort"),
                    format_args!("must be 1-65535 (or 0 for none), got {}", p.host_port),
                );
            }
            if host_network && p.host_port != 0 && p.host_port != p.container_port {
                self.add(
                    format_args!("{pp}.hostPort"),
                    format_args!(
                        "must match containerPort ({}) when hostNetwork is true, got {}",
                        p.container_port, p.host_port
                    ),
                );
            }
            if !p.name.is_empty() {
                if let Err(e) = port_name(&p.name) {
                    self.add(format_args!("{pp}.name"), e);
                }
                if !names.insert(&p.name) {
                    self.add(
                        format_args!("{pp}.name"),
                        format_args!("duplicate port name {:?}", p.name),
                    );
                }
            }
            if !p.host_ip.is_empty() && p.host_ip.parse::<std::net::IpAddr>().is_err() {
                self.add(
                    format_args!("{pp}.hostIP"),
                    format_args!("must be an IP address, got {:?}", p.host_ip),
                );
            }
        }
    }

    fn env(&mut self, path: &str, c: &Container, spec: &PodSpec) {
        for (i, e) in c.env.iter().enumerate() {
            let p = format!("{path}.env[{i}]");
            self.name(&format!("{p}.name"), &e.name, env_name);
            self.env_source(&p, e, spec);
        }
        for (i, e) in c.env_from.iter().enumerate() {
            let p = format!("{path}.envFrom[{i}]");
            if !e.prefix.is_empty() {
                if let Err(m) = env_name(&e.prefix) {
                    self.add(format_args!("{p}.prefix"), m);
                }
            }
            let set = [
                ("configMapRef", e.config_map_ref.is_some()),
                ("secretRef", e.secret_ref.is_some()),
            ];
            self.exactly_one(&p, "configMapRef, secretRef", &set);
            if let Some(r) = &e.config_map_ref {
                self.name(
                    &format!("{p}.configMapRef.name"),
                    &r.name,
                    dns1123_subdomain,
                );
            }
            if let Some(r) = &e.secret_ref {
                self.name(&format!("{p}.secretRef.name"), &r.name, dns1123_subdomain);
            }
        }
    }

    fn env_source(&mut self, p: &str, e: &EnvVar, spec: &PodSpec) {
        let Some(from) = &e.value_from else { return };
        let p = format!("{p}.valueFrom");
        if !e.value.is_empty() {
            self.add(&p, "may not be set when value is not empty");
        }
        let set = [
            ("fieldRef", from.field_ref.is_some()),
            ("resourceFieldRef", from.resource_field_ref.is_some()),
            ("configMapKeyRef", from.config_map_key_ref.is_some()),
            ("secretKeyRef", from.secret_key_ref.is_some()),
        ];
        self.exactly_one(
            &p,
            "fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef",
            &set,
        );
        if let Some(f) = &from.field_ref {
            if !f.api_version.is_empty() && f.api_version != "v1" {
                self.add(
                    format_args!("{p}.fieldRef.apiVersion"),
                    format_args!("must be \"v1\", got {:?}", f.api_version),
                );
            }
            if !is_supported_field_path(&f.field_path) {
                self.add(
                    format_args!("{p}.fieldRef.fieldPath"),
                    format_args!(
                        "must be one of {}, metadata.labels['KEY'], metadata.annotations['KEY'], got {:?}",
                        FIELD_PATHS.join(", "),
                        f.field_path
                    ),
                );
            }
        }
        if let Some(r) = &from.resource_field_ref {
            if !RESOURCE_FIELDS.contains(&r.resource.as_str()) {
                self.add(
                    format_args!("{p}.resourceFieldRef.resource"),
                    format_args!(
                        "must be one of {}, got {:?}",
                        RESOURCE_FIELDS.join(", "),
                        r.resource
                    ),
                );
            }
            let known = spec
                .init_containers
                .iter()
                .chain(&spec.containers)
                .any(|c| c.name == r.container_name);
            if !r.container_name.is_empty() && !known {
                self.add(
                    format_args!("{p}.resourceFieldRef.containerName"),
                    format_args!(
                        "must name a container of the pod, got {:?}",
                        r.container_name
                    ),
                );
            }
            if let Some(d) = r.divisor.as_ref().filter(|d| d.nanos() <= 0) {
                self.add(
                    format_args!("{p}.resourceFieldRef.divisor"),
                    format_args!("must be greater than 0, got {d}"),
                );
            }
        }
        for (what, k) in [
            ("configMapKeyRef", &from.config_map_key_ref),
            ("secretKeyRef", &from.secret_key_ref),
        ] {
            if let Some(k) = k {
                self.name(&format!("{p}.{what}.name"), &k.name, dns1123_subdomain);
                self.name(&format!("{p}.{what}.key"), &k.key, config_key);
            }
        }
    }

    fn mounts(&mut self, path: &str, mounts: &[VolumeMount], volumes: &BTreeSet<&str>) {
        let mut paths = BTreeSet::new();
        for (i, m) in mounts.iter().enumerate() {
            let p = format!("{path}.volumeMounts[{i}]");
            if m.name.is_empty() {
                self.add(format_args!("{p}.name"), "required");
            } else if !volumes.contains(m.name.as_str()) {
                self.add(
                    format_args!("{p}.name"),
                    format_args!("must name a volume in spec.volumes, got {:?}", m.name),
                );
            }
            if !m.mount_path.starts_with('/') {
                self.add(
                    format_args!("{p}.mountPath"),
                    format_args!("must be an absolute path, got {:?}", m.mount_path),
                );
            } else if !paths.insert(m.mount_path.trim_end_matches('/')) {
                self.add(
                    format_args!("{p}.mountPath"),
                    format_args!("duplicate mount path {:?}", m.mount_path),
                );
            }
            if !m.sub_path.is_empty() {
                if let Err(e) = relative_path(&m.sub_path) {
                    self.add(format_args!("{p}.subPath"), e);
                }
            }
            if !m.sub_path_expr.is_empty() {
                if !m.sub_path.is_empty() {
                    self.add(
                        format_args!("{p}.subPathExpr"),
                        "subPathExpr and subPath are mutually exclusive",
                    );
                } else if let Err(e) = relative_path(&m.sub_path_expr) {
                    self.add(format_args!("{p}.subPathExpr"), e);
                }
            }
        }
    }

    /// The agent mounts its own file at `terminationMessagePath`; a volume mounted there
    /// would let the pod choose what the agent reads as the message.
    fn termination_mount(&mut self, path: &str, c: &Container) {
        let tmp = lexical(&c.termination_message_path);
        for (i, m) in c.volume_mounts.iter().enumerate() {
            if m.mount_path.starts_with('/') && lexical(&m.mount_path) == tmp {
                self.add(
                    format_args!("{path}.volumeMounts[{i}].mountPath"),
                    format_args!(
                        "must not be the container's terminationMessagePath {:?} (the agent mounts the termination-message file there)",
                        c.termination_message_path
                    ),
                );
            }
        }
    }

    fn resources(&mut self, path: &str, r: &ResourceRequirements) {
        for (kind, map) in [("limits", &r.limits), ("requests", &r.requests)] {
            for (name, q) in map {
                let p = format!("{path}.{kind}.{name}");
                if let Err(e) = resource_name(name) {
                    self.add(&p, e);
                }
                if q.nanos() < 0 {
                    self.add(
                        &p,
                        format_args!("must be greater than or equal to 0, got {q}"),
                    );
                }
                if name == "cpu" && q.nanos() > MAX_CPU * 1_000_000_000 {
                    self.add(&p, format_args!("must be at most {MAX_CPU} CPUs, got {q}"));
                }
            }
        }
        for (name, req) in &r.requests {
            if let Some(lim) = r.limits.get(name).filter(|lim| req > *lim) {
                self.add(
                    format_args!("{path}.requests.{name}"),
                    format_args!(
                        "must be less than or equal to the {name} limit ({lim}), got {req}"
                    ),
                );
            }
        }
    }

    fn probes(&mut self, path: &str, c: &Container, init: bool) {
        let probes = [
            ("livenessProbe", &c.liveness_probe, true),
            ("readinessProbe", &c.readiness_probe, false),
            ("startupProbe", &c.startup_probe, true),
        ];
        for (what, probe, success_one) in probes {
            let Some(probe) = probe else { continue };
            let p = format!("{path}.{what}");
            if init {
                self.add(&p, "not allowed for init containers");
                continue;
            }
            self.probe(&p, probe, success_one);
        }
        if let Some(l) = &c.lifecycle {
            if init {
                self.add(
                    format_args!("{path}.lifecycle"),
                    "not allowed for init containers",
                );
            }
            for (what, h) in [("postStart", &l.post_start), ("preStop", &l.pre_stop)] {
                if let Some(h) = h {
                    self.lifecycle_handler(&format!("{path}.lifecycle.{what}"), h);
                }
            }
        }
    }

    fn probe(&mut self, p: &str, probe: &Probe, success_one: bool) {
        let set = [
            ("exec", probe.exec.is_some()),
            ("httpGet", probe.http_get.is_some()),
            ("tcpSocket", probe.tcp_socket.is_some()),
            ("grpc", probe.grpc.is_some()),
        ];
        self.exactly_one(p, "exec, httpGet, tcpSocket, grpc", &set);
        self.non_negative(
            format_args!("{p}.initialDelaySeconds"),
            probe.initial_delay_seconds.into(),
        );
        for (field, v) in [
            ("timeoutSeconds", probe.timeout_seconds),
            ("periodSeconds", probe.period_seconds),
            ("successThreshold", probe.success_threshold),
            ("failureThreshold", probe.failure_threshold),
        ] {
            if v < 1 {
                self.add(
                    format_args!("{p}.{field}"),
                    format_args!("must be at least 1, got {v}"),
                );
            }
        }
        if success_one && probe.success_threshold != 1 {
            self.add(
                format_args!("{p}.successThreshold"),
                format_args!(
                    "must be 1 for liveness and startup probes, got {}",
                    probe.success_threshold
                ),
            );
        }
        if let Some(g) = probe.termination_grace_period_seconds.filter(|g| *g < 1) {
            self.add(
                format_args!("{p}.terminationGracePeriodSeconds"),
                format_args!("must be at least 1, got {g}"),
            );
        }
        if let Some(e) = &probe.exec {
            self.exec(p, &e.command);
        }
        if let Some(h) = &probe.http_get {
            self.http_get(p, h);
        }
        if let Some(t) = &probe.tcp_socket {
            self.port(format_args!("{p}.tcpSocket.port"), &t.port);
            self.host(format_args!("{p}.tcpSocket.host"), &t.host);
        }
        if let Some(g) = &probe.grpc {
            self.range(format_args!("{p}.grpc.port"), g.port.into(), 1, 65535);
            // Refused rather than ignored: a probe that never runs would report a
            // container healthy that nobody checked.
            self.add(
                format_args!("{p}.grpc"),
                "gRPC probes are not supported by tinylet; use exec, httpGet or tcpSocket",
            );
        }
    }

    /// An httpGet action: port, an IP literal host (tinylet resolves no names), and
    /// plain HTTP (there is no TLS client).
    fn http_get(&mut self, p: &str, h: &HttpGetAction) {
        self.port(format_args!("{p}.httpGet.port"), &h.port);
        self.host(format_args!("{p}.httpGet.host"), &h.host);
        if h.scheme == UriScheme::HTTPS {
            self.add(
                format_args!("{p}.httpGet.scheme"),
                "HTTPS is not supported by tinylet (no TLS client); use HTTP or tcpSocket",
            );
        }
        for (i, hd) in h.http_headers.iter().enumerate() {
            let bad_name =
                hd.name.is_empty() || hd.name.bytes().any(|b| !b.is_ascii_graphic() || b == b':');
            if bad_name {
                self.add(
                    format_args!("{p}.httpGet.httpHeaders[{i}].name"),
                    format_args!("must be an HTTP header name, got {:?}", hd.name),
                );
            }
            if hd.value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                self.add(
                    format_args!("{p}.httpGet.httpHeaders[{i}].value"),
                    "must not contain line breaks",
                );
            }
        }
        if h.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            self.add(
                format_args!("{p}.httpGet.path"),
                format_args!(
                    "must not contain spaces or control characters, got {:?}",
                    h.path
                ),
            );
        }
    }

    /// A probe or hook host: empty (the pod's IP), `localhost` or an IP address.
    fn host(&mut self, path: impl Display, host: &str) {
        if !host.is_empty() && host != "localhost" && host.parse::<std::net::IpAddr>().is_err() {
            self.add(
                path,
                format_args!(
                    "must be an IP address or localhost (tinylet resolves no names), got {host:?}"
                ),
            );
        }
    }

    fn lifecycle_handler(&mut self, p: &str, h: &LifecycleHandler) {
        let set = [
            ("exec", h.exec.is_some()),
            ("httpGet", h.http_get.is_some()),
            ("tcpSocket", h.tcp_socket.is_some()),
            ("sleep", h.sleep.is_some()),
        ];
        self.exactly_one(p, "exec, httpGet, tcpSocket, sleep", &set);
        if let Some(e) = &h.exec {
            self.exec(p, &e.command);
        }
        if let Some(g) = &h.http_get {
            self.http_get(p, g);
        }
        if h.tcp_socket.is_some() {
            self.add(
                format_args!("{p}.tcpSocket"),
                "not supported as a lifecycle handler (kubelet fails such hooks when they run); use exec, httpGet or sleep",
            );
        }
        if let Some(s) = &h.sleep {
            self.non_negative(format_args!("{p}.sleep.seconds"), s.seconds);
        }
    }

    fn exec(&mut self, p: &str, command: &[String]) {
        if command.is_empty() {
            self.add(format_args!("{p}.exec.command"), "required");
        }
    }

    fn port(&mut self, path: impl Display, port: &IntOrString) {
        match port {
            IntOrString::Int(n) => self.range(path, (*n).into(), 1, 65535),
            IntOrString::String(s) => {
                if let Err(e) = port_name(s) {
                    self.add(path, e);
                }
            }
        }
    }

    fn security_context(&mut self, path: &str, c: &Container) {
        let Some(sc) = &c.security_context else {
            return;
        };
        let p = format!("{path}.securityContext");
        self.id(format_args!("{p}.runAsUser"), sc.run_as_user);
        self.id(format_args!("{p}.runAsGroup"), sc.run_as_group);
        if sc.privileged == Some(true) && sc.allow_privilege_escalation == Some(false) {
            self.add(
                format_args!("{p}.allowPrivilegeEscalation"),
                "cannot be false when privileged is true",
            );
        }
        if let Some(sp) = &sc.seccomp_profile {
            self.seccomp_profile(&format!("{p}.seccompProfile"), sp);
        }
        if let Some(ap) = &sc.app_armor_profile {
            self.app_armor_profile(&format!("{p}.appArmorProfile"), ap);
        }
    }

    fn config_map(&mut self, c: &ConfigMap) {
        for k in c.data.keys() {
            self.key("data", k);
        }
        for (k, v) in &c.binary_data {
            self.key("binaryData", k);
            if c.data.contains_key(k) {
                self.add(
                    format_args!("binaryData[{k}]"),
                    "duplicate key: also in data",
                );
            }
            if let Err(e) = super::base64::decode(v) {
                self.add(format_args!("binaryData[{k}]"), e);
            }
        }
    }

    fn secret(&mut self, s: &Secret) {
        for (k, v) in &s.data {
            self.key("data", k);
            if let Err(e) = super::base64::decode(v) {
                self.add(format_args!("data[{k}]"), e);
            }
        }
        match s.type_.as_str() {
            secret::TYPE_DOCKER_CONFIG_JSON | secret::TYPE_DOCKERCFG => {
                if let Err(e) = s.registry_entries() {
                    self.0.push(e);
                }
            }
            "kubernetes.io/tls" => {
                for k in ["tls.crt", "tls.key"] {
                    if !s.data.contains_key(k) {
                        self.add(
                            format_args!("data[{k}]"),
                            "required for type kubernetes.io/tls",
                        );
                    }
                }
            }
            _ => {}
        }
    }

    fn key(&mut self, map: &str, k: &str) {
        if let Err(e) = config_key(k) {
            self.add(format_args!("{map}[{k}]"), e);
        }
    }
}

/// The largest CPU request or limit: far beyond any machine, and small enough that
/// kubelet's arithmetic (milli-CPUs x 100000 us per period) stays within 64 bits and
/// the CFS quota below the kernel's maximum (2^44-1 us). Kubernetes has no bound.
const MAX_CPU: i128 = 1_000_000;

/// Kubernetes' limit on the total size of an object's annotations.
const MAX_ANNOTATION_BYTES: usize = 256 * 1024;

const QUALIFIED_KEY: &str = "key must be a qualified name (an optional DNS-1123 subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)";

/// A label value: empty, or at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends.
pub fn is_label_value(v: &str) -> bool {
    v.is_empty() || qualified_name(v).is_ok() && !v.contains('/')
}

/// The `fieldRef.fieldPath` values kubelet resolves (besides labels/annotations keys).
const FIELD_PATHS: [&str; 11] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.labels",
    "metadata.annotations",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// The `resourceFieldRef.resource` values.
const RESOURCE_FIELDS: [&str; 6] = [
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
];

fn is_supported_field_path(p: &str) -> bool {
    if FIELD_PATHS.contains(&p) {
        return true;
    }
    ["metadata.labels['", "metadata.annotations['"]
        .iter()
        .any(|pre| {
            p.strip_prefix(pre)
                .and_then(|r| r.strip_suffix("']"))
                .is_some_and(|k| qualified_name(k).is_ok())
        })
}

fn is_alnum_lower(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// RFC 1123 label: lowercase letters, digits and '-', alphanumeric at both ends, <= 63.
pub fn dns1123_label(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|&c| is_alnum_lower(c) || c == b'-')
        && b.first().is_some_and(|&c| is_alnum_lower(c))
        && b.last().is_some_and(|&c| is_alnum_lower(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a DNS-1123 label (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit), got {s:?}"
        ))
    }
}

/// RFC 1123 subdomain: dot-separated labels, <= 253 in all. Never contains '/', "..",
/// a NUL or a leading '.', so it is safe as a file name.
pub fn dns1123_subdomain(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.iter().all(|&c| is_alnum_lower(c) || c == b'-')
                && is_alnum_lower(b[0])
                && is_alnum_lower(b[b.len() - 1])
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit), got {s:?}"
        ))
    }
}

/// IANA service name, as Kubernetes requires of port names: <= 15 lowercase letters,
/// digits and '-', at least one letter, no '-' at either end or twice in a row.
fn port_name(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 15
        && b.iter().all(|&c| is_alnum_lower(c) || c == b'-')
        && b.iter().any(u8::is_ascii_lowercase)
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a port name (at most 15 lowercase letters, digits or '-', with a letter, no '-' at the ends or twice in a row), got {s:?}"
        ))
    }
}

/// Kubernetes' relaxed env var name rule: printable ASCII, no '='.
fn env_name(s: &str) -> Result<(), String> {
    if s.bytes().all(|c| (b' '..=b'~').contains(&c) && c != b'=') {
        Ok(())
    } else {
        Err(format!(
            "must consist of printable ASCII characters other than '=', got {s:?}"
        ))
    }
}

/// A ConfigMap/Secret key: letters, digits, '-', '_', '.'; <= 253; not `.`/`..`, not
/// starting with `..`.
fn config_key(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
        && s != "."
        && !s.starts_with("..");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a key of letters, digits, '-', '_' or '.' (at most 253, not '.' and not starting with '..'), got {s:?}"
        ))
    }
}

/// A path inside a volume: relative, no `..` component, no NUL.
fn relative_path(s: &str) -> Result<(), String> {
    if s.starts_with('/') {
        Err(format!("must be a relative path, got {s:?}"))
    } else if has_dotdot(s) {
        Err(format!("must not contain '..', got {s:?}"))
    } else if s.contains('\0') {
        Err(format!("must not contain a NUL byte, got {s:?}"))
    } else {
        Ok(())
    }
}

/// The components of an absolute path as the runtime would clean it (`//`, `.`, `..`
/// and a trailing `/` resolved lexically).
fn lexical(p: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

fn has_dotdot(p: &str) -> bool {
    p.split('/').any(|c| c == "..")
}

/// A resource name: `cpu`, `memory`, ..., or a qualified name (`example.com/gpu`).
fn resource_name(s: &str) -> Result<(), String> {
    qualified_name(s).map_err(|_| {
        format!("must be a resource name like cpu, memory or example.com/device, got {s:?}")
    })
}

/// Whether `s` is a qualified name (a label or taint key).
pub fn is_qualified_name(s: &str) -> bool {
    qualified_name(s).is_ok()
}

/// A Kubernetes qualified name: optional DNS subdomain prefix and '/', then 1-63
/// alphanumerics, '-', '_' or '.', alphanumeric at both ends.
fn qualified_name(s: &str) -> Result<(), ()> {
    let name = match s.split_once('/') {
        Some((prefix, name)) => {
            dns1123_subdomain(prefix).map_err(|_| ())?;
            name
        }
        None => s,
    };
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(())
    }
}

/// A sysctl name: dot- or slash-separated lowercase parts (`net.ipv4.ip_forward`).
fn sysctl_name(s: &str) -> Result<(), String> {
    let ok = s.len() <= 253
        && s.split(['.', '/']).all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|&c| is_alnum_lower(c) || c == b'-' || c == b'_')
                && is_alnum_lower(b[0])
                && is_alnum_lower(b[b.len() - 1])
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a sysctl name like net.ipv4.ip_forward, got {s:?}"
        ))
    }
}

/// A uid safe to put in a path: 1-128 of `[A-Za-z0-9._-]`, not starting with '.'.
fn is_safe_uid(s: &str) -> bool {
    s.len() <= 128
        && !s.starts_with('.')
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
}
