//! Where a list-and-watch loop reads from, as client-go's reflector does it: the
//! resourceVersion of its lists; and how long a watch is asked to last.
//!
//! A list without a resourceVersion is a consistent read: the API server reads every
//! object of the resource from etcd and filters them itself (for the pods bound to one
//! node: every pod of the cluster, at each node's relist). With a resourceVersion the
//! server answers from its watch cache instead. So the first list asks for "0" (the
//! cache, whatever its age: the watch from the list's version brings what follows),
//! a relist for the last version this loop saw (never older than what the node already
//! has, also from another API server of an HA pair), and only after the server said
//! that version is gone (410) a consistent read. After an API server restart every node
//! of a fleet relists at once: from the cache that costs the server a lookup each, not
//! a read of every pod.

use super::{backoff, ApiError};

/// The resourceVersion of a loop's next list.
#[derive(Debug, Default)]
pub struct Resume {
    /// The latest version seen (a list's, a watch event's, a bookmark's).
    last: Option<String>,
    /// The server said `last` is gone: read from etcd next.
    expired: bool,
}

impl Resume {
    /// The next list's resourceVersion (`None`: a consistent read).
    pub fn list_version(&self) -> Option<String> {
        match (&self.last, self.expired) {
            (_, true) => None,
            (Some(rv), false) => Some(rv.clone()),
            (None, false) => Some("0".into()),
        }
    }

    /// A version the loop has seen (empty ones are not versions).
    pub fn seen(&mut self, rv: &str) {
        if !rv.is_empty() {
            self.last = Some(rv.to_string());
            self.expired = false;
        }
    }

    /// Notes a failed list or watch: after 410 Gone the next list reads from etcd.
    pub fn failed(&mut self, e: &ApiError) {
        if e.is_gone() {
            self.expired = true;
        }
    }
}

/// How long the server is asked to hold a watch: 2-4 hours at random. kubelet's
/// reflectors ask for 5-10 minutes, from before HTTP/2 pings; the API server picks
/// 30-60 minutes for a watch that names none (`--min-request-timeout` times one to
/// two) and caps none it is asked for. Here the connection's keepalive finds a dead
/// link and bookmarks keep the version current, so a shorter watch only costs a
/// request more per watch and node (at 30-60 minutes about 4 an hour for a node's 4
/// watches: 2 % of its idle requests, `make bench-fleet`). At random, so a fleet's
/// watches do not end together.
pub fn watch_timeout() -> u32 {
    7200 + backoff::random() % 7200
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_first_then_the_last_version_then_etcd_after_gone() {
        let mut r = Resume::default();
        assert_eq!(r.list_version().as_deref(), Some("0"));
        r.seen("");
        assert_eq!(r.list_version().as_deref(), Some("0"));
        r.seen("42");
        assert_eq!(r.list_version().as_deref(), Some("42"));
        r.failed(&ApiError::with_code(500));
        assert_eq!(r.list_version().as_deref(), Some("42"));
        r.failed(&ApiError::with_code(410));
        assert_eq!(r.list_version(), None);
        r.seen("57");
        assert_eq!(r.list_version().as_deref(), Some("57"));
    }

    #[test]
    fn watch_timeouts_are_two_to_four_hours() {
        for _ in 0..100 {
            assert!((7200..14400).contains(&watch_timeout()));
        }
    }
}
