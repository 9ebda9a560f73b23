//! Authorization as kubelet's webhook mode does it: a `SubjectAccessReview` per new
//! (user, groups, verb, subresource), sent with the node's own credentials through the
//! uplink's client, its answer cached briefly (kubelet's defaults: allowed 5 min,
//! denied 30 s) in a bounded map. The API server away: an error, nothing cached (the
//! kubelet API, which asks this through its `Authorize`, then answers 500).

use super::agent::Uplink;
use super::ApiError;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How long an allowed answer is kept (kubelet's `authorization.webhook.cacheAuthorizedTTL`).
pub const ALLOWED_TTL: Duration = Duration::from_secs(300);
/// How long a denied answer is kept (`cacheUnauthorizedTTL`).
pub const DENIED_TTL: Duration = Duration::from_secs(30);
/// Decisions kept at most; past it expired ones go, then the smallest keys.
pub const MAX_CACHED: usize = 256;

const SAR_PATH: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// Who asks to do what on the node: the user, its groups, the verb and the `nodes`
/// subresource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Question {
    /// The user's name.
    pub user: String,
    /// The user's groups.
    pub groups: Vec<String>,
    /// `get`, `create`, ...
    pub verb: &'static str,
    /// The subresource of `nodes`: `proxy`, `log`, ...
    pub subresource: &'static str,
}

type Key = Question;

/// Asks the API server whether a user may do something to this node, remembering answers.
pub struct Authorizer {
    up: Rc<Uplink>,
    cache: RefCell<BTreeMap<Key, (bool, Instant)>>,
}

impl Authorizer {
    /// An authorizer asking through `up`'s client about `up`'s node.
    pub fn new(up: Rc<Uplink>) -> Authorizer {
        Authorizer {
            up,
            cache: RefCell::new(BTreeMap::new()),
        }
    }

    /// Whether the user may do what `q` asks on the node.
    pub async fn ask(&self, q: &Question) -> Result<bool, ApiError> {
        let key = q.clone();
        let now = Instant::now();
        if let Some((allowed, until)) = self.cache.borrow().get(&key) {
            if *until > now {
                return Ok(*allowed);
            }
        }
        let answer: Value = self
            .up
            .client
            .create(SAR_PATH, &review(q, &self.up.node_name))
            .await?;
        let allowed = answer["status"]["allowed"].as_bool() == Some(true);
        let ttl = if allowed { ALLOWED_TTL } else { DENIED_TTL };
        remember(&mut self.cache.borrow_mut(), key, allowed, now + ttl, now);
        Ok(allowed)
    }
}

/// The review kubelet sends: the user and the `nodes` attributes of the request.
fn review(q: &Question, node: &str) -> Value {
    json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": q.user,
            "groups": q.groups,
            "resourceAttributes": {
                "verb": q.verb,
                "group": "",
                "version": "v1",
                "resource": "nodes",
                "subresource": q.subresource,
                "name": node,
            },
        },
    })
}

/// Stores a decision, keeping at most [`MAX_CACHED`].
fn remember(
    cache: &mut BTreeMap<Key, (bool, Instant)>,
    key: Key,
    allowed: bool,
    until: Instant,
    now: Instant,
) {
    if cache.len() >= MAX_CACHED && !cache.contains_key(&key) {
        cache.retain(|_, (_, t)| *t > now);
        while cache.len() >= MAX_CACHED {
            cache.pop_first();
        }
    }
    cache.insert(key, (allowed, until));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> Key {
        Question {
            user: format!("u{i:04}"),
            groups: vec![],
            verb: "get",
            subresource: "proxy",
        }
    }

    #[test]
    fn the_cache_stays_bounded_and_drops_expired_first() {
        let now = Instant::now();
        let mut c = BTreeMap::new();
        remember(&mut c, key(9999), true, now + ALLOWED_TTL, now);
        for i in 0..MAX_CACHED * 3 {
            remember(&mut c, key(i), false, now + DENIED_TTL, now);
        }
        assert_eq!(c.len(), MAX_CACHED);
        assert!(c.contains_key(&key(9999)), "the largest key was kept");
        // Expired decisions go before live ones.
        let later = now + DENIED_TTL * 2;
        remember(&mut c, key(20000), true, later + ALLOWED_TTL, later);
        assert_eq!(c.len(), 2, "the 5-minute decision and the new one");
    }

    #[test]
    fn the_review_names_the_node_and_subresource() {
        let r = review(&key(1), "gw1");
        assert_eq!(r["spec"]["user"], "u0001");
        assert_eq!(r["spec"]["resourceAttributes"]["subresource"], "proxy");
        assert_eq!(r["spec"]["resourceAttributes"]["name"], "gw1");
        assert_eq!(r["spec"]["resourceAttributes"]["resource"], "nodes");
    }
}
