//! Matching image references (as pods and configs write them) to the runtime's images.
//!
//! containerd lists each image with its id (`sha256:...`), fully qualified tags
//! (`docker.io/library/busybox:1.36`) and digests (`docker.io/library/busybox@sha256:...`).
//! Pods say `busybox`, `busybox:1.36` or `registry:5000/app@sha256:...`; containers report
//! `image_ref` as the id or a digest reference. [`ImageIndex`] maps every such name to the
//! image id so each lookup is a hash probe.

use crate::cri::pb;
use std::collections::HashMap;

/// Docker Hub's registry name as containerd writes it.
const DOCKER_HUB: &str = "docker.io";

/// Normalizes a docker-style reference the way containerd names images: registry added
/// (`docker.io` when the first component is not a host), `library/` for Docker Hub
/// single-component names, `:latest` when neither tag nor digest is given. Image ids
/// (`sha256:...`) are returned unchanged.
pub fn normalize(reference: &str) -> String {
    if reference.starts_with("sha256:") {
        return reference.to_string();
    }
    let (name, digest) = match reference.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (reference, None),
    };
    let (domain, path) = match name.split_once('/') {
        Some((first, rest)) if is_host(first) => (first, rest),
        _ => (DOCKER_HUB, name),
    };
    let domain = if domain == "index.docker.io" {
        DOCKER_HUB
    } else {
        domain
    };
    let last = path.rsplit('/').next().unwrap_or(path);
    let has_tag = last.contains(':');
    let mut out = String::with_capacity(reference.len() + 24);
    out.push_str(domain);
    out.push('/');
    if domain == DOCKER_HUB && !path.contains('/') {
        out.push_str("library/");
    }
    out.push_str(path);
    match digest {
        Some(d) => {
            out.push('@');
            out.push_str(d);
        }
        None if !has_tag => out.push_str(":latest"),
        None => {}
    }
    out
}

/// The registry host a reference pulls from, as containerd resolves it
/// (`busybox` -> `docker.io`, `127.0.0.1:5000/app:1` -> `127.0.0.1:5000`).
pub fn registry_host(reference: &str) -> &str {
    match reference.split_once('/') {
        Some(("index.docker.io", _)) => DOCKER_HUB,
        Some((first, _)) if is_host(first) => first,
        _ => DOCKER_HUB,
    }
}

/// Whether the first path component of a reference names a registry host.
fn is_host(first: &str) -> bool {
    first.contains('.') || first.contains(':') || first == "localhost"
}

/// The `name@digest` form of a reference that carries a digest, dropping a tag
/// (`repo:tag@sha256:..` is stored by containerd as `repo@sha256:..`).
fn digest_form(normalized: &str) -> Option<String> {
    let (name, digest) = normalized.split_once('@')?;
    let slash = name.rfind('/').map_or(0, |i| i + 1);
    let name = match name.get(slash..).and_then(|last| last.rfind(':')) {
        Some(colon) => name.get(..slash + colon).unwrap_or(name),
        None => name,
    };
    Some(format!("{name}@{digest}"))
}

/// Every name of every listed image, mapped to the image id.
pub struct ImageIndex<'a> {
    by_name: HashMap<&'a str, &'a str>,
}

impl<'a> ImageIndex<'a> {
    /// An index of the runtime's `images`.
    pub fn new(images: &'a [pb::Image]) -> Self {
        let names: usize = images
            .iter()
            .map(|i| 1 + i.repo_tags.len() + i.repo_digests.len())
            .sum();
        let mut by_name = HashMap::with_capacity(names);
        for img in images {
            by_name.insert(img.id.as_str(), img.id.as_str());
            for n in img.repo_tags.iter().chain(&img.repo_digests) {
                by_name.insert(n.as_str(), img.id.as_str());
            }
        }
        ImageIndex { by_name }
    }

    /// The id of the image `reference` names, if it is listed. Tries the reference as
    /// written (ids, already-normalized names: no allocation), then normalized, then as a
    /// bare hex id.
    pub fn resolve(&self, reference: &str) -> Option<&'a str> {
        if reference.is_empty() {
            return None;
        }
        if let Some(id) = self.by_name.get(reference) {
            return Some(id);
        }
        let norm = normalize(reference);
        if let Some(id) = self.by_name.get(norm.as_str()) {
            return Some(id);
        }
        if let Some(d) = digest_form(&norm) {
            if let Some(id) = self.by_name.get(d.as_str()) {
                return Some(id);
            }
        }
        if reference.len() == 64 && reference.bytes().all(|b| b.is_ascii_hexdigit()) {
            return self
                .by_name
                .get(format!("sha256:{reference}").as_str())
                .copied();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_like_containerd() {
        let cases = [
            ("busybox", "docker.io/library/busybox:latest"),
            ("busybox:1.36", "docker.io/library/busybox:1.36"),
            ("user/app", "docker.io/user/app:latest"),
            ("index.docker.io/user/app:v1", "docker.io/user/app:v1"),
            ("localhost/app", "localhost/app:latest"),
            ("127.0.0.1:5000/app:v2", "127.0.0.1:5000/app:v2"),
            ("registry:5000/a/b", "registry:5000/a/b:latest"),
            ("quay.io/x/y@sha256:ab", "quay.io/x/y@sha256:ab"),
            ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
            ("sha256:0123", "sha256:0123"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input), want, "{input}");
        }
    }

    #[test]
    fn registry_hosts() {
        for (input, want) in [
            ("busybox", "docker.io"),
            ("user/app:1", "docker.io"),
            ("index.docker.io/user/app", "docker.io"),
            ("localhost/app", "localhost"),
            ("127.0.0.1:5000/app:v2", "127.0.0.1:5000"),
            ("registry:5000/a/b", "registry:5000"),
            ("quay.io/x/y@sha256:ab", "quay.io"),
        ] {
            assert_eq!(registry_host(input), want, "{input}");
        }
    }

    fn img(id: &str, tags: &[&str], digests: &[&str]) -> pb::Image {
        pb::Image {
            id: id.into(),
            repo_tags: tags.iter().map(|s| s.to_string()).collect(),
            repo_digests: digests.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn resolves_tags_digests_and_ids() {
        let hex = "a".repeat(64);
        let id_a = format!("sha256:{hex}");
        let images = [
            img(
                &id_a,
                &[
                    "docker.io/library/busybox:latest",
                    "docker.io/library/busybox:1.36",
                ],
                &["docker.io/library/busybox@sha256:dd"],
            ),
            img("sha256:b", &["127.0.0.1:5000/app:v2"], &[]),
        ];
        let ix = ImageIndex::new(&images);
        assert_eq!(ix.resolve("busybox"), Some(id_a.as_str()));
        assert_eq!(ix.resolve("busybox:1.36"), Some(id_a.as_str()));
        assert_eq!(
            ix.resolve("docker.io/library/busybox@sha256:dd"),
            Some(id_a.as_str())
        );
        assert_eq!(ix.resolve("busybox@sha256:dd"), Some(id_a.as_str()));
        assert_eq!(ix.resolve("busybox:1.36@sha256:dd"), Some(id_a.as_str()));
        assert_eq!(ix.resolve(&id_a), Some(id_a.as_str()));
        assert_eq!(ix.resolve(&hex), Some(id_a.as_str()));
        assert_eq!(ix.resolve("127.0.0.1:5000/app:v2"), Some("sha256:b"));
        assert_eq!(ix.resolve("127.0.0.1:5000/app"), None);
        assert_eq!(ix.resolve("busybox:1.35"), None);
        assert_eq!(ix.resolve(""), None);
    }
}
