//! Validation of security profiles: `seccompProfile` and `appArmorProfile` of the pod
//! and of each container, and the legacy per-container AppArmor annotation.

use super::paths::relative_path;
use super::Errors;
use crate::model::container::{ProfileType, SecurityProfile, APPARMOR_ANNOTATION_PREFIX};
use crate::model::pod::PodSpec;
use crate::model::ObjectMeta;
use std::fmt::Display;

/// Kubernetes' bound on an AppArmor profile name (PATH_MAX - 1).
const MAX_APPARMOR_NAME: usize = 4095;

impl Errors {
    /// A seccomp profile: its localhostProfile is a file below the agent's
    /// `seccompProfileRoot`, so a relative path without `..`.
    pub(super) fn seccomp_profile(&mut self, path: &str, p: &SecurityProfile) {
        if let Some(file) = self.profile_type(path, p) {
            if let Err(e) = relative_path(file) {
                self.add(format_args!("{path}.localhostProfile"), e);
            }
        }
    }

    /// An AppArmor profile: its localhostProfile is the name of a loaded profile.
    pub(super) fn app_armor_profile(&mut self, path: &str, p: &SecurityProfile) {
        if let Some(name) = self.profile_type(path, p) {
            self.app_armor_name(format_args!("{path}.localhostProfile"), name);
        }
    }

    /// The type is required; localhostProfile goes with Localhost and only with it.
    /// Returns the localhost profile to check further.
    fn profile_type<'a>(&mut self, path: &str, p: &'a SecurityProfile) -> Option<&'a str> {
        let local = p.localhost_profile.as_deref();
        match (p.type_, local) {
            (None, _) => self.add(
                format_args!("{path}.type"),
                "required, must be one of RuntimeDefault, Unconfined, Localhost",
            ),
            (Some(ProfileType::Localhost), None | Some("")) => self.add(
                format_args!("{path}.localhostProfile"),
                "required when type is Localhost",
            ),
            (Some(ProfileType::Localhost), Some(l)) => return Some(l),
            (Some(_), Some(_)) => self.add(
                format_args!("{path}.localhostProfile"),
                "may only be set when type is Localhost",
            ),
            (Some(_), None) => {}
        }
        None
    }

    fn app_armor_name(&mut self, path: impl Display, name: &str) {
        if name.is_empty() {
            self.add(path, "the profile name is required");
        } else if name.trim() != name || name.contains(|c: char| c.is_control()) {
            self.add(
                path,
                format_args!(
                    "must not be padded with whitespace or hold control characters, got {name:?}"
                ),
            );
        } else if name.len() > MAX_APPARMOR_NAME {
            self.add(
                path,
                format_args!(
                    "must be at most {MAX_APPARMOR_NAME} bytes, got {}",
                    name.len()
                ),
            );
        }
    }

    /// Legacy AppArmor annotations name a container of the pod and a profile kubelet
    /// understands (an empty value means none).
    pub(super) fn app_armor_annotations(&mut self, meta: &ObjectMeta, spec: &PodSpec) {
        for (k, v) in &meta.annotations {
            let Some(container) = k.strip_prefix(APPARMOR_ANNOTATION_PREFIX) else {
                continue;
            };
            let path = format!("metadata.annotations[{k}]");
            let known = spec
                .init_containers
                .iter()
                .chain(&spec.containers)
                .any(|c| c.name == container);
            if !known {
                self.add(
                    &path,
                    format_args!("must name a container of the pod, got {container:?}"),
                );
            }
            match SecurityProfile::from_apparmor_annotation(v) {
                _ if v.is_empty() => {}
                Some(p) => {
                    if let Some(name) = &p.localhost_profile {
                        self.app_armor_name(&path, name);
                    }
                }
                None => self.add(
                    &path,
                    format_args!(
                        "must be runtime/default, unconfined or localhost/<profile>, got {v:?}"
                    ),
                ),
            }
        }
    }
}
