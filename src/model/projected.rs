//! The volume sources whose files the agent computes: `projected` (configMap, secret,
//! downwardAPI and serviceAccountToken sources in one directory) and `downwardAPI` (pod
//! fields and container resources as files). Every pod of a default cluster has one:
//! the ServiceAccount admission plugin adds a `kube-api-access-*` projected volume
//! (token, the `kube-root-ca.crt` ConfigMap's `ca.crt`, the namespace).
//!
//! Field names and JSON spellings are Kubernetes'; defaults the API server fills in
//! (`defaultMode` 0644, `expirationSeconds` 3600, a fieldRef's `apiVersion` v1) are
//! applied by [`super::defaults`].

// Fields and variants are the Kubernetes API fields and values of the same name.
#![allow(missing_docs)]

use super::container::{ObjectFieldSelector, ResourceFieldSelector};
use serde::{Deserialize, Serialize};

/// File mode of projected and downwardAPI files when the volume does not say.
pub const DEFAULT_MODE: i32 = 0o644;
/// Lifetime asked for a projected service-account token when the source does not say.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest token lifetime the API server accepts (10 minutes).
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest (2^32 seconds).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// `projected`: several sources' files in one directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProjectedVolumeSource {
    pub sources: Vec<VolumeProjection>,
    /// File mode bits (0-0777) of files whose item sets none; 0644 when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<i32>,
}

/// One source of a projected volume; exactly one is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeProjection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map: Option<KeyProjection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<KeyProjection>,
    /// The volume's type: its `defaultMode` is not the API's here (the volume's
    /// applies) and validation refuses it. Shared types keep the binary small (each
    /// type's serde code costs about 3 KB).
    #[serde(rename = "downwardAPI", skip_serializing_if = "Option::is_none")]
    pub downward_api: Option<DownwardApiVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account_token: Option<ServiceAccountTokenProjection>,
}

/// A ConfigMap's or a Secret's keys in a projected volume: the configMap volume's
/// shape (both named by `name`), its `defaultMode` refused here.
pub type KeyProjection = ConfigMapVolumeSource;

/// A ConfigMap's keys projected as files (a `configMap` volume, and the shape of a
/// projected volume's configMap and secret sources).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConfigMapVolumeSource {
    pub name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<KeyToPath>,
    /// File mode bits (0-0777); 0644 when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// Projects one key to a relative file path inside the volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KeyToPath {
    pub key: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<i32>,
}

/// A token of the pod's service account, bound to the pod, issued by the cluster
/// (TokenRequest) and refreshed before it expires.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceAccountTokenProjection {
    /// Who the token is for; the API server's own audience when empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub audience: String,
    /// Requested lifetime; 3600 when absent, at least 600.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration_seconds: Option<i64>,
    pub path: String,
}

/// `downwardAPI`: pod fields and container resources as files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DownwardApiVolumeSource {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<DownwardApiVolumeFile>,
    /// File mode bits (0-0777); 0644 when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<i32>,
}

/// One downwardAPI file: a pod field or a container's resource, at `path`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DownwardApiVolumeFile {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_ref: Option<ObjectFieldSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_field_ref: Option<ResourceFieldSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<i32>,
}

impl ServiceAccountTokenProjection {
    /// The lifetime to ask for (the default when absent).
    pub fn expiration(&self) -> i64 {
        self.expiration_seconds
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS)
    }
}
