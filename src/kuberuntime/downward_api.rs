//! The files of a downwardAPI volume (or a projected volume's downwardAPI source), as
//! kubelet writes them: the pod's name, namespace or uid as they are; all labels or all
//! annotations as `key="value"` lines sorted by key (the value quoted as Go's `%q`
//! does; no newline after the last line); one label or annotation by key
//! (`metadata.labels['app']`, empty when absent); a container's resource limit or
//! request divided by the divisor and rounded up (as in env; a limit the container
//! does not set reads as the node's allocatable).
//!
//! The files are recomputed on every sync, so a label or annotation changed by
//! re-applying the pod reaches the container's files without a restart.

use super::atomic_writer::FileProjection;
use super::SyncError;
use crate::model::projected::DownwardApiVolumeFile;
use crate::model::NodeResources;
use crate::model::Pod;
use std::collections::BTreeMap;
use std::fmt::{self, Write};

/// The files of `items`; `default_mode` for those that set no mode. The error names
/// the item by its path.
pub fn files(
    pod: &Pod,
    items: &[DownwardApiVolumeFile],
    default_mode: u32,
    alloc: &NodeResources,
) -> Result<Vec<FileProjection>, ItemError> {
    items
        .iter()
        .map(|it| {
            let data = value(pod, it, alloc).map_err(|why| ItemError {
                path: it.path.clone(),
                why,
            })?;
            Ok(FileProjection {
                path: it.path.clone(),
                data: data.into_bytes(),
                mode: it.mode.map_or(default_mode, |m| (m & 0o777) as u32),
            })
        })
        .collect()
}

/// The content of one file.
fn value(
    pod: &Pod,
    it: &DownwardApiVolumeFile,
    alloc: &NodeResources,
) -> Result<String, ValueError> {
    if let Some(f) = &it.field_ref {
        return field(pod, &f.field_path);
    }
    let Some(r) = &it.resource_field_ref else {
        return Err(ValueError::NoSource);
    };
    let c = pod
        .all_containers()
        .find(|c| c.name == r.container_name)
        .ok_or_else(|| ValueError::NoContainer(r.container_name.clone()))?;
    super::env::resource_value(c, r, alloc).map_err(ValueError::Resource)
}

/// A pod field allowed in volumes.
fn field(pod: &Pod, path: &str) -> Result<String, ValueError> {
    let m = &pod.metadata;
    let subscript = |prefix: &str| {
        path.strip_prefix(prefix)
            .and_then(|r| r.strip_suffix("']"))
            .map(str::to_string)
    };
    Ok(match path {
        "metadata.name" => m.name.clone(),
        "metadata.namespace" => m.namespace.clone(),
        "metadata.uid" => m.uid.clone(),
        "metadata.labels" => format_map(&m.labels),
        "metadata.annotations" => format_map(&m.annotations),
        _ => {
            if let Some(k) = subscript("metadata.labels['") {
                m.labels.get(&k).cloned().unwrap_or_default()
            } else if let Some(k) = subscript("metadata.annotations['") {
                m.annotations.get(&k).cloned().unwrap_or_default()
            } else {
                return Err(ValueError::UnsupportedField(path.to_string()));
            }
        }
    })
}

/// `k="v"` lines in key order, without a final newline (kubelet's `FormatMap`).
pub fn format_map(map: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(k);
        out.push('=');
        go_quote(&mut out, v);
    }
    out
}

/// Appends `s` quoted as Go's `%q`: `"` and `\` escaped, the usual `\n`-style escapes,
/// other control characters as `\xNN` (ASCII) or `\uNNNN`. Unlike Go, non-control
/// characters Go deems unprintable (format characters such as U+200B) are kept.
fn go_quote(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Why the file of a downwardAPI item cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemError {
    /// The item's path.
    pub path: String,
    /// Why.
    pub why: ValueError,
}

/// Why an item's value cannot be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueError {
    /// The item has neither a fieldRef nor a resourceFieldRef.
    NoSource,
    /// Its resourceFieldRef names no container of the pod.
    NoContainer(String),
    /// Its resourceFieldRef cannot be read.
    Resource(SyncError),
    /// Its fieldRef is not one a volume may show.
    UnsupportedField(String),
}

impl fmt::Display for ItemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item {:?}: {}", self.path, self.why)
    }
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::NoSource => f.write_str("neither fieldRef nor resourceFieldRef"),
            ValueError::NoContainer(name) => write!(f, "no container {name:?} in the pod"),
            ValueError::Resource(e) => f.write_str(&e.message),
            ValueError::UnsupportedField(path) => write!(f, "unsupported fieldPath {path:?}"),
        }
    }
}

impl std::error::Error for ItemError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.why)
    }
}

