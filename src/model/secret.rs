//! v1.Secret, and image pull credentials from `kubernetes.io/dockerconfigjson` (and the
//! older `kubernetes.io/dockercfg`) secrets, matched to an image the way kubelet's
//! credential keyring does.

use super::meta::ObjectMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const TYPE_OPAQUE: &str = "Opaque";
pub const TYPE_DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
pub const TYPE_DOCKERCFG: &str = "kubernetes.io/dockercfg";
/// The data key holding a `~/.docker/config.json` (`{"auths": {...}}`).
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";
/// The data key holding a legacy `~/.dockercfg` (`{"registry": {...}}`).
pub const DOCKERCFG_KEY: &str = ".dockercfg";

/// A v1 Secret. `data` values are base64; `stringData` is merged into `data` when the
/// secret is parsed, as the API server does, so stored secrets only have `data`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Secret {
    pub kind: String,
    pub api_version: String,
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub string_data: BTreeMap<String, String>,
    /// `Opaque` when absent; any string is allowed, as in Kubernetes.
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

impl Secret {
    /// The decoded bytes of `key` (`stringData` wins, as on the API server).
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        if let Some(v) = self.string_data.get(key) {
            return Some(v.clone().into_bytes());
        }
        super::base64::decode(self.data.get(key)?).ok()
    }

    /// Every key with its decoded bytes, in key order.
    pub fn entries(&self) -> Vec<(String, Vec<u8>)> {
        let mut keys: Vec<&String> = self.data.keys().chain(self.string_data.keys()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .filter_map(|k| Some((k.clone(), self.get(k)?)))
            .collect()
    }

    /// The registry entries of a docker config secret, keyed as written; empty for other
    /// types. The error says why the config does not parse.
    pub fn registry_entries(&self) -> Result<Vec<(String, RegistryAuth)>, String> {
        let (key, nested) = match self.type_.as_str() {
            TYPE_DOCKER_CONFIG_JSON => (DOCKER_CONFIG_JSON_KEY, true),
            TYPE_DOCKERCFG => (DOCKERCFG_KEY, false),
            _ => return Ok(Vec::new()),
        };
        let raw = self
            .get(key)
            .ok_or_else(|| format!("data[{key}]: required for type {}", self.type_))?;
        let what = if nested {
            "a docker config.json"
        } else {
            "a dockercfg"
        };
        let not = |e: serde_json::Error| format!("data[{key}]: not {what}: {e}");
        let bytes = super::nulls::without_null_members(&raw).map_err(not)?;
        let entries: BTreeMap<String, DockerConfigEntry> = if nested {
            serde_json::from_slice::<DockerConfigJson>(&bytes)
                .map_err(not)?
                .auths
        } else {
            serde_json::from_slice(&bytes).map_err(not)?
        };
        let mut out = Vec::new();
        for (registry, e) in entries {
            out.push((
                registry,
                e.into_auth().map_err(|m| format!("data[{key}]: {m}"))?,
            ));
        }
        Ok(out)
    }
}

