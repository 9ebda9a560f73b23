//! Pod events (`tinylet describe pod`, and `kubectl describe pod` when the node joined a
//! cluster), kept in memory only: never written to flash. The CLI reads them through
//! the agent's [`socket`]. Each occurrence goes through kubelet's event correlator, as
//! client-go's does, in its order:
//! 1. aggregation ([`aggregate`]): past ten different messages of one pod's type and
//!    reason within ten minutes, the occurrence becomes the one combined event of them;
//! 2. counting: an occurrence with the same pod, container, type, reason and message as
//!    an event already kept (or the same combined event) adds to that one's `count`, so
//!    the API server gets a patch of one Event object, not a new object per restart;
//! 3. the spam filter ([`spam`]), only when events are sent to a cluster
//!    ([`Recorder::sending`]): without a token in the pod's bucket, the occurrence is
//!    counted but not sent (its count goes out with the next one that has a token).
//!
//! At most [`MAX_EVENTS`] events are kept (about 40 KiB at most): past that the oldest
//! the API server has complete (all of them on a node without a cluster) goes first,
//! else the oldest, and that loss is counted. The uplink's sender (`events_post.rs`)
//! sends what the API server lacks.

pub mod aggregate;
mod lru;
pub mod socket;
pub mod spam;

use crate::model::Pod;
use smol::channel::{Receiver, Sender};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Events kept at most (a few hundred bytes each).
pub const MAX_EVENTS: usize = 128;

/// One Event object: what happened, to which pod, how often.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The pod's namespace (also the Event's).
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The pod's UID.
    pub uid: String,
    /// `spec.containers{NAME}` for a container's event, else empty.
    pub field_path: String,
    /// `Warning` rather than `Normal`.
    pub warning: bool,
    /// kubelet's reason (`BackOff`, `Started`, ...).
    pub reason: &'static str,
    /// What happened (the latest message, for a combined event).
    pub message: String,
    /// Whether this is the combined event of similar ones (see [`aggregate`]).
    pub combined: bool,
    /// Times it happened.
    pub count: u32,
    /// The count the API server is to get: `count` as of the last occurrence the spam
    /// filter let through (0: none yet, nothing to send).
    pub due: u32,
    /// When it happened first and last.
    pub first: SystemTime,
    /// When it happened last.
    pub last: SystemTime,
    /// The Event object's name: `POD.HEX` (the first time, in nanoseconds).
    pub name: String,
    /// The count the API server has (0: not created there yet).
    pub sent: u32,
}

impl Event {
    /// The event of `o`'s first occurrence, at `wall` (its name comes from that time).
    fn first(pod: &Pod, o: Occurred<'_>, combined: bool, wall: SystemTime) -> Event {
        let m = &pod.metadata;
        let nanos = wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        Event {
            namespace: m.namespace.clone(),
            pod: m.name.clone(),
            uid: m.uid.clone(),
            field_path: if o.container.is_empty() {
                String::new()
            } else {
                format!("spec.containers{{{}}}", o.container)
            },
            warning: o.warning,
            reason: o.reason,
            message: if combined {
                format!("{}{}", aggregate::PREFIX, o.message)
            } else {
                o.message
            },
            combined,
            count: 1,
            due: 0,
            first: wall,
            last: wall,
            name: format!("{}.{nanos:x}", m.name),
            sent: 0,
        }
    }

    fn same(&self, other: &Event) -> bool {
        if self.combined || other.combined {
            // One combined event per group of similar events.
            return (self.combined, &self.uid, self.warning, self.reason)
                == (other.combined, &other.uid, other.warning, other.reason);
        }
        (
            &self.uid,
            &self.field_path,
            self.warning,
            self.reason,
            &self.message,
        ) == (
            &other.uid,
            &other.field_path,
            other.warning,
            other.reason,
            &other.message,
        )
    }
}

/// One occurrence of an event, as [`Recorder::record_at`] takes it.
pub struct Occurred<'a> {
    /// The container's name, or empty for the pod itself.
    pub container: &'a str,
    /// `Warning` rather than `Normal`.
    pub warning: bool,
    /// kubelet's reason.
    pub reason: &'static str,
    /// What happened.
    pub message: String,
}

