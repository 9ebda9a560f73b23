//! The node's kubeconfig, as kubectl and kubeadm write it (YAML or JSON):
//! `current-context` picks a context, the context a cluster (`server`,
//! `certificate-authority` or `-data`, `tls-server-name`) and a user
//! (`client-certificate`/`client-key`, each or its `-data`, or `token`/`tokenFile`).
//! Relative file paths are relative to the kubeconfig's directory (kubectl's rule).
//!
//! Refused, naming the field: no CA (the server is verified against the kubeconfig's CA
//! only, never a system store), `insecure-skip-tls-verify: true`, plain `http://`
//! servers, `exec`/`auth-provider` plugins, basic auth, impersonation, proxies. Files
//! holding secrets must not be readable by group or others (see [`super::files`]).

use super::error::SetupError;
use super::files::{read_bounded, Secrecy, MAX_FILE_BYTES, MAX_TOKEN_BYTES};
use crate::model::{base64, yaml};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

mod server_url;
pub use server_url::{BadServerUrl, ServerUrl};

/// A kubeconfig resolved to what the client needs.
#[derive(Debug)]
pub struct Kubeconfig {
    /// The kubeconfig file.
    pub path: PathBuf,
    /// The context used.
    pub context: String,
    /// Its cluster's name.
    pub cluster: String,
    /// Its user's name.
    pub user: String,
    /// The API server's URL.
    pub server: ServerUrl,
    /// The name the server's certificate must carry: `tls-server-name`, else the
    /// server URL's host.
    pub server_name: String,
    /// The cluster CA bundle (PEM).
    pub ca: Sourced<Vec<u8>>,
    /// How the node authenticates.
    pub credentials: Credentials,
}

/// Bytes and where they were read (a file path or a kubeconfig field), for messages.
#[derive(Debug)]
pub struct Sourced<T> {
    /// The bytes.
    pub value: T,
    /// Where they were read.
    pub from: String,
}

/// How the node proves who it is.
#[derive(Debug)]
pub enum Credentials {
    /// A client certificate chain (PEM) and its private key (PEM).
    Certificate {
        /// The certificate chain.
        cert: Sourced<Vec<u8>>,
        /// The private key.
        key: Sourced<Redacted<Vec<u8>>>,
    },
    /// A bearer token.
    Token(Sourced<Redacted<String>>),
}

/// A secret: its Debug output never shows it, and it has no Display.
pub struct Redacted<T>(pub T);

impl<T> fmt::Debug for Redacted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

// ---- the file's shape (only what is read; other fields are ignored) ----

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawConfig {
    clusters: Option<Vec<Named>>,
    contexts: Option<Vec<Named>>,
    users: Option<Vec<Named>>,
    #[serde(rename = "current-context")]
    current_context: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Named {
    name: String,
    cluster: Option<Value>,
    context: Option<Value>,
    user: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "kebab-case")]
struct RawCluster {
    server: String,
    certificate_authority: Option<String>,
    certificate_authority_data: Option<String>,
    insecure_skip_tls_verify: Option<bool>,
    tls_server_name: Option<String>,
    proxy_url: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "kebab-case")]
struct RawContext {
    cluster: String,
    user: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "kebab-case")]
struct RawUser {
    client_certificate: Option<String>,
    client_certificate_data: Option<String>,
    client_key: Option<String>,
    client_key_data: Option<String>,
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<String>,
    username: Option<String>,
    password: Option<String>,
    exec: Option<Value>,
    auth_provider: Option<Value>,
    #[serde(rename = "as")]
    impersonate: Option<String>,
}

