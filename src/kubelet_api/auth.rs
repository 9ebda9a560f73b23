//! Who asks and what for, as kubelet's webhook authorization sees a request: the user
//! from the client certificate (CN the name, O the groups; rustls has verified it
//! against the client CA during the handshake), and the attributes kubelet derives from
//! the request (verb from the method, resource `nodes`, subresource from the path, name
//! the node's). One departure from kubelet: a stream (`/exec`, `/attach`,
//! `/portForward`) always asks for `create`, whatever the method, since a WebSocket
//! client opens one with a GET and `get` on `nodes/proxy` must not be enough to run
//! commands in the node's containers.
//!
//! Who decides is behind [`Authorize`]: the kubelet API asks it and does not know who
//! answers (the agent gives it the uplink's authorizer, `crate::uplink::authz`, which
//! asks the API server).

use crate::tls::identity;
use std::future::Future;
use std::pin::Pin;

/// Whether a user may do something to this node: what the kubelet API asks before it
/// serves a request.
pub trait Authorize {
    /// Whether `user` may do `attrs` on the node; an error when no decision could be had
    /// (the request is then refused with 500 and the error logged).
    fn allowed<'a>(&'a self, user: &'a User, attrs: &'a Attributes) -> Decision<'a>;
}

/// The answer of an [`Authorize`], to be awaited.
pub type Decision<'a> = Pin<Box<dyn Future<Output = Result<bool, AuthorizeError>> + 'a>>;

/// Why no decision could be had.
pub type AuthorizeError = Box<dyn std::error::Error>;

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct User {
    /// The certificate's CN.
    pub name: String,
    /// Its O values.
    pub groups: Vec<String>,
}

impl User {
    /// The user a verified client certificate (DER) names; `None` without a CN (kubelet
    /// refuses those too: a certificate without a user name authenticates nobody).
    pub fn from_certificate(der: &[u8]) -> Option<User> {
        let s = identity::subject(der)?;
        let name = s.common_name.filter(|n| !n.is_empty())?;
        Some(User {
            name,
            groups: s.organizations,
        })
    }
}

/// The paths of streams into containers (and kubelet's `/run`, not served here), which
/// need `create` whatever the method.
const STREAMS: [&str; 4] = ["/exec", "/attach", "/portForward", "/run"];

/// kubelet's request attributes for a `nodes` subresource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Attributes {
    /// `get`, `create`, `update`, `patch`, `delete`.
    pub verb: &'static str,
    /// `stats`, `metrics`, `log`, `spec`, else `proxy`.
    pub subresource: &'static str,
}

impl Attributes {
    /// The attributes of `method` on `path`; `None` for a method kubelet has no verb for.
    pub fn of(method: &str, path: &str) -> Option<Attributes> {
        let verb = match method {
            "GET" | "HEAD" => "get",
            "POST" => "create",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => return None,
        };
        let under = |base: &str| {
            path == base || path.strip_prefix(base).is_some_and(|r| r.starts_with('/'))
        };
        let verb = if STREAMS.iter().any(|s| under(s)) {
            "create"
        } else {
            verb
        };
        let subresource = if under("/stats") {
            "stats"
        } else if under("/metrics") {
            "metrics"
        } else if under("/logs") {
            "log"
        } else if under("/spec") {
            "spec"
        } else {
            "proxy"
        };
        Some(Attributes { verb, subresource })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_kubelets_subresources() {
        let sub = |p| Attributes::of("GET", p).unwrap().subresource;
        assert_eq!(sub("/stats"), "stats");
        assert_eq!(sub("/stats/summary"), "stats");
        assert_eq!(sub("/metrics/resource"), "metrics");
        assert_eq!(sub("/logs/"), "log");
        assert_eq!(sub("/spec"), "spec");
        assert_eq!(sub("/containerLogs/ns/p/c"), "proxy");
        assert_eq!(sub("/statsx"), "proxy");
        assert_eq!(sub("/pods"), "proxy");
        assert_eq!(sub("/healthz"), "proxy");
    }

    #[test]
    fn methods_map_to_verbs() {
        assert_eq!(Attributes::of("POST", "/exec").unwrap().verb, "create");
        assert_eq!(Attributes::of("DELETE", "/x").unwrap().verb, "delete");
        assert_eq!(Attributes::of("HEAD", "/x").unwrap().verb, "get");
        assert_eq!(Attributes::of("BREW", "/x"), None);
    }

    #[test]
    fn streams_need_create_whatever_the_method() {
        for path in [
            "/exec/ns/p/c",
            "/exec/ns/p/uid/c",
            "/attach/ns/p/c",
            "/portForward/ns/p",
            "/run/ns/p/c",
            "/exec",
        ] {
            for method in ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] {
                let a = Attributes::of(method, path).unwrap();
                assert_eq!(
                    (a.verb, a.subresource),
                    ("create", "proxy"),
                    "{method} {path}"
                );
            }
        }
        // Only those paths: a look-alike is an ordinary proxy request.
        for path in [
            "/execs",
            "/exec-x/a",
            "/containerLogs/exec/p/c",
            "//exec/a/b/c",
        ] {
            assert_eq!(Attributes::of("GET", path).unwrap().verb, "get", "{path}");
        }
    }
}