impl std::error::Error for ValueError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ValueError::Resource(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::container::{ObjectFieldSelector, ResourceFieldSelector};
    use crate::model::{Container, Quantity};

    /// A node that reports no allocatable resources.
    const NONE: NodeResources = NodeResources {
        cpu_milli: 0,
        memory: 0,
        pids: 0,
        ephemeral_storage: 0,
    };

    fn pod() -> Pod {
        let mut p = Pod::default();
        p.metadata.name = "web".into();
        p.metadata.namespace = "edge".into();
        p.metadata.uid = "u-1".into();
        p.metadata.labels.insert("tier".into(), "front".into());
        p.metadata.labels.insert("app".into(), "web".into());
        p.metadata.annotations.insert(
            "note".into(),
            "say \"hi\"\n\tback\\slash\u{1b}é\u{85}".into(),
        );
        let mut c = Container {
            name: "app".into(),
            ..Default::default()
        };
        c.resources
            .limits
            .insert("cpu".into(), Quantity::parse("250m").unwrap());
        c.resources
            .requests
            .insert("memory".into(), Quantity::parse("3Mi").unwrap());
        p.spec.containers.push(c);
        p
    }

    fn field_item(path: &str, field: &str) -> DownwardApiVolumeFile {
        DownwardApiVolumeFile {
            path: path.into(),
            field_ref: Some(ObjectFieldSelector {
                api_version: "v1".into(),
                field_path: field.into(),
            }),
            ..Default::default()
        }
    }

    fn resource_item(path: &str, resource: &str, divisor: Option<&str>) -> DownwardApiVolumeFile {
        DownwardApiVolumeFile {
            path: path.into(),
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: "app".into(),
                resource: resource.into(),
                divisor: divisor.map(|d| Quantity::parse(d).unwrap()),
            }),
            mode: Some(0o400),
            ..Default::default()
        }
    }

    fn text(files: &[FileProjection], path: &str) -> String {
        let f = files.iter().find(|f| f.path == path).unwrap();
        String::from_utf8(f.data.clone()).unwrap()
    }

    #[test]
    fn fields_as_kubelet_writes_them() {
        let items = [
            field_item("name", "metadata.name"),
            field_item("ns", "metadata.namespace"),
            field_item("uid", "metadata.uid"),
            field_item("labels", "metadata.labels"),
            field_item("annotations", "metadata.annotations"),
            field_item("app", "metadata.labels['app']"),
            field_item("missing", "metadata.annotations['nope']"),
        ];
        let files = files(&pod(), &items, 0o644, &NONE).unwrap();
        assert_eq!(text(&files, "name"), "web");
        assert_eq!(text(&files, "ns"), "edge");
        assert_eq!(text(&files, "uid"), "u-1");
        assert_eq!(text(&files, "labels"), "app=\"web\"\ntier=\"front\"");
        assert_eq!(
            text(&files, "annotations"),
            r#"note="say \"hi\"\n\tback\\slash\x1bé\u0085""#
        );
        assert_eq!(text(&files, "app"), "web");
        assert_eq!(text(&files, "missing"), "");
        assert!(files.iter().all(|f| f.mode == 0o644));
        let empty = Pod::default();
        let files = super::files(&empty, &items[3..4], 0o644, &NONE).unwrap();
        assert_eq!(text(&files, "labels"), "");
    }

    #[test]
    fn resources_are_divided_and_rounded_up() {
        let items = [
            resource_item("cpu", "limits.cpu", Some("1m")),
            resource_item("cores", "limits.cpu", None),
            resource_item("mem", "requests.memory", Some("1Mi")),
            resource_item("unset", "limits.memory", None),
        ];
        let files = files(&pod(), &items, 0o644, &NONE).unwrap();
        assert_eq!(text(&files, "cpu"), "250");
        assert_eq!(text(&files, "cores"), "1");
        assert_eq!(text(&files, "mem"), "3");
        assert_eq!(text(&files, "unset"), "0");
        assert!(files.iter().all(|f| f.mode == 0o400));
        // A limit the container does not set reads as the node's allocatable.
        let node = NodeResources {
            cpu_milli: 2000,
            memory: 3 << 30,
            pids: 0,
            ephemeral_storage: 0,
        };
        let files = super::files(&pod(), &items[3..4], 0o644, &node).unwrap();
        assert_eq!(text(&files, "unset"), (3u64 << 30).to_string());
        let mut other = resource_item("x", "limits.cpu", None);
        other.resource_field_ref.as_mut().unwrap().container_name = "gone".into();
        let e = super::files(&pod(), &[other], 0o644, &NONE)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "item \"x\": no container \"gone\" in the pod");
        let bad = field_item("n", "spec.nodeName");
        let e = super::files(&pod(), &[bad], 0o644, &NONE)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "item \"n\": unsupported fieldPath \"spec.nodeName\"");
    }
}
