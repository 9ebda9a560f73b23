//! v1.Secret, and image pull credentials from `kubernetes.io/dockerconfigjson` (and the
//! older `kubernetes.io/dockercfg`) secrets, matched to an image the way kubelet's
//! credential keyring does.

use super::base64::Base64Error;
use super::meta::ObjectMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// `type` of a secret of arbitrary keys.
pub const TYPE_OPAQUE: &str = "Opaque";
/// `type` of a secret holding a `.dockerconfigjson` key.
pub const TYPE_DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
/// `type` of a secret holding a `.dockercfg` key (the older format).
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
    /// Always `Secret`.
    pub kind: String,
    /// Always `v1`.
    pub api_version: String,
    /// Its name, namespace, labels, ...
    pub metadata: ObjectMeta,
    /// Base64 values by key.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Plain-text values by key (merged into `data` when parsed).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub string_data: BTreeMap<String, String>,
    /// `Opaque` when absent; any string is allowed, as in Kubernetes.
    #[serde(rename = "type")]
    pub type_: String,
    /// Set: the data never changes.
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
    pub fn registry_entries(&self) -> Result<Vec<(String, RegistryAuth)>, RegistryConfigError> {
        let (key, nested) = match self.type_.as_str() {
            TYPE_DOCKER_CONFIG_JSON => (DOCKER_CONFIG_JSON_KEY, true),
            TYPE_DOCKERCFG => (DOCKERCFG_KEY, false),
            _ => return Ok(Vec::new()),
        };
        let fail = |problem| RegistryConfigError { key, problem };
        let raw = self
            .get(key)
            .ok_or_else(|| fail(RegistryProblem::Missing(self.type_.clone())))?;
        let not = |e| fail(RegistryProblem::NotJson { nested, source: e });
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
            check_registry_key(&registry).map_err(|e| fail(RegistryProblem::Key(e)))?;
            out.push((
                registry,
                e.into_auth().map_err(|e| fail(RegistryProblem::Auth(e)))?,
            ));
        }
        Ok(out)
    }
}

/// Why a docker config secret yields no registry entries: the problem, under the data
/// key that holds the config (`data[.dockerconfigjson]: ...`).
#[derive(Debug)]
pub struct RegistryConfigError {
    key: &'static str,
    problem: RegistryProblem,
}

#[derive(Debug)]
enum RegistryProblem {
    /// The data key is absent; the secret's type.
    Missing(String),
    /// The value is not JSON of the shape (a config.json when nested, else a dockercfg).
    NotJson {
        nested: bool,
        source: serde_json::Error,
    },
    Key(RegistryKeyError),
    Auth(AuthError),
}

impl fmt::Display for RegistryConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "data[{}]: ", self.key)?;
        match &self.problem {
            RegistryProblem::Missing(type_) => write!(f, "required for type {type_}"),
            RegistryProblem::NotJson { nested, source } => {
                let what = if *nested {
                    "a docker config.json"
                } else {
                    "a dockercfg"
                };
                write!(f, "not {what}: {source}")
            }
            RegistryProblem::Key(e) => e.fmt(f),
            RegistryProblem::Auth(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RegistryConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.problem {
            RegistryProblem::NotJson { source, .. } => Some(source),
            RegistryProblem::Auth(AuthError::Base64(e)) => Some(e),
            _ => None,
        }
    }
}

/// Why an entry's `auth` does not give a user name and password.
#[derive(Debug)]
enum AuthError {
    Base64(Base64Error),
    NotUtf8,
    NoColon,
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::Base64(e) => write!(f, "auth: {e}"),
            AuthError::NotUtf8 => f.write_str("auth: not UTF-8"),
            AuthError::NoColon => f.write_str("auth: expected base64 of \"username:password\""),
        }
    }
}

/// A registry key over the bounds: the key (its first 80 characters) and what is over.
#[derive(Debug)]
struct RegistryKeyError {
    shown: String,
    over: KeyOver,
}

#[derive(Debug)]
enum KeyOver {
    /// The host's length in bytes.
    Length(usize),
    /// How many `*` the host has.
    Wildcards(usize),
}

impl fmt::Display for RegistryKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = &self.shown;
        match self.over {
            KeyOver::Length(len) => write!(
                f,
                "registry key {shown:?}: host is {len} bytes, at most {MAX_REGISTRY_HOST} allowed"
            ),
            KeyOver::Wildcards(stars) => write!(
                f,
                "registry key {shown:?}: host has {stars} '*', at most {MAX_KEY_WILDCARDS} allowed"
            ),
        }
    }
}

/// Credentials for one registry, as the CRI `AuthConfig` wants them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryAuth {
    /// The registry user name.
    pub username: String,
    /// The registry password.
    pub password: String,
    /// base64 of `username:password`, when the config gave it.
    pub auth: String,
    /// An identity token for the registry.
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
    fn into_auth(self) -> Result<RegistryAuth, AuthError> {
        let (mut username, mut password) = (self.username, self.password);
        if !self.auth.is_empty() {
            let raw = super::base64::decode(&self.auth).map_err(AuthError::Base64)?;
            let text = String::from_utf8(raw).map_err(|_| AuthError::NotUtf8)?;
            let (u, p) = text.split_once(':').ok_or(AuthError::NoColon)?;
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

/// The longest registry host (without its port) a key or an image may name: DNS's
/// limit for a name. Together with [`MAX_KEY_WILDCARDS`] it bounds the work of matching
/// one key against one image (see [`super::wildcard`]).
pub const MAX_REGISTRY_HOST: usize = 253;

/// The most `*` a registry key's host may hold; real keys have one or two
/// (`*.example.com`, `*.*.example.com`).
pub const MAX_KEY_WILDCARDS: usize = 8;

/// Refuses a registry key whose host is longer than a DNS name or holds more than
/// [`MAX_KEY_WILDCARDS`] `*`, naming the key.
fn check_registry_key(key: &str) -> Result<(), RegistryKeyError> {
    let normalized = normalize_key(key);
    let (host, _) = split_host_path(&normalized);
    let len = split_port(host).0.len();
    let stars = host.bytes().filter(|&b| b == b'*').count();
    let over = if len > MAX_REGISTRY_HOST {
        KeyOver::Length(len)
    } else if stars > MAX_KEY_WILDCARDS {
        KeyOver::Wildcards(stars)
    } else {
        return Ok(());
    };
    let shown: String = key.chars().take(80).collect();
    Err(RegistryKeyError { shown, over })
}

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

/// Splits `host:port` into the host and the port (`""` when absent).
fn split_port(host: &str) -> (&str, &str) {
    match host.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, p),
        _ => (host, ""),
    }
}

/// Splits `host:port` into labels and the port (`""` when absent).
fn split_host_port(host: &str) -> (Vec<&str>, &str) {
    let (h, port) = split_port(host);
    (h.split('.').collect(), port)
}

/// Whether registry key `key` (normalized) covers `image`. An image host longer than
/// any DNS name matches nothing, so the wildcard work stays bounded on both sides.
fn key_matches(key: &str, image: &str) -> bool {
    let (khost, kpath) = split_host_path(key);
    let (ihost, ipath) = split_host_path(image);
    if ihost.len() > MAX_REGISTRY_HOST + ":65535".len() {
        return false;
    }
    let (klabels, kport) = split_host_port(khost);
    let (ilabels, iport) = split_host_port(ihost);
    kport == iport
        && klabels.len() == ilabels.len()
        && ipath.starts_with(kpath)
        && klabels
            .iter()
            .zip(&ilabels)
            .all(|(k, i)| super::wildcard::matches(k.as_bytes(), i.as_bytes()))
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
mod tests;
