//! Object metadata shared by every kind: `metadata` (ObjectMeta) and the type fields.
//!
//! Only what the agent and the CLI use is kept; other metadata fields (ownerReferences,
//! finalizers, managedFields, ...) are ignored on input, as the API server would keep
//! them but nothing on the device reads them. The deletion fields matter only for pods
//! from the cluster (the API server sets them; see [`super::pod::Pod::terminating`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The only API version accepted: Pod, ConfigMap and Secret all live in core `v1`.
pub const API_VERSION: &str = "v1";

/// The namespace an object without `metadata.namespace` is put in.
pub const DEFAULT_NAMESPACE: &str = "default";

/// `metadata` of a v1 object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    /// DNS-1123 subdomain; names the object's file in the store.
    pub name: String,
    /// DNS-1123 label; `default` when absent.
    pub namespace: String,
    /// Unique id kept for the object's life; assigned by the store when first stored.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The object's labels.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The object's annotations.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// RFC 3339 (`2026-11-29T22:40:28Z`); kubectl writes `null` for a new object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// The spec's generation (the API server's counter).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The API server's version of the object (cluster objects only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// RFC 3339; set by the API server once the object is being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    /// The grace period the deletion asked for (kubectl delete --grace-period).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
}

/// `kind` and `apiVersion`, read first to decide which type the rest of the file is.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TypeMeta {
    /// The object's kind (`Pod`, ...).
    pub kind: String,
    /// The object's API version (`v1`).
    pub api_version: String,
}
