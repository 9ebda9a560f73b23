//! Where each stored thing lives under the state directory, and the last check on names
//! before they become paths.
//!
//! Object files are named `NAMESPACE_NAME.json`. Both parts are DNS-1123 names (checked by
//! the model before anything reaches the store), which cannot contain `_`, so the name
//! splits back unambiguously at the first `_`. [`file_name`] still refuses anything that
//! could escape the directory (`/`, NUL, `.`/`..`, a leading dot) or exceed the 255-byte
//! file name limit, so no caller can turn a bad name into a bad path.

use crate::model::Object;
use std::fmt;
use std::path::{Path, PathBuf};

/// The kinds of object the store keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Pods.
    Pod,
    /// ConfigMaps.
    ConfigMap,
    /// Secrets.
    Secret,
}

impl Kind {
    /// Every kind, in the order of their directories.
    pub const ALL: [Kind; 3] = [Kind::Pod, Kind::ConfigMap, Kind::Secret];

    /// The directory below `desired/` holding this kind.
    pub fn dir_name(self) -> &'static str {
        match self {
            Kind::Pod => "pods",
            Kind::ConfigMap => "configmaps",
            Kind::Secret => "secrets",
        }
    }

    /// The lower-case singular kubectl uses in `pod/NAME created`.
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Pod => "pod",
            Kind::ConfigMap => "configmap",
            Kind::Secret => "secret",
        }
    }

    /// The `kind` field of the JSON object.
    pub fn api_kind(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::ConfigMap => "ConfigMap",
            Kind::Secret => "Secret",
        }
    }

    /// Parses the resource words kubectl accepts: singular, plural and short names.
    pub fn from_resource(word: &str) -> Option<Kind> {
        match word.to_ascii_lowercase().as_str() {
            "pod" | "pods" | "po" => Some(Kind::Pod),
            "configmap" | "configmaps" | "cm" => Some(Kind::ConfigMap),
            "secret" | "secrets" => Some(Kind::Secret),
            _ => None,
        }
    }

    /// Secrets get 0600 files in a 0700 directory; everything else 0644/0755.
    pub fn is_secret(self) -> bool {
        self == Kind::Secret
    }
}

impl Kind {
    /// The kind of a parsed object.
    pub fn of(obj: &Object) -> Kind {
        match obj {
            Object::Pod(_) => Kind::Pod,
            Object::ConfigMap(_) => Kind::ConfigMap,
            Object::Secret(_) => Kind::Secret,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.resource())
    }
}

/// Desired objects, one directory per kind.
pub const DESIRED_DIR: &str = "desired";
/// Objects from the cluster (the uplink's cache), one directory per kind.
pub const CLUSTER_DIR: &str = "cluster";
/// Pod status files written by the agent.
pub const STATUS_DIR: &str = "status";
/// Files that did not parse, moved aside with a timestamp.
pub const QUARANTINE_DIR: &str = "quarantine";
/// Suffix of every object and status file.
pub const SUFFIX: &str = ".json";
/// The longest file name Linux filesystems accept.
const NAME_MAX: usize = 255;

/// The paths of one state directory, seen from one of its object trees (`desired/`,
/// or `cluster/` for the uplink's cache: same files, same rules).
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
    tree: &'static str,
}

impl Layout {
    /// The layout of `root`'s `desired/` tree.
    pub fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
            tree: DESIRED_DIR,
        }
    }

    /// The same state directory's `cluster/` tree.
    pub fn cluster(&self) -> Layout {
        Layout {
            root: self.root.clone(),
            tree: CLUSTER_DIR,
        }
    }

    /// The state directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `STATE/desired/KIND/` (or `STATE/cluster/KIND/`).
    pub fn kind_dir(&self, kind: Kind) -> PathBuf {
        self.root.join(self.tree).join(kind.dir_name())
    }

    /// `STATE/status/`.
    pub fn status_dir(&self) -> PathBuf {
        self.root.join(STATUS_DIR)
    }

    /// `STATE/quarantine/`.
    pub fn quarantine_dir(&self) -> PathBuf {
        self.root.join(QUARANTINE_DIR)
    }
}

