//! v1.ConfigMap: string data (`data`) and base64 binary data (`binaryData`).

use super::meta::ObjectMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A v1 ConfigMap. Keys of `data` and `binaryData` together are unique.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConfigMap {
    /// Always `ConfigMap`.
    pub kind: String,
    /// Always `v1`.
    pub api_version: String,
    /// Its name, namespace, labels, ...
    pub metadata: ObjectMeta,
    /// UTF-8 values by key.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Values are base64 text, checked when parsed.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub binary_data: BTreeMap<String, String>,
    /// Set: the data never changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

impl ConfigMap {
    /// The bytes of `key`, from `data` or decoded from `binaryData`.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        if let Some(v) = self.data.get(key) {
            return Some(v.clone().into_bytes());
        }
        super::base64::decode(self.binary_data.get(key)?).ok()
    }

    /// Every key with its bytes, in key order.
    pub fn entries(&self) -> Vec<(String, Vec<u8>)> {
        let mut keys: Vec<&String> = self.data.keys().chain(self.binary_data.keys()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .filter_map(|k| Some((k.clone(), self.get(k)?)))
            .collect()
    }
}