/// Reads and resolves a kubeconfig file and every file it names.
pub fn load(path: &Path) -> Result<Kubeconfig, SetupError> {
    let bytes = read_bounded(path, MAX_FILE_BYTES, Secrecy::Public)?;
    let invalid = |field: &str, message: String| SetupError::Invalid {
        path: path.to_path_buf(),
        field: field.to_string(),
        message,
    };
    let text =
        std::str::from_utf8(&bytes).map_err(|e| invalid("(file)", format!("not UTF-8: {e}")))?;
    let doc = yaml::parse_document(text, &yaml::LIMITS).map_err(|source| SetupError::Yaml {
        path: path.to_path_buf(),
        source,
    })?;
    let raw: RawConfig = serde_json::from_value(doc)
        .map_err(|e| invalid("(file)", format!("not a kubeconfig: {e}")))?;
    let context_name = raw.current_context.unwrap_or_default();
    if context_name.is_empty() {
        return Err(invalid(
            "current-context",
            "required: the context to use".into(),
        ));
    }
    let context: RawContext = entry(
        &raw.contexts,
        "contexts",
        &context_name,
        |n| &n.context,
        path,
    )?;
    let cluster: RawCluster = entry(
        &raw.clusters,
        "clusters",
        &context.cluster,
        |n| &n.cluster,
        path,
    )?;
    let user: RawUser = entry(&raw.users, "users", &context.user, |n| &n.user, path)?;
    let cluster_field = |f: &str| format!("clusters[{}].cluster.{f}", context.cluster);
    let server = ServerUrl::parse(&cluster.server)
        .map_err(|m| invalid(&cluster_field("server"), m.to_string()))?;
    if cluster.insecure_skip_tls_verify == Some(true) {
        return Err(invalid(
            &cluster_field("insecure-skip-tls-verify"),
            "not supported: the API server is always verified against the cluster CA".into(),
        ));
    }
    if cluster.proxy_url.is_some() {
        return Err(invalid(
            &cluster_field("proxy-url"),
            "proxies are not supported".into(),
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("/"));
    let reader = Reader { path, dir };
    let ca = reader
        .file_or_data(
            &cluster_field("certificate-authority"),
            cluster.certificate_authority.as_deref(),
            cluster.certificate_authority_data.as_deref(),
            Secrecy::Public,
        )?
        .ok_or_else(|| {
            invalid(
                &cluster_field("certificate-authority"),
                "required (or certificate-authority-data): the server is verified against the cluster CA only".into(),
            )
        })?;
    let credentials = reader.credentials(&context.user, &user)?;
    let server_name = cluster
        .tls_server_name
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| server.host.clone());
    Ok(Kubeconfig {
        path: path.to_path_buf(),
        context: context_name,
        cluster: context.cluster,
        user: context.user,
        server,
        server_name,
        ca,
        credentials,
    })
}

/// The entry named `name` of a kubeconfig list, decoded.
fn entry<T: serde::de::DeserializeOwned + Default>(
    list: &Option<Vec<Named>>,
    list_name: &str,
    name: &str,
    body: fn(&Named) -> &Option<Value>,
    path: &Path,
) -> Result<T, SetupError> {
    let invalid = |message: String| SetupError::Invalid {
        path: path.to_path_buf(),
        field: format!("{list_name}[{name}]"),
        message,
    };
    let found = list
        .iter()
        .flatten()
        .find(|n| n.name == name)
        .ok_or_else(|| invalid("not found".into()))?;
    match body(found) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| invalid(e.to_string())),
    }
}

/// Reads the files and `-data` fields of one kubeconfig.
struct Reader<'a> {
    path: &'a Path,
    dir: &'a Path,
}

