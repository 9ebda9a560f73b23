//! Request paths and query strings for the Kubernetes API: `/api/v1/...` for the core
//! group, `/apis/GROUP/VERSION/...` for the others; path segments and query values
//! percent-encoded (a field selector's `=` must reach the server as `%3D`).

use std::fmt::Write;

/// The path of a collection (`name` None) or an object, with an optional subresource:
/// `resource_path("v1", Some("default"), "pods", Some("web"), Some("status"))` is
/// `/api/v1/namespaces/default/pods/web/status`.
pub fn resource_path(
    api_version: &str,
    namespace: Option<&str>,
    resource: &str,
    name: Option<&str>,
    subresource: Option<&str>,
) -> String {
    let mut p = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    if let Some(ns) = namespace {
        p.push_str("/namespaces/");
        encode_into(&mut p, ns);
    }
    p.push('/');
    p.push_str(resource);
    for seg in [name, subresource].into_iter().flatten() {
        p.push('/');
        encode_into(&mut p, seg);
    }
    p
}

/// Parameters of a list or a watch.
#[derive(Debug, Clone, Default)]
pub struct ListParams {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// List: "0" lets the server answer from its cache; watch: where to start.
    pub resource_version: Option<String>,
    /// List: the page size.
    pub limit: Option<u32>,
    /// List: the `continue` token of the previous page.
    pub continue_token: Option<String>,
    /// Watch: the server ends the stream after this long (kubelet picks 5-10 min).
    pub timeout_seconds: Option<u32>,
    /// Watch: ask for BOOKMARK events (the resourceVersion moves on without changes).
    pub allow_watch_bookmarks: bool,
    /// List and watch: only each object's metadata (`PartialObjectMetadata`, asked for
    /// in the Accept header, not in the query): an object's spec and status are not
    /// sent.
    pub metadata_only: bool,
}

impl ListParams {
    /// The query string (with its leading `?`, or empty).
    pub fn query(&self, watch: bool) -> String {
        let mut q = String::new();
        let mut add = |k: &str, v: &str| {
            q.push(if q.is_empty() { '?' } else { '&' });
            q.push_str(k);
            q.push('=');
            encode_into(&mut q, v);
        };
        if watch {
            add("watch", "true");
        }
        let opt = [
            ("labelSelector", &self.label_selector),
            ("fieldSelector", &self.field_selector),
            ("resourceVersion", &self.resource_version),
            ("continue", &self.continue_token),
        ];
        for (k, v) in opt {
            if let Some(v) = v {
                add(k, v);
            }
        }
        if let Some(l) = self.limit {
            add("limit", &l.to_string());
        }
        if watch {
            if let Some(t) = self.timeout_seconds {
                add("timeoutSeconds", &t.to_string());
            }
            if self.allow_watch_bookmarks {
                add("allowWatchBookmarks", "true");
            }
        }
        q
    }
}

/// Appends `s` percent-encoded (everything but RFC 3986's unreserved characters).
pub fn encode_into(out: &mut String, s: &str) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            resource_path("v1", None, "nodes", Some("gw1"), None),
            "/api/v1/nodes/gw1"
        );
        assert_eq!(
            resource_path("v1", Some("default"), "pods", Some("web"), Some("status")),
            "/api/v1/namespaces/default/pods/web/status"
        );
        assert_eq!(
            resource_path(
                "coordination.k8s.io/v1",
                Some("kube-node-lease"),
                "leases",
                None,
                None
            ),
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
        );
        assert_eq!(
            resource_path("v1", None, "nodes", Some("a/b?c"), None),
            "/api/v1/nodes/a%2Fb%3Fc"
        );
    }

    #[test]
    fn queries() {
        let p = ListParams {
            field_selector: Some("spec.nodeName=gw1".into()),
            resource_version: Some("123".into()),
            timeout_seconds: Some(300),
            allow_watch_bookmarks: true,
            ..Default::default()
        };
        assert_eq!(
            p.query(true),
            "?watch=true&fieldSelector=spec.nodeName%3Dgw1&resourceVersion=123&timeoutSeconds=300&allowWatchBookmarks=true"
        );
        assert_eq!(
            p.query(false),
            "?fieldSelector=spec.nodeName%3Dgw1&resourceVersion=123"
        );
        assert_eq!(ListParams::default().query(false), "");
    }
}
