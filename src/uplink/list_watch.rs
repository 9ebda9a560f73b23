//! One list-then-watch loop, as client-go's reflector runs it, for any collection the
//! node follows: list (from the watch cache first, see [`super::resume`]), hand the
//! items to the caller's [`Keep`], watch from the list's resourceVersion (bookmarks
//! on, 2-4 hours, resumed from the last version seen when the server ends it), hand
//! each event over; after 410 Gone, an ERROR event or a broken connection, relist.
//! Failed lists wait the uplink's back-off (or what the keeper says); nothing here
//! ever gives up.
//!
//! The Node's watch ([`super::node::watch`]), the Services' ([`super::services`]), the
//! referenced configMaps' and secrets' ([`super::objects_watch`]) and the pods bound to
//! the node ([`super::pods`]) run on it.

use super::backoff;
use super::lean::LeanValue;
use super::objects_projection::meta_str;
use super::resume::{watch_timeout, Resume};
use super::{ApiClient, ApiError, EventType, ListParams};
use async_io::Timer;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// What a loop does with what it sees.
pub trait Keep {
    /// What is followed, for the log (`the Node gw1`).
    fn what(&self) -> String;

    /// A list's items: what exists now, replacing whatever was kept.
    fn listed(&mut self, items: &[Value]);

    /// One change seen by the watch (bookmarks are not passed on).
    fn event(&mut self, kind: EventType, object: &Value);

    /// A list or an open watch failed; for a list, how long to wait before the next
    /// one (a failed watch is relisted after a short wait of the loop's own).
    fn failed(&mut self, e: &ApiError, what: Failed) -> Duration {
        quietly(&self.what(), e, what)
    }

    /// Something the keeper waits for, and does, while a watch is open (the pod
    /// source: the node's admission verdicts); the watch goes on after it. `None`
    /// (nothing) by default.
    fn nudge(&mut self) -> Option<Pin<Box<dyn Future<Output = ()> + '_>>> {
        None
    }
}

/// What failed.
#[derive(Debug, Clone, Copy)]
pub enum Failed {
    /// A list, the `n`th in a row.
    List(u32),
    /// An open watch (410 Gone, an ERROR event, a broken connection): a relist follows.
    Watch,
}

/// What [`Keep::failed`] does unless a keeper says otherwise: logged at debug (the
/// connection says when the uplink is away); a failed list waits the uplink's back-off.
pub fn quietly(what: &str, e: &ApiError, failed: Failed) -> Duration {
    // One log call for both: each call site costs the binary its own statics.
    let (did, wait) = match failed {
        Failed::List(n) => (("listing ", ""), backoff::delay(n, backoff::random())),
        Failed::Watch => (("watch of ", " ended"), Duration::ZERO),
    };
    log::debug!("uplink: {}{what}{}: {e}", did.0, did.1);
    wait
}

/// Follows `path` (with `params`' selectors) into `keep`, forever. One copy of the
/// loop for every keeper (`dyn`): the binary's size counts.
pub async fn run(client: &ApiClient, path: &str, params: &ListParams, keep: &mut dyn Keep) {
    let mut resume = Resume::default();
    let mut failures = 0u32;
    loop {
        let listing = ListParams {
            resource_version: resume.list_version(),
            ..params.clone()
        };
        let list = match client.list::<LeanValue>(path, &listing).await {
            Ok(list) => list.0,
            Err(e) => {
                resume.failed(&e);
                failures = failures.saturating_add(1);
                Timer::after(keep.failed(&e, Failed::List(failures))).await;
                continue;
            }
        };
        failures = 0;
        keep.listed(list["items"].as_array().map(Vec::as_slice).unwrap_or(&[]));
        let mut rv = meta_str(&list, "resourceVersion").to_string();
        resume.seen(&rv);
        let follow = Follow {
            client,
            path,
            params,
        };
        while let Some(next) = follow.watch(&rv, keep, &mut resume).await {
            rv = next;
        }
        Timer::after(backoff::delay(1, backoff::random())).await;
    }
}

/// What one watch of the loop needs.
struct Follow<'a> {
    client: &'a ApiClient,
    path: &'a str,
    params: &'a ListParams,
}

impl Follow<'_> {
    /// One watch from `rv`: `Some(rv)` to resume from when the server ended it
    /// normally, `None` to relist; what it saw goes to `resume`.
    async fn watch(&self, rv: &str, keep: &mut dyn Keep, resume: &mut Resume) -> Option<String> {
        let params = ListParams {
            resource_version: Some(rv.to_string()),
            timeout_seconds: Some(watch_timeout()),
            allow_watch_bookmarks: true,
            ..self.params.clone()
        };
        let mut stream = match self.client.watch(self.path, &params).await {
            Ok(s) => s,
            Err(e) => {
                quietly(&keep.what(), &e, Failed::Watch);
                resume.failed(&e);
                return None;
            }
        };
        loop {
            let next = smol::future::or(async { Some(stream.next().await) }, async {
                match keep.nudge() {
                    Some(nudge) => nudge.await,
                    None => std::future::pending().await,
                }
                None
            })
            .await;
            let Some(next) = next else {
                continue;
            };
            resume.seen(stream.resource_version().unwrap_or(rv));
            match next {
                Ok(Some(ev)) if ev.kind == EventType::Bookmark => {}
                Ok(Some(ev)) => keep.event(ev.kind, &ev.object),
                Ok(None) => return Some(stream.resource_version().unwrap_or(rv).to_string()),
                Err(e) => {
                    resume.failed(&e);
                    keep.failed(&e, Failed::Watch);
                    return None;
                }
            }
        }
    }
}