/// A name that cannot be stored, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadName(pub String);

/// The file name `NS_NAME.json` for an object, after checking that neither part can
/// leave the directory or make the split ambiguous.
pub fn file_name(namespace: &str, name: &str) -> Result<String, BadName> {
    check_part("namespace", namespace)?;
    check_part("name", name)?;
    let file = format!("{namespace}_{name}{SUFFIX}");
    if file.len() > NAME_MAX {
        return Err(BadName(format!(
            "namespace and name together are {} bytes; at most {} fit in a file name",
            namespace.len() + name.len(),
            NAME_MAX - 1 - SUFFIX.len()
        )));
    }
    Ok(file)
}

/// The path-boundary check: non-empty, no `/`, NUL or `_`, not starting with a dot
/// (which also rules out `.`, `..` and temp names).
fn check_part(what: &str, s: &str) -> Result<(), BadName> {
    let bad = |why: &str| Err(BadName(format!("{what} {s:?} {why}")));
    if s.is_empty() {
        return bad("is empty");
    }
    if s.starts_with('.') {
        return bad("must not start with '.'");
    }
    if let Some(c) = s.chars().find(|c| matches!(c, '/' | '\0' | '_' | '\\')) {
        return bad(&format!("must not contain {c:?}"));
    }
    Ok(())
}

/// Splits a stored file name back into `(namespace, name)`; `None` for anything that is
/// not an object file (temp files, stray files).
pub fn parse_file_name(file: &str) -> Option<(&str, &str)> {
    let stem = file.strip_suffix(SUFFIX)?;
    let (ns, name) = stem.split_once('_')?;
    if check_part("namespace", ns).is_err() || check_part("name", name).is_err() {
        return None;
    }
    Some((ns, name))
}

/// The `(namespace, name)` of a directory's object files, sorted; other entries skipped.
pub fn sorted_names(entries: std::fs::ReadDir) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = entries
        .filter_map(|e| {
            let f = e.ok()?.file_name().into_string().ok()?;
            let (ns, name) = parse_file_name(&f)?;
            Some((ns.to_string(), name.to_string()))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let f = file_name("kube-system", "web.v1").unwrap();
        assert_eq!(f, "kube-system_web.v1.json");
        assert_eq!(parse_file_name(&f), Some(("kube-system", "web.v1")));
    }

    #[test]
    fn path_escapes_are_refused() {
        for (ns, name) in [
            ("default", "../etc"),
            ("default", ".."),
            ("..", "x"),
            ("default", "a/b"),
            ("default", "a\0b"),
            ("a_b", "c"),
            ("default", ""),
            ("", "x"),
            ("default", ".tmp-1-2"),
        ] {
            assert!(file_name(ns, name).is_err(), "{ns:?}/{name:?}");
        }
    }

    #[test]
    fn too_long_names_are_refused_with_the_limit() {
        let long = "a".repeat(250);
        let e = file_name("default", &long).unwrap_err();
        assert!(e.0.contains("at most 249"), "{}", e.0);
        assert!(file_name("default", &"a".repeat(241)).is_ok());
    }

    #[test]
    fn stray_files_do_not_parse() {
        for f in [
            ".tmp-1-0",
            "README",
            "x.json",
            "_x.json",
            "a_.json",
            "a_b.json.bak",
        ] {
            assert_eq!(parse_file_name(f), None, "{f}");
        }
    }

    #[test]
    fn resources_parse_like_kubectl() {
        assert_eq!(Kind::from_resource("po"), Some(Kind::Pod));
        assert_eq!(Kind::from_resource("ConfigMaps"), Some(Kind::ConfigMap));
        assert_eq!(Kind::from_resource("secret"), Some(Kind::Secret));
        assert_eq!(Kind::from_resource("node"), None);
    }
}