/// The events kept, which of them the cluster lacks, and a wake-up for the sender.
pub struct Recorder {
    /// Whether events go to a cluster (spam filter, counts due, the sender woken).
    sends: bool,
    events: RefCell<VecDeque<Event>>,
    aggregator: RefCell<aggregate::Aggregator>,
    spam: RefCell<spam::SpamFilter>,
    dropped: Cell<u64>,
    filtered: Cell<u64>,
    refused: Cell<u64>,
    tx: Sender<()>,
    rx: Receiver<()>,
}

/// A node's own recorder: events are kept for `tinylet describe`, none is due anywhere.
impl Default for Recorder {
    fn default() -> Recorder {
        let (tx, rx) = smol::channel::bounded(1);
        Recorder {
            sends: false,
            events: RefCell::default(),
            aggregator: RefCell::default(),
            spam: RefCell::default(),
            dropped: Cell::new(0),
            filtered: Cell::new(0),
            refused: Cell::new(0),
            tx,
            rx,
        }
    }
}

impl Recorder {
    /// The recorder of a node that sends its events to a cluster.
    pub fn sending() -> Recorder {
        Recorder {
            sends: true,
            ..Recorder::default()
        }
    }

    /// Records that `reason` happened to `pod` (its container `container`, if any).
    pub fn record(
        &self,
        pod: &Pod,
        container: &str,
        warning: bool,
        reason: &'static str,
        message: String,
    ) {
        let occurred = Occurred {
            container,
            warning,
            reason,
            message,
        };
        self.record_at(Instant::now(), SystemTime::now(), pod, occurred);
    }

    /// [`Recorder::record`] at the given times: `now` for the filter and the
    /// aggregation windows, `wall` for the Event's timestamps and name.
    pub fn record_at(&self, now: Instant, wall: SystemTime, pod: &Pod, o: Occurred<'_>) {
        let m = &pod.metadata;
        let group = (m.uid.clone(), o.warning, o.reason);
        let combined = self
            .aggregator
            .borrow_mut()
            .combine(&group, &o.message, now);
        let new = Event::first(pod, o, combined, wall);
        // A build without the uplink never sends: the spam filter's code is left out.
        let allowed = cfg!(feature = "uplink") && self.sends && self.spam_allows(&m.uid, now);
        let mut events = self.events.borrow_mut();
        let mut event = match events.iter().position(|e| e.same(&new)) {
            Some(i) => {
                let mut e = events.remove(i).unwrap_or_else(|| new.clone());
                e.count = e.count.saturating_add(1);
                e.last = wall;
                e.message = new.message;
                e
            }
            None => {
                if events.len() >= MAX_EVENTS {
                    self.make_room(&mut events);
                }
                new
            }
        };
        if allowed {
            event.due = event.count;
        }
        // Kept in order of the last occurrence: the front is the oldest.
        events.push_back(event);
        if allowed {
            let _ = self.tx.try_send(());
        }
    }

    /// Whether the spam filter lets an occurrence for pod `uid` go out now (else it is
    /// counted as held back).
    fn spam_allows(&self, uid: &str, now: Instant) -> bool {
        let allowed = self.spam.borrow_mut().allow(uid, now);
        if !allowed {
            self.filtered.set(self.filtered.get() + 1);
        }
        allowed
    }

    /// Copies of pod `namespace/name`'s events (of its instance `uid`, when given), in
    /// the order they last happened.
    pub fn for_pod(&self, namespace: &str, name: &str, uid: &str) -> Vec<Event> {
        let events = self.events.borrow();
        let of_pod = |e: &&Event| {
            e.namespace == namespace && e.pod == name && (uid.is_empty() || e.uid == uid)
        };
        events.iter().filter(of_pod).cloned().collect()
    }

    /// Drops the oldest event the API server has complete, else the oldest (counted).
    fn make_room(&self, events: &mut VecDeque<Event>) {
        match events.iter().position(|e| e.sent == e.due) {
            Some(i) => {
                events.remove(i);
            }
            None => {
                events.pop_front();
                self.dropped.set(self.dropped.get() + 1);
            }
        }
    }

    /// Copies of the events whose count the API server lacks, oldest first.
    pub fn unsent(&self) -> Vec<Event> {
        let events = self.events.borrow();
        events.iter().filter(|e| e.sent != e.due).cloned().collect()
    }

    /// Whether the API server lacks some event's count.
    pub fn has_unsent(&self) -> bool {
        self.events.borrow().iter().any(|e| e.sent != e.due)
    }

