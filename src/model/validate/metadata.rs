//! `metadata` of every object, as the API server's `ValidateObjectMeta` checks it: the
//! name a DNS-1123 subdomain and the namespace a label (both become file names), label
//! and annotation keys qualified names, label values within their syntax, annotations
//! at most 256 KiB in all; plus the uid, which becomes a directory name, and the
//! creation timestamp, which must parse.

use super::names::{dns1123_label, dns1123_subdomain};
use super::names::{is_label_value, is_safe_uid, qualified_name};
use super::Errors;
use crate::model::meta::ObjectMeta;

/// Kubernetes' limit on the total size of an object's annotations.
const MAX_ANNOTATION_BYTES: usize = 256 * 1024;

/// The message for a label or annotation key that is not a qualified name.
const QUALIFIED_KEY: &str = "key must be a qualified name (an optional DNS-1123 subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)";

impl Errors {
    /// Every object's metadata.
    pub(super) fn meta(&mut self, m: &ObjectMeta) {
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
            if let Err(e) = crate::model::time::parse_rfc3339(t) {
                self.add("metadata.creationTimestamp", e);
            }
        }
    }
}
