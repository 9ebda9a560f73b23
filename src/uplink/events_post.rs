//! Sends the recorded pod events ([`crate::agent::events`]) to the API server: a new event is
//! created (`POST .../events`), a repeat patches the count and last time of the same
//! object. Sends are batched: after a batch the sender waits [`PACE`], so a
//! crash-looping pod costs at most one patch per event per `PACE` however often it
//! fails (and the recorder's spam filter bounds how often an event is due at all).
//! While the API server is away, nothing is lost beyond the recorder's bound; sending
//! resumes with the latest counts.

use super::agent::Uplink;
use super::client::PatchType;
use super::error::ApiError;
use crate::agent::events::Event;
use crate::model::time::format_rfc3339;
use serde_json::{json, Value};
use smol::Timer;
use std::rc::Rc;
use std::time::Duration;

/// Least time between two batches of sends.
const PACE: Duration = Duration::from_secs(1);
/// Wait after a failed send before trying again.
const RETRY: Duration = Duration::from_secs(10);

/// Sends events as they are recorded, for as long as the agent runs.
pub async fn run(uplink: Rc<Uplink>) {
    let events = &uplink.ctx.events;
    loop {
        if !events.has_unsent() {
            events.changed().await;
        }
        for e in events.unsent() {
            match send(&uplink, &e).await {
                Ok(()) => events.sent(&e.name, e.due),
                Err(err) if refused_for_good(&err) => {
                    // This event only: the next ones are sent at once.
                    log::debug!(
                        "event {}/{} ({}) refused, dropped: {err}",
                        e.namespace,
                        e.name,
                        e.reason
                    );
                    events.refused(&e.name);
                }
                Err(err) => {
                    // The server is away or busy: every event would fail alike.
                    log::debug!("event {}/{} ({}): {err}", e.namespace, e.name, e.reason);
                    Timer::after(RETRY).await;
                    break;
                }
            }
        }
        Timer::after(PACE).await;
    }
}

/// An answer about this event itself, which sending it again would get again: its
/// namespace is gone (404 on create), is being deleted or the node may not write there
/// (403), or the event is invalid (422).
fn refused_for_good(err: &ApiError) -> bool {
    err.is_not_found() || err.is_forbidden() || err.is_invalid()
}

/// Creates the Event object, or patches its count when the API server has it (the count
/// due: occurrences the spam filter held back go out with the next one it lets through).
async fn send(u: &Uplink, e: &Event) -> Result<(), ApiError> {
    let path = format!("/api/v1/namespaces/{}/events", e.namespace);
    if e.sent == 0 {
        match u.client.create::<_, Value>(&path, &object(u, e)).await {
            Err(err) if err.is_conflict() => {} // made by a send whose answer was lost
            other => return other.map(|_| ()),
        }
    }
    let patch = json!({
        "count": e.due,
        "lastTimestamp": format_rfc3339(e.last),
        "message": e.message,
    });
    let one = format!("{path}/{}", e.name);
    match u.client.patch_ack(&one, PatchType::Merge, &patch).await {
        // Gone (events expire after an hour): made again with the count so far.
        Err(err) if err.is_not_found() => u
            .client
            .create::<_, Value>(&path, &object(u, e))
            .await
            .map(|_| ()),
        other => other,
    }
}

/// The v1 Event, as kubelet writes it.
fn object(u: &Uplink, e: &Event) -> Value {
    let mut involved = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": e.namespace,
        "name": e.pod,
        "uid": e.uid,
    });
    if !e.field_path.is_empty() {
        involved["fieldPath"] = json!(e.field_path);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": e.name, "namespace": e.namespace},
        "involvedObject": involved,
        "reason": e.reason,
        "message": e.message,
        "type": if e.warning { "Warning" } else { "Normal" },
        "count": e.due,
        "firstTimestamp": format_rfc3339(e.first),
        "lastTimestamp": format_rfc3339(e.last),
        "source": {"component": "kubelet", "host": u.node_name},
        "reportingComponent": "kubelet",
        "reportingInstance": u.node_name,
    })
}
