//! What the API last showed of each bound pod that a status patch must know: its pod
//! IPs. `podIPs` merge by `ip` in a strategic merge patch, so a pod whose IP changed
//! (a new sandbox) must say which IP to delete, or the API would hold two IPs of one
//! family and refuse the patch. The pod source records them from every list and watch
//! event (our own patches come back that way too); the status task reads them.

use crate::store::notify::PodName;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;

#[derive(Default)]
pub struct Seen(RefCell<BTreeMap<PodName, Vec<String>>>);

impl Seen {
    /// Records the pod IPs in the API object's `status` for `name`.
    pub fn record(&self, name: &PodName, status: &Value) {
        let ips: Vec<String> = status["podIPs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|i| i["ip"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut map = self.0.borrow_mut();
        if ips.is_empty() {
            map.remove(name);
        } else {
            map.insert(name.clone(), ips);
        }
    }

    /// The pod IPs the API last showed for `name`.
    pub fn pod_ips(&self, name: &PodName) -> Vec<String> {
        self.0.borrow().get(name).cloned().unwrap_or_default()
    }

    pub fn forget(&self, name: &PodName) {
        self.0.borrow_mut().remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_and_forgets_the_ips() {
        let s = Seen::default();
        let n = ("d".to_string(), "p".to_string());
        s.record(&n, &json!({"podIPs": [{"ip": "10.0.0.1"}]}));
        assert_eq!(s.pod_ips(&n), ["10.0.0.1"]);
        s.record(&n, &json!({"phase": "Pending"}));
        assert!(s.pod_ips(&n).is_empty());
        s.record(&n, &json!({"podIPs": [{"ip": "10.0.0.2"}]}));
        s.forget(&n);
        assert!(s.pod_ips(&n).is_empty());
    }
}
