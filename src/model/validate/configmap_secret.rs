//! ConfigMaps and Secrets, following `ValidateConfigMap` and `ValidateSecret`: every
//! key a ConfigMap key (it becomes a file name in a volume), base64 values that decode,
//! no key in both data and binaryData, and per secret type what kubelet reads: a
//! docker config that parses into registry entries (`Secret::registry_entries` holds
//! those rules and their messages), tls.crt and tls.key for kubernetes.io/tls.

use super::names::config_key;
use super::Errors;
use crate::model::base64;
use crate::model::configmap::ConfigMap;
use crate::model::secret::{self, Secret};

impl Errors {
    /// A ConfigMap: keys, a key in only one of data and binaryData, base64 binaryData.
    pub(super) fn config_map(&mut self, c: &ConfigMap) {
        for k in c.data.keys() {
            self.key("data", k);
        }
        for (k, v) in &c.binary_data {
            self.key("binaryData", k);
            if c.data.contains_key(k) {
                self.add(
                    format_args!("binaryData[{k}]"),
                    "duplicate key: also in data",
                );
            }
            if let Err(e) = base64::decode(v) {
                self.add(format_args!("binaryData[{k}]"), e);
            }
        }
    }

    /// A Secret: keys, base64 data, and what its type requires.
    pub(super) fn secret(&mut self, s: &Secret) {
        for (k, v) in &s.data {
            self.key("data", k);
            if let Err(e) = base64::decode(v) {
                self.add(format_args!("data[{k}]"), e);
            }
        }
        match s.type_.as_str() {
            secret::TYPE_DOCKER_CONFIG_JSON | secret::TYPE_DOCKERCFG => {
                if let Err(e) = s.registry_entries() {
                    self.0.push(e.to_string());
                }
            }
            "kubernetes.io/tls" => {
                for k in ["tls.crt", "tls.key"] {
                    if !s.data.contains_key(k) {
                        self.add(
                            format_args!("data[{k}]"),
                            "required for type kubernetes.io/tls",
                        );
                    }
                }
            }
            _ => {}
        }
    }

    /// A key of `map` (`data`, `binaryData`).
    fn key(&mut self, map: &str, k: &str) {
        if let Err(e) = config_key(k) {
            self.add(format_args!("{map}[{k}]"), e);
        }
    }
}
