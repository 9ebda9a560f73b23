//! `GET /pods`: the node's pods with their last status, as a v1 PodList: what
//! `tinylet get pods -A -o json` prints, read the same way (a read-only store, so a
//! request never moves or writes a file). Pods carry no secret data; secrets are not
//! listed.

use crate::config::Config;
use crate::http::Answer;
use crate::model::Object;
use crate::store::{Kind, Store};

/// The PodList, or 500 when it cannot be encoded.
pub fn answer(cfg: &Config) -> Answer {
    match pod_list(cfg) {
        Ok(body) => Answer::new(200, "application/json", body),
        Err(e) => Answer::text(500, &format!("encoding pods: {e}\n")),
    }
}

/// The PodList, each pod written straight from its struct: no `Value` tree of the
/// whole list (at 50 pods that tree held ~1.5 MiB for a 70 KB answer).
fn pod_list(cfg: &Config) -> serde_json::Result<Vec<u8>> {
    let mut store = Store::open_read_only(cfg);
    let mut out = br#"{"apiVersion":"v1","kind":"PodList","metadata":{},"items":["#.to_vec();
    let mut first = true;
    for e in store.list(Kind::Pod) {
        let Object::Pod(mut pod) = e.object else {
            continue;
        };
        pod.status = store.read_status(&pod.metadata.namespace, &pod.metadata.name);
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut out, &pod)?;
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}
