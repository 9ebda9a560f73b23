//! The defaults the API server fills in that the agent relies on, applied to every parsed
//! object so the rest of the agent never has to guess what "absent" means.

use super::container::{
    Container, PullPolicy, ResourceFieldSelector, DEFAULT_TERMINATION_MESSAGE_PATH,
};
use super::meta::{ObjectMeta, API_VERSION, DEFAULT_NAMESPACE};
use super::pod::Volume;
use super::projected::{self, DownwardApiVolumeFile};
use super::secret::TYPE_OPAQUE;
use super::status::{PodPhase, PodStatus};
use super::Object;

/// Seconds between SIGTERM and SIGKILL when the pod does not say.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;

/// Fills in defaults in place. Idempotent.
pub fn apply(obj: &mut Object) {
    match obj {
        Object::Pod(p) => {
            meta(&mut p.metadata);
            p.kind = "Pod".into();
            p.api_version = API_VERSION.into();
            // Users do not write status (kubectl writes `"status": {}`); of what the
            // uplink's cache holds only a terminal phase counts (`Pod::finished`).
            p.status = p.status.take().and_then(|s| {
                s.phase
                    .filter(|ph| matches!(ph, PodPhase::Succeeded | PodPhase::Failed))
                    .map(|ph| PodStatus {
                        phase: Some(ph),
                        ..Default::default()
                    })
            });
            let spec = &mut p.spec;
            spec.termination_grace_period_seconds
                .get_or_insert(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
            for c in spec.init_containers.iter_mut().chain(&mut spec.containers) {
                container(c);
            }
            if spec.service_account_name.is_empty() {
                spec.service_account_name = std::mem::take(&mut spec.service_account);
            }
            spec.service_account.clear();
            for v in &mut spec.volumes {
                volume(v);
            }
        }
        Object::ConfigMap(c) => {
            meta(&mut c.metadata);
            c.kind = "ConfigMap".into();
            c.api_version = API_VERSION.into();
        }
        Object::Secret(s) => {
            meta(&mut s.metadata);
            s.kind = "Secret".into();
            s.api_version = API_VERSION.into();
            if s.type_.is_empty() {
                s.type_ = TYPE_OPAQUE.into();
            }
            // As the API server: stringData is merged into data (and wins), then dropped.
            for (k, v) in std::mem::take(&mut s.string_data) {
                s.data.insert(k, super::base64::encode(v.as_bytes()));
            }
        }
    }
}

fn meta(m: &mut ObjectMeta) {
    if m.namespace.is_empty() {
        m.namespace = DEFAULT_NAMESPACE.into();
    }
}

/// `defaultMode` 0644 for every file volume, a token's lifetime, a fieldRef's version.
fn volume(v: &mut Volume) {
    if let Some(s) = &mut v.config_map {
        s.default_mode.get_or_insert(0o644);
    }
    if let Some(s) = &mut v.secret {
        s.default_mode.get_or_insert(0o644);
    }
    if let Some(d) = &mut v.downward_api {
        d.default_mode.get_or_insert(projected::DEFAULT_MODE);
        d.items.iter_mut().for_each(downward_api_file);
    }
    let Some(p) = &mut v.projected else { return };
    p.default_mode.get_or_insert(projected::DEFAULT_MODE);
    for s in &mut p.sources {
        if let Some(t) = &mut s.service_account_token {
            t.expiration_seconds
                .get_or_insert(projected::DEFAULT_EXPIRATION_SECONDS);
        }
        if let Some(d) = &mut s.downward_api {
            d.items.iter_mut().for_each(downward_api_file);
        }
    }
}

fn downward_api_file(f: &mut DownwardApiVolumeFile) {
    if let Some(r) = f.field_ref.as_mut().filter(|r| r.api_version.is_empty()) {
        r.api_version = API_VERSION.into();
    }
    if let Some(r) = &mut f.resource_field_ref {
        unset_zero_divisor(r);
    }
}

/// The API server writes an unset `resourceFieldRef.divisor` as `"0"` (the zero
/// Quantity), and its validation takes 0 as unset: read it as the default divisor 1.
fn unset_zero_divisor(r: &mut ResourceFieldSelector) {
    if r.divisor.as_ref().is_some_and(|d| d.nanos() == 0) {
        r.divisor = None;
    }
}

fn container(c: &mut Container) {
    for r in c
        .env
        .iter_mut()
        .filter_map(|e| e.value_from.as_mut()?.resource_field_ref.as_mut())
    {
        unset_zero_divisor(r);
    }
    if c.image_pull_policy.is_none() {
        c.image_pull_policy = Some(pull_policy_for(&c.image));
    }
    if c.termination_message_path.is_empty() {
        c.termination_message_path = DEFAULT_TERMINATION_MESSAGE_PATH.into();
    }
    let probes = [
        &mut c.liveness_probe,
        &mut c.readiness_probe,
        &mut c.startup_probe,
    ];
    for p in probes.into_iter().flatten() {
        if let Some(h) = &mut p.http_get {
            if h.path.is_empty() {
                h.path = "/".into();
            }
        }
        // Zero means "not set" for these, as in the API server's defaulting.
        for (field, default) in [
            (&mut p.timeout_seconds, 1),
            (&mut p.period_seconds, 10),
            (&mut p.success_threshold, 1),
            (&mut p.failure_threshold, 3),
        ] {
            if *field == 0 {
                *field = default;
            }
        }
    }
}

/// `Always` for `:latest` or an untagged image (and no digest), else `IfNotPresent`.
pub fn pull_policy_for(image: &str) -> PullPolicy {
    if image.contains('@') {
        return PullPolicy::IfNotPresent;
    }
    // The tag is after the last ':' that comes after the last '/' (a port is not a tag).
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, "latest")) | None => PullPolicy::Always,
        Some(_) => PullPolicy::IfNotPresent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policy_from_tag() {
        for (image, want) in [
            ("nginx", PullPolicy::Always),
            ("nginx:latest", PullPolicy::Always),
            ("nginx:1.25", PullPolicy::IfNotPresent),
            ("localhost:5000/app", PullPolicy::Always),
            ("localhost:5000/app:v1", PullPolicy::IfNotPresent),
            ("r.io/app@sha256:abcd", PullPolicy::IfNotPresent),
        ] {
            assert_eq!(pull_policy_for(image), want, "{image}");
        }
    }
}
