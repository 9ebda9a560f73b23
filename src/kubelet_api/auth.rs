//! Who asks and what for, as kubelet's webhook authorization sees a request: the user
//! from the client certificate (CN the name, O the groups; rustls has verified it
//! against the client CA during the handshake), and the attributes kubelet derives from
//! the request (verb from the method, resource `nodes`, subresource from the path, name
//! the node's).

use crate::uplink::identity;

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
}