/// Credentials for one registry, as the CRI `AuthConfig` wants them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryAuth {
    pub username: String,
    pub password: String,
    /// base64 of `username:password`, when the config gave it.
    pub auth: String,
    pub identity_token: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DockerConfigJson {
    auths: BTreeMap<String, DockerConfigEntry>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DockerConfigEntry {
    username: String,
    password: String,
    auth: String,
    identitytoken: String,
}

impl DockerConfigEntry {
    /// As kubelet: `auth` (base64 `user:pass`) fills username and password.
    fn into_auth(self) -> Result<RegistryAuth, String> {
        let (mut username, mut password) = (self.username, self.password);
        if !self.auth.is_empty() {
            let raw = super::base64::decode(&self.auth).map_err(|e| format!("auth: {e}"))?;
            let text = String::from_utf8(raw).map_err(|_| "auth: not UTF-8".to_string())?;
            let (u, p) = text
                .split_once(':')
                .ok_or("auth: expected base64 of \"username:password\"")?;
            (username, password) = (u.to_owned(), p.to_owned());
        }
        Ok(RegistryAuth {
            username,
            password,
            auth: self.auth,
            identity_token: self.identitytoken,
        })
    }
}

/// The host everyone means by "Docker Hub"; images without a registry pull from it.
const DEFAULT_REGISTRY_HOST: &str = "index.docker.io";

/// Credentials to try, most specific first, for pulling `image` with the given pull
/// secrets (kubelet's keyring rules): each configured registry key is normalized
/// (scheme and a `/v1/` or `/v2/` path dropped), keys are tried in reverse sorted order,
/// and a key matches when ports are equal, hosts have as many dot-separated labels and
/// each label glob-matches (`*.example.com`), and the key's path prefixes the image's.
/// If none matches and the image is a Docker Hub image, the `index.docker.io` entry is used.
/// Secrets that are not docker configs, or do not parse, are skipped.
pub fn pull_credentials(secrets: &[&Secret], image: &str) -> Vec<RegistryAuth> {
    let mut keyring: Vec<(String, RegistryAuth)> = Vec::new();
    for s in secrets {
        match s.registry_entries() {
            Ok(entries) => keyring.extend(entries.into_iter().map(|(k, a)| (normalize_key(&k), a))),
            Err(e) => log::warn!(
                "secret {}/{}: {e}; not used for image pulls",
                s.metadata.namespace,
                s.metadata.name
            ),
        }
    }
    // Stable sort: for equal keys the secrets' order is kept, as kubelet appends.
    keyring.sort_by(|a, b| b.0.cmp(&a.0));
    let found: Vec<RegistryAuth> = keyring
        .iter()
        .filter(|(k, _)| key_matches(k, image))
        .map(|(_, a)| a.clone())
        .collect();
    if !found.is_empty() || !is_default_registry(image) {
        return found;
    }
    keyring
        .into_iter()
        .filter(|(k, _)| k == DEFAULT_REGISTRY_HOST)
        .map(|(_, a)| a)
        .collect()
}

/// `https://index.docker.io/v1/` -> `index.docker.io`; `http://r.io/v2/team` -> `r.io/team`.
fn normalize_key(key: &str) -> String {
    let rest = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let (host, path) = split_host_path(rest);
    let path = match path.get(..4) {
        Some("/v1/" | "/v2/") => &path[3..],
        _ => path,
    };
    if path.is_empty() || path == "/" {
        host.to_owned()
    } else {
        format!("{host}{path}")
    }
}

/// Splits `host[:port]/path` at the first `/` (the path keeps it).
fn split_host_path(s: &str) -> (&str, &str) {
    s.split_at(s.find('/').unwrap_or(s.len()))
}

/// Splits `host:port` into labels and the port (`""` when absent).
fn split_host_port(host: &str) -> (Vec<&str>, &str) {
    let (h, port) = match host.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, p),
        _ => (host, ""),
    };
    (h.split('.').collect(), port)
}

fn key_matches(key: &str, image: &str) -> bool {
    let (khost, kpath) = split_host_path(key);
    let (ihost, ipath) = split_host_path(image);
    let (klabels, kport) = split_host_port(khost);
    let (ilabels, iport) = split_host_port(ihost);
    kport == iport
        && klabels.len() == ilabels.len()
        && ipath.starts_with(kpath)
        && klabels
            .iter()
            .zip(&ilabels)
            .all(|(k, i)| glob(k.as_bytes(), i.as_bytes()))
}

/// Shell-style match of one host label: `*` any run, `?` one byte (no `/` in labels).
fn glob(pat: &[u8], s: &[u8]) -> bool {
    match pat.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && glob(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && glob(rest, &s[1..]),
    }
}