impl Reader<'_> {
    fn invalid(&self, field: &str, message: impl Into<String>) -> SetupError {
        SetupError::Invalid {
            path: self.path.to_path_buf(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// A file path relative to the kubeconfig's directory.
    fn resolve(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// The contents of `FIELD` (a file) or `FIELD-data` (base64), at most one of them.
    /// Embedded secret data makes the kubeconfig itself a secret file.
    fn file_or_data(
        &self,
        field: &str,
        file: Option<&str>,
        data: Option<&str>,
        secrecy: Secrecy,
    ) -> Result<Option<Sourced<Vec<u8>>>, SetupError> {
        let (file, data) = (
            file.filter(|f| !f.is_empty()),
            data.filter(|d| !d.is_empty()),
        );
        match (file, data) {
            (Some(_), Some(_)) => Err(self.invalid(
                field,
                format!("set either {field} or {field}-data, not both"),
            )),
            (Some(file), None) => {
                let path = self.resolve(file);
                let value = read_bounded(&path, MAX_FILE_BYTES, secrecy)?;
                Ok(Some(Sourced {
                    value,
                    from: path.display().to_string(),
                }))
            }
            (None, Some(data)) => {
                if secrecy == Secrecy::Secret {
                    read_bounded(self.path, MAX_FILE_BYTES, secrecy)?;
                }
                let value = base64::decode(data.trim())
                    .map_err(|e| self.invalid(&format!("{field}-data"), e.to_string()))?;
                Ok(Some(Sourced {
                    value,
                    from: format!("{}: {field}-data", self.path.display()),
                }))
            }
            (None, None) => Ok(None),
        }
    }

    fn credentials(&self, name: &str, user: &RawUser) -> Result<Credentials, SetupError> {
        let field = |f: &str| format!("users[{name}].user.{f}");
        let unsupported = [
            (
                "exec",
                user.exec.is_some(),
                "credential plugins are not supported; use a client certificate or a token",
            ),
            (
                "auth-provider",
                user.auth_provider.is_some(),
                "auth providers are not supported; use a client certificate or a token",
            ),
            (
                "username",
                user.username.is_some() || user.password.is_some(),
                "basic authentication is not supported",
            ),
            (
                "as",
                user.impersonate.is_some(),
                "impersonation is not supported",
            ),
        ];
        if let Some((f, _, why)) = unsupported.iter().find(|u| u.1) {
            return Err(self.invalid(&field(f), *why));
        }
        let cert = self.file_or_data(
            &field("client-certificate"),
            user.client_certificate.as_deref(),
            user.client_certificate_data.as_deref(),
            Secrecy::Public,
        )?;
        let key = self.file_or_data(
            &field("client-key"),
            user.client_key.as_deref(),
            user.client_key_data.as_deref(),
            Secrecy::Secret,
        )?;
        let token = self.token(&field("token"), user)?;
        match (cert, key, token) {
            (Some(cert), Some(key), None) => Ok(Credentials::Certificate {
                cert,
                key: Sourced {
                    value: Redacted(key.value),
                    from: key.from,
                },
            }),
            (None, None, Some(token)) => Ok(Credentials::Token(token)),
            (Some(_), None, _) => Err(self.invalid(&field("client-key"), "required with client-certificate")),
            (None, Some(_), _) => Err(self.invalid(&field("client-certificate"), "required with client-key")),
            (Some(_), Some(_), Some(_)) => Err(self.invalid(&field("token"), "set a client certificate or a token, not both")),
            (None, None, None) => Err(self.invalid(
                &format!("users[{name}].user"),
                "no credentials: expected client-certificate and client-key (or their -data), or token / tokenFile",
            )),
        }
    }

    fn token(
        &self,
        field: &str,
        user: &RawUser,
    ) -> Result<Option<Sourced<Redacted<String>>>, SetupError> {
        let (token, from) = match (
            user.token.as_deref().filter(|t| !t.is_empty()),
            user.token_file.as_deref().filter(|t| !t.is_empty()),
        ) {
            (Some(_), Some(_)) => {
                return Err(self.invalid(field, "set either token or tokenFile, not both"))
            }
            (Some(t), None) => {
                read_bounded(self.path, MAX_FILE_BYTES, Secrecy::Secret)?;
                (t.to_string(), format!("{}: {field}", self.path.display()))
            }
            (None, Some(file)) => {
                let path = self.resolve(file);
                let bytes = read_bounded(&path, MAX_TOKEN_BYTES, Secrecy::Secret)?;
                let text = String::from_utf8(bytes).map_err(|_| {
                    self.invalid(field, format!("{}: not UTF-8 text", path.display()))
                })?;
                (text.trim().to_string(), path.display().to_string())
            }
            (None, None) => return Ok(None),
        };
        // Sent as `Authorization: Bearer TOKEN`: visible ASCII only (never echoed).
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(self.invalid(
                field,
                format!("the token in {from} is empty or has characters a header cannot carry"),
            ));
        }
        Ok(Some(Sourced {
            value: Redacted(token),
            from,
        }))
    }
}

#[cfg(test)]
mod tests;
