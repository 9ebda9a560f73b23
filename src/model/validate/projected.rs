//! Projected and downwardAPI volumes, following `validateProjectedVolumeSource` and
//! `validateDownwardAPIVolumeSource`: each projection has exactly one source; names of
//! the ConfigMaps and Secrets (DNS-1123 subdomains: they become file names in the
//! store); file paths relative, without `..`, not starting with `..` and each written
//! once across the sources; file modes 0-0777; a token's `expirationSeconds` between
//! 10 minutes and 2^32 seconds; downwardAPI files with exactly one of `fieldRef` (only
//! the fields the API server allows in volumes, see [`VOLUME_FIELD_PATHS`]) and
//! `resourceFieldRef` (a container of the pod, a known resource, a divisor the API
//! server accepts for it).

use super::container::{is_field_path_in, RESOURCE_FIELDS};
use super::names::{config_key, dns1123_subdomain};
use super::paths::volume_file_path;
use super::Errors;
use crate::model::container::ResourceFieldSelector;
use crate::model::pod::{KeyToPath, PodSpec};
use crate::model::projected::{
    DownwardApiVolumeFile, DownwardApiVolumeSource, ProjectedVolumeSource, MAX_EXPIRATION_SECONDS,
    MIN_EXPIRATION_SECONDS,
};
use std::collections::BTreeMap;

/// The pod fields a downwardAPI *volume* may show (besides labels and annotations by
/// key). `spec.nodeName`, `spec.serviceAccountName`, `status.podIP` and `status.hostIP`
/// are for env only: the API server refuses them here.
pub(super) const VOLUME_FIELD_PATHS: [&str; 5] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.labels",
    "metadata.annotations",
];

/// The divisors the API server accepts for memory and ephemeral-storage (compared by
/// value here: `1024` passes as `1Ki`).
const BYTE_DIVISORS: &str = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei";

/// Paths written so far in one volume: path -> the field that wrote it first.
type Seen = BTreeMap<String, String>;

impl Errors {
    /// A `projected` volume at `path` (`spec.volumes[i].projected`).
    pub(super) fn projected(&mut self, path: &str, p: &ProjectedVolumeSource, spec: &PodSpec) {
        self.mode(format_args!("{path}.defaultMode"), p.default_mode);
        let mut seen = Seen::new();
        for (i, s) in p.sources.iter().enumerate() {
            let sp = format!("{path}.sources[{i}]");
            let set = [
                ("configMap", s.config_map.is_some()),
                ("secret", s.secret.is_some()),
                ("downwardAPI", s.downward_api.is_some()),
                ("serviceAccountToken", s.service_account_token.is_some()),
            ];
            self.exactly_one(
                &sp,
                "configMap, secret, downwardAPI, serviceAccountToken",
                &set,
            );
            for (what, k) in [("configMap", &s.config_map), ("secret", &s.secret)] {
                if let Some(k) = k {
                    let p = format!("{sp}.{what}");
                    self.no_default_mode(&p, k.default_mode);
                    self.name(&format!("{p}.name"), &k.name, dns1123_subdomain);
                    self.key_items(&p, &k.items, &mut seen);
                }
            }
            if let Some(d) = &s.downward_api {
                let p = format!("{sp}.downwardAPI");
                self.no_default_mode(&p, d.default_mode);
                self.downward_api_files(&p, &d.items, spec, &mut seen);
            }
            if let Some(t) = &s.service_account_token {
                let p = format!("{sp}.serviceAccountToken");
                let e = t.expiration();
                if e < MIN_EXPIRATION_SECONDS {
                    self.add(
                        format_args!("{p}.expirationSeconds"),
                        format_args!("may not specify a duration less than 10 minutes, got {e}"),
                    );
                } else if e > MAX_EXPIRATION_SECONDS {
                    self.add(
                        format_args!("{p}.expirationSeconds"),
                        format_args!(
                            "may not specify a duration larger than 2^32 seconds, got {e}"
                        ),
                    );
                }
                self.file_path(&format!("{p}.path"), &t.path, &mut seen);
            }
        }
    }

    /// A `downwardAPI` volume at `path` (`spec.volumes[i].downwardAPI`).
    pub(super) fn downward_api(&mut self, path: &str, d: &DownwardApiVolumeSource, spec: &PodSpec) {
        self.mode(format_args!("{path}.defaultMode"), d.default_mode);
        self.downward_api_files(path, &d.items, spec, &mut Seen::new());
    }

    /// A projection's source has no `defaultMode` of its own (the model shares the
    /// volume types, which have one).
    fn no_default_mode(&mut self, path: &str, mode: Option<i32>) {
        if mode.is_some() {
            let why = "not allowed in a projection (the volume's defaultMode applies)";
            self.add(format_args!("{path}.defaultMode"), why);
        }
    }

