//! One list-then-watch loop, as client-go's reflector runs it, for any collection the
//! node follows: list (from the watch cache first, see [`super::resume`]), hand the
//! items to the caller's [`Keep`], watch from the list's resourceVersion (bookmarks
//! on, 2-4 hours, resumed from the last version seen when the server ends it), hand
//! each event over; after 410 Gone, an ERROR event or a broken connection, relist.
//! Failed lists wait the uplink's back-off (or what the keeper says); nothing here
//! ever gives up.
//!
//! The Node's watch ([`super::node::watch`]), the Services' ([`super::services`]) and
//! the referenced configMaps' and secrets' ([`super::objects_watch`]) run on it; the
//! pod source ([`super::pods`]) still has its own copy of the same steps.

use super::backoff;
use super::lean::LeanValue;
use super::objects_projection::meta_str;
use super::resume::{watch_timeout, Resume};
use super::{ApiClient, ApiError, EventType, ListParams};
use async_io::Timer;
use serde_json::Value;
use std::time::Duration;

/// What a loop does with what it sees.
pub trait Keep {
    /// What is followed, for the log (`the Node gw1`).
    fn what(&self) -> String;

    /// A list's items: what exists now, replacing whatever was kept.
    fn listed(&mut self, items: &[Value]);

    /// One change seen by the watch (bookmarks are not passed on).
    fn event(&mut self, kind: EventType, object: &Value);

    /// How long to wait after the `failures`th failed list in a row (logged at debug:
    /// the connection says when the uplink is away).
    fn list_failed(&mut self, e: &ApiError, failures: u32) -> Duration {
        log::debug!("uplink: listing {}: {e}", self.what());
        backoff::delay(failures, backoff::random())
    }
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
                Timer::after(keep.list_failed(&e, failures)).await;
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
                log::debug!("uplink: watching {}: {e}", keep.what());
                resume.failed(&e);
                return None;
            }
        };
        loop {
            let next = stream.next().await;
            resume.seen(stream.resource_version().unwrap_or(rv));
            match next {
                Ok(Some(ev)) if ev.kind == EventType::Bookmark => {}
                Ok(Some(ev)) => keep.event(ev.kind, &ev.object),
                Ok(None) => return Some(stream.resource_version().unwrap_or(rv).to_string()),
                Err(e) => {
                    resume.failed(&e);
                    log::debug!("uplink: watch of {} ended: {e}", keep.what());
                    return None;
                }
            }
        }
    }
}