    /// The API server now has event `name` with `count`.
    pub fn sent(&self, name: &str, count: u32) {
        if let Some(e) = self.events.borrow_mut().iter_mut().find(|e| e.name == name) {
            e.sent = count;
        }
    }

    /// The API server refused event `name` for good (its namespace is gone, the node
    /// may not write it, it is invalid): it is dropped, counted, and never blocks the
    /// events after it.
    pub fn refused(&self, name: &str) {
        let mut events = self.events.borrow_mut();
        if let Some(i) = events.iter().position(|e| e.name == name) {
            events.remove(i);
            self.refused.set(self.refused.get() + 1);
        }
    }

    /// Events the API server refused (see [`Recorder::refused`]).
    pub fn refused_total(&self) -> u64 {
        self.refused.get()
    }

    /// Events dropped unsent because too many were kept.
    pub fn dropped(&self) -> u64 {
        self.dropped.get()
    }

    /// Occurrences the spam filter held back (counted, not sent when they happened).
    pub fn filtered(&self) -> u64 {
        self.filtered.get()
    }

    /// Waits until something was recorded since the last wait.
    pub async fn changed(&self) {
        let _ = self.rx.recv().await;
    }
}

#[cfg(test)]
mod tests {
    // What is sent is tested with the uplink only: a build without it never sends.
    use super::*;

    fn pod(name: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = "ns".into();
        p.metadata.name = name.into();
        p.metadata.uid = format!("uid-{name}");
        p
    }

    #[test]
    fn a_node_without_a_cluster_keeps_its_events_for_describe_and_sends_none() {
        let r = Recorder::default();
        let (a, b) = (pod("a"), pod("b"));
        for _ in 0..spam::BURST + 5 {
            r.record(&a, "app", true, "BackOff", "back-off restarting".into());
        }
        r.record(&b, "", false, "Started", "x".into());
        assert!(!r.has_unsent() && r.unsent().is_empty());
        assert_eq!(r.filtered(), 0, "no spam filter: nothing is held back");
        let shown = r.for_pod("ns", "a", "uid-a");
        assert_eq!((shown.len(), shown[0].count), (1, spam::BURST + 5));
        assert!(r.for_pod("ns", "a", "other-uid").is_empty());
        assert_eq!(r.for_pod("ns", "b", "").len(), 1);
        // Bounded: the oldest go first, and no loss is counted (nothing was due).
        for i in 0..MAX_EVENTS + 10 {
            r.record(&pod(&format!("p{i}")), "", true, "Failed", "y".into());
        }
        assert_eq!(r.events.borrow().len(), MAX_EVENTS);
        assert_eq!(r.dropped(), 0);
        assert!(r.for_pod("ns", "a", "").is_empty());
    }

    #[cfg(feature = "uplink")]
    #[test]
    fn repeats_add_to_one_event() {
        let r = Recorder::sending();
        let p = pod("a");
        for _ in 0..5 {
            r.record(&p, "app", true, "BackOff", "back-off restarting".into());
        }
        r.record(&p, "app", false, "Started", "Started container app".into());
        let unsent = r.unsent();
        assert_eq!(unsent.len(), 2);
        assert_eq!((unsent[0].reason, unsent[0].count), ("BackOff", 5));
        assert_eq!(unsent[0].field_path, "spec.containers{app}");
        r.sent(&unsent[0].name, 5);
        assert_eq!(r.unsent().len(), 1);
        r.record(&p, "app", true, "BackOff", "back-off restarting".into());
        let again = r.unsent();
        assert_eq!(again.len(), 2);
        let backoff = again.iter().find(|e| e.reason == "BackOff").unwrap();
        assert_eq!(
            (backoff.count, backoff.sent, &backoff.name),
            (6, 5, &unsent[0].name)
        );
    }

    #[cfg(feature = "uplink")]
    #[test]
    fn memory_is_bounded_sent_events_go_first_then_the_oldest_counted() {
        let r = Recorder::sending();
        let first = pod("first");
        r.record(&first, "", false, "Scheduled", "x".into());
        let name = r.unsent()[0].name.clone();
        r.sent(&name, 1);
        for i in 0..MAX_EVENTS + 10 {
            r.record(&pod(&format!("p{i}")), "", true, "Failed", "y".into());
        }
        assert_eq!(r.events.borrow().len(), MAX_EVENTS);
        // The sent one made room once; then the oldest unsent ones went.
        assert_eq!(r.dropped(), 10);
        assert!(r.unsent().iter().all(|e| e.pod != "first" && e.pod != "p0"));
    }

