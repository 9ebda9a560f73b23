//! Each container, following `validateContainers`/`validateInitContainers` and what
//! they call: name, image reference, terminationMessagePath, restartPolicy (no
//! sidecars: tinylet does not run them), ports, env and envFrom, volume mounts,
//! resources and the security context. Probes and lifecycle hooks are checked in
//! [`super::handlers`], seccomp and AppArmor profiles in [`super::security`].
//!
//! Beyond the API server: a CPU bound ([`MAX_CPU`]) so kubelet's quota arithmetic cannot
//! overflow, and no volume mounted over the termination-message file the agent mounts.

use super::names::{config_key, dns1123_label, dns1123_subdomain};
use super::names::{env_name, port_name, qualified_name, resource_name};
use super::paths::{lexical, relative_path};
use super::Errors;
use crate::model::container::{Container, ContainerRestartPolicy, EnvVar};
use crate::model::container::{ResourceRequirements, VolumeMount};
use crate::model::pod::PodSpec;
use std::collections::BTreeSet;

/// The largest CPU request or limit: far beyond any machine, and small enough that
/// kubelet's arithmetic (milli-CPUs x 100000 us per period) stays within 64 bits and
/// the CFS quota below the kernel's maximum (2^44-1 us). Kubernetes has no bound.
const MAX_CPU: i128 = 1_000_000;

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
pub(super) const RESOURCE_FIELDS: [&str; 6] = [
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
];

/// Whether kubelet resolves `fieldRef.fieldPath` `p` in env.
fn is_supported_field_path(p: &str) -> bool {
    is_field_path_in(p, &FIELD_PATHS)
}

/// Whether `p` is one of `paths` or a label or annotation by key (`metadata.labels['k']`).
pub(super) fn is_field_path_in(p: &str, paths: &[&str]) -> bool {
    if paths.contains(&p) {
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

impl Errors {
    /// One container at `path` (`spec.containers[i]` or `spec.initContainers[i]`);
    /// `volumes` are the names the pod declares.
    pub(super) fn container(
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
        } else if let Err(why) = crate::model::image_name::check(&c.image) {
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

    /// `ports`: port numbers, unique IANA names, host IPs; with hostNetwork the host
    /// port is the container port.
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

    /// `env` and `envFrom`: names, and exactly one source for each `envFrom`.
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

    /// An env var's `valueFrom`: exactly one source, each naming something kubelet can
    /// resolve (a supported field path, a resource of a container of the pod, a key).
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

    /// `volumeMounts`: a declared volume, an absolute path used once, relative subPaths.
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

    /// `resources`: resource names, non-negative quantities, CPU within [`MAX_CPU`],
    /// requests not above limits.
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

    /// The container's `securityContext`: ids, privilege escalation, profiles.
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
}
