//! Validation before anything is stored: every problem is reported, each as
//! `field.path: what was expected, got what`.

use super::Object;

/// All problems with `obj` (already defaulted); empty when it is valid.
pub fn validate(obj: &Object) -> Vec<String> {
    let mut errs = Vec::new();
    let m = obj.meta();
    if m.name.is_empty() {
        errs.push("metadata.name: required".into());
    }
    if let Object::Pod(p) = obj {
        if p.spec.containers.is_empty() {
            errs.push("spec.containers: at least one container is required".into());
        }
    }
    errs
}
