//! One configMap or secret kept current from the API: list it alone
//! (`fieldSelector=metadata.name=NAME` in its namespace: the Node authorizer lets a
//! node list and watch exactly the objects its pods reference, one at a time), cache
//! it, watch it from the list's resourceVersion (bookmarks on, the server ends the
//! watch after 2-4 hours and it is resumed from the last resourceVersion), relist
//! after any failure: the loop of [`super::list_watch`]. A deleted object leaves the cache; one the model refuses is logged and
//! not cached.
//!
//! The API server may refuse (403) while the authorizer has not yet seen the pod that
//! references the object, or when a pod names an object the node may not read (another
//! node's secret through a hand-made pod): that is logged once per object and tried
//! again, 1 s doubling to 5 min, never in a tight loop. The first refusal is nearly
//! always the authorizer's graph a moment behind the pod's binding (a DaemonSet's new
//! pod reading a ConfigMap, at every rollout): a second later it is served. Other failures (the
//! uplink away) are retried with the uplink's back-off and logged only at debug: the
//! connection already says it is down.

use super::agent::Uplink;
use super::backoff;
use super::list_watch::{self, Failed, Keep};
use super::objects_projection::{meta_str, project, to_bytes};
use super::{resource_path, ApiError, EventType, ListParams};
use crate::model::parse_object;
use crate::store::Kind;
use serde_json::Value;
use std::rc::Rc;
use std::time::Duration;

/// A configMap or secret by kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// ConfigMap or Secret.
    pub kind: Kind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// First wait after a 403, doubled up to [`FORBIDDEN_MAX`].
const FORBIDDEN_FIRST: Duration = Duration::from_secs(1);
const FORBIDDEN_MAX: Duration = Duration::from_secs(300);

/// Watches `r` until the task is dropped (no pod references it any longer).
pub async fn run(up: Rc<Uplink>, r: ObjectRef) {
    let resource = match r.kind {
        Kind::ConfigMap => "configmaps",
        _ => "secrets",
    };
    let path = resource_path("v1", Some(&r.namespace), resource, None, None);
    let params = ListParams {
        field_selector: Some(format!("metadata.name={}", r.name)),
        ..Default::default()
    };
    let mut keep = ObjectKeep {
        up: up.clone(),
        r,
        retry: Retry::default(),
    };
    list_watch::run(&up.client, &path, &params, &mut keep).await
}

/// One object's copy in the cache, and how its lists fail.
struct ObjectKeep {
    up: Rc<Uplink>,
    r: ObjectRef,
    retry: Retry,
}

impl Keep for ObjectKeep {
    fn what(&self) -> String {
        self.r.to_string()
    }

    fn listed(&mut self, items: &[Value]) {
        self.retry.succeeded(&self.r);
        keep(&self.up, &self.r, items.first());
    }

    fn event(&mut self, kind: EventType, object: &Value) {
        match kind {
            EventType::Added | EventType::Modified => keep(&self.up, &self.r, Some(object)),
            _ => keep(&self.up, &self.r, None),
        }
    }

    fn failed(&mut self, e: &ApiError, what: Failed) -> Duration {
        match what {
            Failed::List(_) => self.retry.failed(&self.r, e),
            Failed::Watch => list_watch::quietly(&self.what(), e, what),
        }
    }
}

/// Caches `obj` as `r` (`None`: the object does not exist, so neither does its copy).
fn keep(up: &Uplink, r: &ObjectRef, obj: Option<&Value>) {
    let obj =
        obj.filter(|o| meta_str(o, "name") == r.name && meta_str(o, "namespace") == r.namespace);
    let mut store = up.ctx.store.borrow_mut();
    let Some(obj) = obj else {
        match store.remove_cluster(r.kind, &r.namespace, &r.name) {
            Ok(true) => log::info!("uplink: {r} is gone from the cluster; removed from the cache"),
            Ok(false) => {}
            Err(e) => log::warn!("uplink: {r}: {e}"),
        }
        return;
    };
    let bytes = to_bytes(&project(r.kind, obj));
    let source = format!("{r} (from the API)");
    if let Err(e) = parse_object(&source, &bytes) {
        log::warn!(
            "uplink: {r} refused, not cached: {}",
            withheld(r.kind, &e.messages).join("; ")
        );
        let _ = store.remove_cluster(r.kind, &r.namespace, &r.name);
        return;
    }
    match store.put_cluster(r.kind, &r.namespace, &r.name, &bytes) {
        Ok(true) => log::info!("uplink: {r} cached"),
        Ok(false) => {}
        Err(e) => log::warn!("uplink: {r}: cannot cache it: {e}"),
    }
}

/// Messages about a secret keep only where the problem is (`SOURCE: field`), never
/// what follows: a parser's words may quote the secret's data.
fn withheld(kind: Kind, messages: &[String]) -> Vec<String> {
    if kind != Kind::Secret {
        return messages.to_vec();
    }
    messages
        .iter()
        .map(|m| {
            let place: Vec<&str> = m.splitn(3, ": ").take(2).collect();
            format!("{} (details withheld: secret data)", place.join(": "))
        })
        .collect()
}

/// When to try again, and whether a 403 has been said for this object already.
#[derive(Default)]
struct Retry {
    failures: u32,
    forbidden: u32,
}

impl Retry {
    fn failed(&mut self, r: &ObjectRef, e: &ApiError) -> Duration {
        if e.is_forbidden() {
            self.forbidden = self.forbidden.saturating_add(1);
            let wait = forbidden_delay(self.forbidden);
            if self.forbidden == 1 {
                log::warn!(
                    "uplink: {r}: the API server refuses to show it to this node ({e}); \
                     pods that need it wait; trying again every {}s at most",
                    FORBIDDEN_MAX.as_secs()
                );
            } else {
                log::debug!("uplink: {r}: still refused; again in {wait:?}");
            }
            return wait;
        }
        self.failures = self.failures.saturating_add(1);
        let wait = backoff::delay(self.failures, backoff::random());
        if e.is_transient() {
            log::debug!("uplink: {r}: {e}; again in {wait:?}");
        } else {
            log::warn!("uplink: {r}: {e}; again in {wait:?}");
        }
        wait
    }

    fn succeeded(&mut self, r: &ObjectRef) {
        if self.forbidden > 0 {
            log::info!("uplink: {r}: readable again");
        }
        *self = Retry::default();
    }
}

/// The wait after the `n`th 403 in a row (n >= 1).
fn forbidden_delay(n: u32) -> Duration {
    FORBIDDEN_FIRST
        .saturating_mul(1 << n.saturating_sub(1).min(9))
        .min(FORBIDDEN_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_retried_slowly_and_capped() {
        assert_eq!(forbidden_delay(1), Duration::from_secs(1));
        assert_eq!(forbidden_delay(2), Duration::from_secs(2));
        assert_eq!(forbidden_delay(9), Duration::from_secs(256));
        assert_eq!(forbidden_delay(10), Duration::from_secs(300));
        assert_eq!(forbidden_delay(u32::MAX), Duration::from_secs(300));
    }

    #[test]
    fn secret_problems_name_the_field_only() {
        let m = vec!["secret ns/s (from the API): data[k]: bad byte 'x' in \"hunter2\"".into()];
        assert_eq!(
            withheld(Kind::Secret, &m),
            ["secret ns/s (from the API): data[k] (details withheld: secret data)"]
        );
        assert_eq!(withheld(Kind::ConfigMap, &m), m);
    }
}