    /// The `items` of a configMap or secret projection: keys, paths, modes.
    fn key_items(&mut self, path: &str, items: &[KeyToPath], seen: &mut Seen) {
        for (i, it) in items.iter().enumerate() {
            let p = format!("{path}.items[{i}]");
            self.name(&format!("{p}.key"), &it.key, config_key);
            self.file_path(&format!("{p}.path"), &it.path, seen);
            self.mode(format_args!("{p}.mode"), it.mode);
        }
    }

    /// The files of a downwardAPI volume or projection.
    fn downward_api_files(
        &mut self,
        path: &str,
        items: &[DownwardApiVolumeFile],
        spec: &PodSpec,
        seen: &mut Seen,
    ) {
        for (i, f) in items.iter().enumerate() {
            let p = format!("{path}.items[{i}]");
            self.file_path(&format!("{p}.path"), &f.path, seen);
            self.mode(format_args!("{p}.mode"), f.mode);
            let set = [
                ("fieldRef", f.field_ref.is_some()),
                ("resourceFieldRef", f.resource_field_ref.is_some()),
            ];
            self.exactly_one(&p, "fieldRef, resourceFieldRef", &set);
            if let Some(r) = &f.field_ref {
                if r.api_version != "v1" {
                    self.add(
                        format_args!("{p}.fieldRef.apiVersion"),
                        format_args!("must be \"v1\", got {:?}", r.api_version),
                    );
                }
                if !is_field_path_in(&r.field_path, &VOLUME_FIELD_PATHS) {
                    self.add(
                        format_args!("{p}.fieldRef.fieldPath"),
                        format_args!(
                            "must be one of {}, metadata.labels['KEY'], metadata.annotations['KEY'] (in a volume; spec.* and status.* are for env only), got {:?}",
                            VOLUME_FIELD_PATHS.join(", "),
                            r.field_path
                        ),
                    );
                }
            }
            if let Some(r) = &f.resource_field_ref {
                self.volume_resource(&format!("{p}.resourceFieldRef"), r, spec);
            }
        }
    }

    /// A `resourceFieldRef` in a volume: `containerName` is required there.
    fn volume_resource(&mut self, p: &str, r: &ResourceFieldSelector, spec: &PodSpec) {
        let known = (spec.init_containers.iter())
            .chain(&spec.containers)
            .any(|c| c.name == r.container_name);
        if r.container_name.is_empty() {
            self.add(format_args!("{p}.containerName"), "required");
        } else if !known {
            self.add(
                format_args!("{p}.containerName"),
                format_args!(
                    "must name a container of the pod, got {:?}",
                    r.container_name
                ),
            );
        }
        if !RESOURCE_FIELDS.contains(&r.resource.as_str()) {
            self.add(
                format_args!("{p}.resource"),
                format_args!(
                    "must be one of {}, got {:?}",
                    RESOURCE_FIELDS.join(", "),
                    r.resource
                ),
            );
            return;
        }
        let Some(d) = &r.divisor else { return };
        let n = d.nanos();
        if r.resource.ends_with(".cpu") {
            if n != 1_000_000 && n != 1_000_000_000 {
                self.add(
                    format_args!("{p}.divisor"),
                    format_args!("must be 1m or 1 for {}, got {d}", r.resource),
                );
            }
        } else if !is_byte_divisor(n) {
            self.add(
                format_args!("{p}.divisor"),
                format_args!("must be one of {BYTE_DIVISORS} for {}, got {d}", r.resource),
            );
        }
    }

    /// A file path of a volume the agent writes, unique within the volume.
    fn file_path(&mut self, p: &str, value: &str, seen: &mut Seen) {
        self.name(p, value, volume_file_path);
        if value.is_empty() {
            return;
        }
        if let Some(first) = seen.get(value) {
            self.add(
                p,
                format_args!("conflicting duplicate path {value:?} (also {first})"),
            );
        } else {
            seen.insert(value.to_string(), p.to_string());
        }
    }
}

/// Whether `nanos` is 1, 10^(3k) or 2^(10k) bytes (k = 1..6).
fn is_byte_divisor(nanos: i128) -> bool {
    const ONE: i128 = 1_000_000_000;
    (0..=6).any(|k| nanos == ONE * 1000_i128.pow(k) || nanos == ONE << (10 * k))
}

#[cfg(test)]
mod tests {
    use super::is_byte_divisor;
    use crate::model::Quantity;

    #[test]
    fn byte_divisors_are_the_api_servers() {
        for good in [
            "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
        ] {
            let q = Quantity::parse(good).unwrap();
            assert!(is_byte_divisor(q.nanos()), "{good}");
        }
        for bad in ["2", "1m", "1500m", "10", "1e2", "0"] {
            let q = Quantity::parse(bad).unwrap();
            assert!(!is_byte_divisor(q.nanos()), "{bad}");
        }
    }
}
