//! `GET /pods`: the node's pods with their last status, as a v1 PodList: what
//! `tinylet get pods -A -o json` prints, read the same way (a read-only store, so a
//! request never moves or writes a file). Pods carry no secret data; secrets are not
//! listed.

use super::http::Answer;
use crate::config::Config;
use crate::model::Object;
use crate::store::{Kind, Store};

/// The PodList, or 500 when it cannot be encoded.
pub fn answer(cfg: &Config) -> Answer {
    match pod_list(cfg) {
        Ok(body) => Answer::new(200, "application/json", body),
        Err(e) => Answer::text(500, &format!("encoding pods: {e}\n")),
    }
}

fn pod_list(cfg: &Config) -> serde_json::Result<Vec<u8>> {
    let mut store = Store::open_read_only(cfg);
    let items: Vec<serde_json::Value> = store
        .list(Kind::Pod)
        .into_iter()
        .filter_map(|e| match e.object {
            Object::Pod(mut pod) => {
                pod.status = store.read_status(&pod.metadata.namespace, &pod.metadata.name);
                Some(serde_json::to_value(&pod))
            }
            _ => None,
        })
        .collect::<Result<_, _>>()?;
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {},
        "items": items,
    }))
}
