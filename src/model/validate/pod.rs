//! The pod spec outside its containers, following `ValidatePodSpec` and
//! `ValidateVolumes`: at least one container, unique container names and host ports,
//! the grace period and deadline, hostname and subdomain labels, pull-secret names,
//! DNS policy and config, the pod security context (ids, profiles, sysctls), and the
//! volumes: unique label names, exactly one source of those tinylet supports
//! (emptyDir, hostPath, configMap, secret, projected, downwardAPI,
//! persistentVolumeClaim), absolute hostPaths without `..`, configMap/secret items with relative paths (not starting with `..`)
//! and file modes; projected and downwardAPI volumes in [`super::projected`]. Each
//! container is checked in [`super::container`].

use super::names::{config_key, dns1123_label, dns1123_subdomain, sysctl_name};
use super::paths::{has_dotdot, volume_file_path};
use super::Errors;
use crate::model::pod::{DnsPolicy, KeyToPath, PodSpec, Volume};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;

impl Errors {
    /// A pod's spec: its volumes, each container (names and host ports unique across
    /// init and app containers), then the pod-level fields.
    pub(super) fn pod_spec(&mut self, spec: &PodSpec) {
        if spec.containers.is_empty() {
            self.add("spec.containers", "at least one container is required");
        }
        let volumes = self.volumes(spec);
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

    /// The required node affinity's operators and values, as the API server checks them.
    fn node_affinity(&mut self, spec: &PodSpec) {
        let Some(sel) = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| {
                n.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
        else {
            return;
        };
        let base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
        for (i, t) in sel.node_selector_terms.iter().enumerate() {
            let reqs = t
                .match_expressions
                .iter()
                .map(|r| ("matchExpressions", r))
                .chain(t.match_fields.iter().map(|r| ("matchFields", r)));
            for (j, (what, r)) in reqs.enumerate() {
                let p = format!("{base}.nodeSelectorTerms[{i}].{what}[{j}]");
                let n = r.values.len();
                let ok = match r.operator.as_str() {
                    "In" | "NotIn" => n > 0,
                    "Exists" | "DoesNotExist" => n == 0,
                    "Gt" | "Lt" => n == 1 && r.values[0].parse::<i64>().is_ok(),
                    _ => {
                        self.add(
                            format_args!("{p}.operator"),
                            format_args!(
                                "must be one of {}, got {:?}",
                                crate::model::affinity::OPERATORS.join(", "),
                                r.operator
                            ),
                        );
                        continue;
                    }
                };
                if !ok {
                    self.add(
                        format_args!("{p}.values"),
                        format_args!(
                            "wrong for operator {}: In and NotIn need values, Exists and \
                             DoesNotExist none, Gt and Lt one integer",
                            r.operator
                        ),
                    );
                }
            }
        }
    }

    /// The fields of the spec that are not containers or volumes.
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
        self.node_affinity(spec);
        for (i, a) in spec.host_aliases.iter().enumerate() {
            let p = format!("spec.hostAliases[{i}]");
            if a.ip.parse::<std::net::IpAddr>().is_err() {
                self.add(
                    format_args!("{p}.ip"),
                    format_args!("must be a valid IP address, got {:?}", a.ip),
                );
            }
            for (j, h) in a.hostnames.iter().enumerate() {
                self.name(&format!("{p}.hostnames[{j}]"), h, dns1123_subdomain);
            }
        }
        if !spec.service_account_name.is_empty() {
            let sa = &spec.service_account_name;
            self.name("spec.serviceAccountName", sa, dns1123_subdomain);
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

    /// `dnsPolicy` and `dnsConfig`, with the resolver's limits (3 nameservers, 32
    /// search domains) that `validatePodDNSConfig` applies.
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
    fn volumes<'a>(&mut self, spec: &'a PodSpec) -> BTreeSet<&'a str> {
        let mut names = BTreeSet::new();
        for (i, v) in spec.volumes.iter().enumerate() {
            let path = format!("spec.volumes[{i}]");
            self.name(&format!("{path}.name"), &v.name, dns1123_label);
            if !names.insert(v.name.as_str()) && !v.name.is_empty() {
                self.add(
                    format_args!("{path}.name"),
                    format_args!("duplicate volume name {:?}", v.name),
                );
            }
            self.volume_source(&path, v, spec);
        }
        names
    }

    /// One volume: exactly one of the sources tinylet supports, each checked.
    fn volume_source(&mut self, path: &str, v: &Volume, spec: &PodSpec) {
        let set = [
            ("emptyDir", v.empty_dir.is_some()),
            ("hostPath", v.host_path.is_some()),
            ("configMap", v.config_map.is_some()),
            ("secret", v.secret.is_some()),
            ("projected", v.projected.is_some()),
            ("downwardAPI", v.downward_api.is_some()),
            ("persistentVolumeClaim", v.persistent_volume_claim.is_some()),
        ];
        self.exactly_one(
            path,
            "emptyDir, hostPath, configMap, secret, projected, downwardAPI, persistentVolumeClaim",
            &set,
        );
        if let Some(c) = &v.persistent_volume_claim {
            let p = format!("{path}.persistentVolumeClaim.claimName");
            self.name(&p, &c.claim_name, dns1123_subdomain);
        }
        if let Some(p) = &v.projected {
            self.projected(&format!("{path}.projected"), p, spec);
        }
        if let Some(d) = &v.downward_api {
            self.downward_api(&format!("{path}.downwardAPI"), d, spec);
        }
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

    /// The `items` and `defaultMode` of a configMap or secret volume: keys, relative
    /// paths each written once, file modes.
    fn projection(&mut self, path: &str, items: &[KeyToPath], mode: Option<i32>) {
        self.mode(format_args!("{path}.defaultMode"), mode);
        let mut seen = BTreeSet::new();
        for (i, it) in items.iter().enumerate() {
            let p = format!("{path}.items[{i}]");
            self.name(&format!("{p}.key"), &it.key, config_key);
            self.name(&format!("{p}.path"), &it.path, volume_file_path);
            if !seen.insert(&it.path) {
                self.add(
                    format_args!("{p}.path"),
                    format_args!("duplicate path {:?}", it.path),
                );
            }
            self.mode(format_args!("{p}.mode"), it.mode);
        }
    }

    /// A file mode, when set: 0-0777.
    pub(super) fn mode(&mut self, path: impl Display, mode: Option<i32>) {
        if let Some(m) = mode.filter(|m| !(0..=0o777).contains(m)) {
            self.add(
                path,
                format_args!("must be a file mode 0-0777 (0-511), got {m}"),
            );
        }
    }
}
