//! The bench's own requests as admin, through the project's API client on the calling
//! thread: many objects made side by side (HTTP/2 streams of one connection, no
//! client-side rate limit: the fleet's setup is not what is measured), collections
//! deleted, the node Leases read, pods described when a wait ran out.

use serde::de::IgnoredAny;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;
use tinylet::tls::kubeconfig;
use tinylet::uplink::{
    resource_path, ApiClient, ClientOptions, DeleteOptions, ListParams, PatchType,
};

/// Requests in flight at once when making many objects.
const IN_FLIGHT: usize = 32;

pub struct Admin {
    client: ApiClient,
}

impl Admin {
    pub fn new(kubeconfig_path: &Path) -> Result<Admin, String> {
        let kc = kubeconfig::load(kubeconfig_path).map_err(|e| e.to_string())?;
        let options = ClientOptions {
            max_body: 512 << 20,
            ..Default::default()
        };
        let client = ApiClient::new(&kc, options).map_err(|e| e.to_string())?;
        Ok(Admin { client })
    }

    /// POSTs each of `objects` to `collection`, [`IN_FLIGHT`] at a time; an object
    /// that exists already counts as made.
    pub fn create_all(&self, collection: &str, objects: &[Value]) -> Result<(), String> {
        tinylet::rt::block_on(async {
            for chunk in objects.chunks(IN_FLIGHT) {
                let tasks: Vec<_> = chunk
                    .iter()
                    .map(|o| {
                        let (client, o, path) =
                            (self.client.clone(), o.clone(), collection.to_string());
                        tinylet::rt::spawn(async move {
                            client.create::<_, IgnoredAny>(&path, &o).await.map(|_| ())
                        })
                    })
                    .collect();
                for t in tasks {
                    match t.await {
                        Ok(()) => {}
                        Err(e) if e.is_conflict() => {}
                        Err(e) => return Err(format!("POST {collection}: {e}")),
                    }
                }
            }
            Ok(())
        })
    }

    /// A strategic-merge PATCH of `path`.
    pub fn patch(&self, path: &str, body: &Value) -> Result<(), String> {
        tinylet::rt::block_on(self.client.patch::<_, IgnoredAny>(
            path,
            PatchType::StrategicMerge,
            body,
        ))
        .map(|_| ())
        .map_err(|e| format!("PATCH {path}: {e}"))
    }

    /// Deletes the objects of `collection` that `selector` selects (or the object of
    /// `collection`'s path when it is empty), at once (grace 0).
    pub fn delete_all(&self, collection: &str, selector: &str) -> Result<(), String> {
        let params = ListParams {
            label_selector: (!selector.is_empty()).then(|| selector.to_string()),
            ..Default::default()
        };
        let path = format!("{collection}{}", params.query(false));
        let options = DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: None,
        };
        tinylet::rt::block_on(self.client.delete(&path, &options))
            .map(|_| ())
            .map_err(|e| format!("DELETE {path}: {e}"))
    }

    /// The renew time of each node Lease (from the API server's cache).
    pub fn lease_renewals(&self) -> Result<BTreeMap<String, SystemTime>, String> {
        let path = resource_path(
            "coordination.k8s.io/v1",
            Some("kube-node-lease"),
            "leases",
            None,
            None,
        );
        let params = ListParams {
            resource_version: Some("0".into()),
            ..Default::default()
        };
        let list: Value = tinylet::rt::block_on(self.client.list(&path, &params))
            .map_err(|e| format!("listing leases: {e}"))?;
        let mut out = BTreeMap::new();
        for l in list["items"].as_array().into_iter().flatten() {
            let name = l["metadata"]["name"].as_str().unwrap_or_default();
            let t = l["spec"]["renewTime"].as_str().unwrap_or_default();
            if let Ok(t) = tinylet::model::time::parse_rfc3339(t) {
                out.insert(name.to_string(), t);
            }
        }
        Ok(out)
    }

    /// For each (pod, node) of `pods`, what the API says now (a consistent list): the
    /// pod's phase and Ready condition, its node's Ready condition.
    pub fn describe_pods(&self, ns: &str, pods: &[(String, String)]) -> Vec<String> {
        let list = |path: String| -> Result<Value, String> {
            tinylet::rt::block_on(self.client.list(&path, &ListParams::default()))
                .map_err(|e| format!("listing {path}: {e}"))
        };
        let (api_pods, api_nodes) = match (
            list(resource_path("v1", Some(ns), "pods", None, None)),
            list(resource_path("v1", None, "nodes", None, None)),
        ) {
            (Ok(p), Ok(n)) => (p, n),
            (Err(e), _) | (_, Err(e)) => return vec![e],
        };
        let by_name = |list: &Value| -> BTreeMap<String, Value> {
            list["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| {
                    let name = i["metadata"]["name"].as_str().unwrap_or_default();
                    (name.to_string(), i.clone())
                })
                .collect()
        };
        let (api_pods, api_nodes) = (by_name(&api_pods), by_name(&api_nodes));
        pods.iter()
            .map(|(pod, node)| {
                let Some(p) = api_pods.get(pod) else {
                    return format!("{pod} on {node}: not in the API");
                };
                let node_ready = api_nodes
                    .get(node)
                    .map_or("no Node".into(), |n| ready_of(&n["status"]["conditions"]));
                format!(
                    "{pod} on {node}: phase {}, {}, its node {node_ready}",
                    p["status"]["phase"].as_str().unwrap_or("-"),
                    ready_of(&p["status"]["conditions"]),
                )
            })
            .collect()
    }
}

/// The Ready condition of `conditions`: status, reason, when it last changed.
fn ready_of(conditions: &Value) -> String {
    let c = conditions
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
    match c {
        None => "no Ready condition".into(),
        Some(c) => format!(
            "Ready {} ({}, since {})",
            c["status"].as_str().unwrap_or("-"),
            c["reason"].as_str().unwrap_or("no reason"),
            c["lastTransitionTime"].as_str().unwrap_or("-"),
        ),
    }
}