/// Whether `image` pulls from Docker Hub: no registry part (`nginx`, `library/nginx`,
/// `user/app`) or `docker.io/...` / `index.docker.io/...`.
fn is_default_registry(image: &str) -> bool {
    match image.split_once('/') {
        None => !image.is_empty(),
        Some(("", _)) => false,
        Some((first, _)) => {
            first == "docker.io" || first == DEFAULT_REGISTRY_HOST || !first.contains(['.', ':'])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::base64;

    fn docker_secret(name: &str, auths: &str) -> Secret {
        let mut s = Secret {
            type_: TYPE_DOCKER_CONFIG_JSON.into(),
            ..Default::default()
        };
        s.metadata.name = name.into();
        s.data.insert(
            DOCKER_CONFIG_JSON_KEY.into(),
            base64::encode(format!("{{\"auths\":{auths}}}").as_bytes()),
        );
        s
    }

    fn users(secrets: &[&Secret], image: &str) -> Vec<String> {
        pull_credentials(secrets, image)
            .into_iter()
            .map(|a| a.username)
            .collect()
    }

    #[test]
    fn keys_are_normalized_like_kubelet() {
        assert_eq!(
            normalize_key("https://index.docker.io/v1/"),
            "index.docker.io"
        );
        assert_eq!(normalize_key("http://r.io/v2/team"), "r.io/team");
        assert_eq!(normalize_key("r.io:5000"), "r.io:5000");
        assert_eq!(normalize_key("r.io/"), "r.io");
        assert_eq!(normalize_key("r.io/a/b"), "r.io/a/b");
    }

    #[test]
    fn most_specific_key_first_and_globs() {
        let s = docker_secret(
            "pull",
            r#"{"quay.io":{"username":"host"},"quay.io/coreos":{"username":"path"},
                "*.example.com":{"username":"glob"},"r.io:5000":{"username":"port"}}"#,
        );
        assert_eq!(users(&[&s], "quay.io/coreos/etcd:v3"), ["path", "host"]);
        assert_eq!(users(&[&s], "quay.io/other/x"), ["host"]);
        assert_eq!(users(&[&s], "reg.example.com/app"), ["glob"]);
        assert!(users(&[&s], "a.reg.example.com/app").is_empty());
        assert_eq!(users(&[&s], "r.io:5000/app"), ["port"]);
        assert!(users(&[&s], "r.io/app").is_empty());
        assert!(users(&[&s], "nginx").is_empty());
    }

    #[test]
    fn docker_hub_aliases() {
        let s = docker_secret(
            "hub",
            r#"{"https://index.docker.io/v1/":{"auth":"dXNlcjpwYXNzOndvcmQ="}}"#,
        );
        for image in [
            "nginx",
            "library/nginx:1",
            "docker.io/library/nginx",
            "index.docker.io/x/y",
        ] {
            let found = pull_credentials(&[&s], image);
            assert_eq!(found.len(), 1, "{image}");
            assert_eq!(found[0].username, "user");
            assert_eq!(found[0].password, "pass:word");
            assert_eq!(found[0].auth, "dXNlcjpwYXNzOndvcmQ=");
        }
        assert!(pull_credentials(&[&s], "ghcr.io/x/y").is_empty());
        assert!(pull_credentials(&[&s], "localhost:5000/x").is_empty());
    }

    #[test]
    fn legacy_dockercfg_and_broken_secrets() {
        let mut legacy = Secret {
            type_: TYPE_DOCKERCFG.into(),
            ..Default::default()
        };
        legacy.string_data.insert(
            DOCKERCFG_KEY.into(),
            r#"{"r.io":{"username":"u","password":"p"}}"#.into(),
        );
        let broken = docker_secret("broken", "[1]");
        let found = pull_credentials(&[&broken, &legacy], "r.io/app");
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].username.as_str(), found[0].password.as_str()),
            ("u", "p")
        );
        assert!(broken
            .registry_entries()
            .unwrap_err()
            .contains("not a docker config.json"));
    }
}