    #[cfg(feature = "uplink")]
    fn at(r: &Recorder, now: Instant, p: &Pod, reason: &'static str, message: &str) {
        let wall = UNIX_EPOCH + now.duration_since(t0());
        let o = Occurred {
            container: "app",
            warning: true,
            reason,
            message: message.to_string(),
        };
        r.record_at(now, wall, p, o);
    }

    /// A fixed start for the tests' clocks (the wall clock then starts at the epoch).
    #[cfg(feature = "uplink")]
    fn t0() -> Instant {
        thread_local!(static T0: Instant = Instant::now());
        T0.with(|t| *t)
    }

    #[cfg(feature = "uplink")]
    #[test]
    fn past_its_burst_a_pod_sends_one_event_per_refill_with_the_full_count() {
        let r = Recorder::sending();
        let p = pod("crash");
        let t0 = t0();
        for _ in 0..spam::BURST + 5 {
            at(
                &r,
                t0,
                &p,
                "BackOff",
                "Back-off restarting failed container",
            );
        }
        let e = &r.unsent()[0];
        assert_eq!((e.count, e.due), (spam::BURST + 5, spam::BURST));
        assert_eq!(r.filtered(), 5);
        r.sent(&e.name, e.due);
        assert!(!r.has_unsent());
        // Another reason of the same pod has no token either: kept, not due.
        at(&r, t0, &p, "Started", "Started container app");
        assert!(!r.has_unsent());
        assert_eq!(r.events.borrow().len(), 2);
        // Five minutes on, one token: the BackOff event goes out with every occurrence.
        at(
            &r,
            t0 + spam::REFILL,
            &p,
            "BackOff",
            "Back-off restarting failed container",
        );
        let unsent = r.unsent();
        assert_eq!(unsent.len(), 1);
        assert_eq!((unsent[0].count, unsent[0].due), (31, 31));
        assert_eq!(unsent[0].name, e.name);
        // Other pods are not held back by this one.
        at(&r, t0 + spam::REFILL, &pod("calm"), "Started", "x");
        assert_eq!(r.unsent().len(), 2);
    }

    #[cfg(feature = "uplink")]
    #[test]
    fn similar_events_past_ten_messages_become_one_combined_event() {
        let r = Recorder::sending();
        let p = pod("flaky");
        let t0 = t0();
        for i in 0..aggregate::MAX_SIMILAR + 3 {
            let now = t0 + std::time::Duration::from_secs(i as u64);
            at(
                &r,
                now,
                &p,
                "Unhealthy",
                &format!("Readiness probe failed: {i}"),
            );
        }
        let unsent = r.unsent();
        let (combined, single): (Vec<_>, Vec<_>) = unsent.iter().partition(|e| e.combined);
        assert_eq!(single.len(), aggregate::MAX_SIMILAR - 1);
        assert_eq!(combined.len(), 1);
        let c = combined[0];
        assert_eq!(c.count, 4);
        assert_eq!(
            c.message,
            "(combined from similar events): Readiness probe failed: 12"
        );
        assert_eq!(c.reason, "Unhealthy");
    }

    #[cfg(feature = "uplink")]
    #[test]
    fn a_readiness_probe_failing_every_second_is_one_event_held_at_the_burst() {
        let r = Recorder::sending();
        let p = pod("notready");
        let t0 = t0();
        let mut sent = 0;
        for i in 0..120u32 {
            let now = t0 + std::time::Duration::from_secs(u64::from(i));
            at(
                &r,
                now,
                &p,
                "Unhealthy",
                "Readiness probe failed: not ready",
            );
            // The sender keeps up: what is due goes out at once.
            for e in r.unsent() {
                assert!(e.due > sent, "the count only grows");
                sent = e.due;
                r.sent(&e.name, e.due);
            }
        }
        let events = r.events.borrow();
        assert_eq!(events.len(), 1, "one Event object: {events:?}");
        let e = &events[0];
        assert_eq!((e.count, e.sent), (120, spam::BURST));
        assert!(!e.combined);
        assert_eq!(r.filtered(), u64::from(120 - spam::BURST));
    }
}
