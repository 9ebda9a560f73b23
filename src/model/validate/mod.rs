//! Validation before anything is stored, following the API server's rules for the
//! fields the agent uses. Every problem is reported (not only the first), each as
//! `field.path: what was expected, got what`. Names are checked here before any of them
//! is used to build a file path.
//!
//! One file per concern, each adding its checks to `Errors`: `metadata` (every
//! object), `pod` (pod-level fields and volumes), `projected` (projected and
//! downwardAPI volumes), `container` (each container),
//! `handlers` (probes and lifecycle hooks), `security` (seccomp and AppArmor),
//! `configmap_secret` (their data); the syntax they share is in `names` and
//! `paths`, pure functions tested at their edges. The messages are pinned by
//! `tests/validation.rs` and `tests/manifests/`.

use super::Object;
use std::fmt::Display;

mod configmap_secret;
mod container;
mod handlers;
mod invalid;
mod metadata;
mod names;
mod paths;
mod pod;
mod projected;
mod security;

pub use invalid::{Invalid, Rule};
pub use names::{dns1123_label, dns1123_subdomain, is_label_value, is_qualified_name};

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

/// The collected messages, and the checks every concern uses.
#[derive(Default)]
struct Errors(Vec<String>);

impl Errors {
    fn add(&mut self, path: impl Display, msg: impl Display) {
        self.0.push(format!("{path}: {msg}"));
    }

    /// `path: required` when `value` is empty, else the `check` result.
    fn name(&mut self, path: &str, value: &str, check: fn(&str) -> Result<(), Invalid>) {
        if value.is_empty() {
            self.add(path, "required");
        } else if let Err(e) = check(value) {
            self.add(path, e);
        }
    }

    /// `path: must be LO-HI` unless `lo <= value <= hi`.
    fn range(&mut self, path: impl Display, value: i64, lo: i64, hi: i64) {
        if value < lo || value > hi {
            self.add(path, format_args!("must be {lo}-{hi}, got {value}"));
        }
    }

    /// `path: must be greater than or equal to 0` when `value` is negative.
    fn non_negative(&mut self, path: impl Display, value: i64) {
        if value < 0 {
            self.add(
                path,
                format_args!("must be greater than or equal to 0, got {value}"),
            );
        }
    }

    /// A uid or gid, when set: 0 to 2^31-1, as the API server bounds them.
    fn id(&mut self, path: impl Display, id: Option<i64>) {
        if let Some(id) = id {
            self.range(path, id, 0, i64::from(i32::MAX));
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
}
