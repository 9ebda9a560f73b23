//! Pod events for the cluster (`kubectl describe pod`), kept in memory only: never
//! written to flash. Repeats are aggregated as kubelet's event correlator does: an event
//! with the same pod, container, type, reason and message as one already recorded adds
//! to that one's `count` (the API server then gets a patch of the one Event object, not
//! a new object per restart). At most [`MAX_EVENTS`] are kept while the uplink is away:
//! past that the oldest already sent goes first, else the oldest, and the loss is counted.
//! The uplink's sender (`events_post.rs`) sends what the API server lacks.

use crate::model::Pod;
use smol::channel::{Receiver, Sender};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::{SystemTime, UNIX_EPOCH};

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
    /// What happened.
    pub message: String,
    /// Times it happened.
    pub count: u32,
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
    fn same(&self, other: &Event) -> bool {
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

/// The events not yet sent, and a wake-up for the sender.
pub struct Recorder {
    events: RefCell<VecDeque<Event>>,
    dropped: Cell<u64>,
    tx: Sender<()>,
    rx: Receiver<()>,
}

impl Default for Recorder {
    fn default() -> Recorder {
        let (tx, rx) = smol::channel::bounded(1);
        Recorder {
            events: RefCell::default(),
            dropped: Cell::new(0),
            tx,
            rx,
        }
    }
}

impl Recorder {
    /// Records that `reason` happened to `pod` (its container `container`, if any).
    pub fn record(
        &self,
        pod: &Pod,
        container: &str,
        warning: bool,
        reason: &'static str,
        message: String,
    ) {
        let now = SystemTime::now();
        let m = &pod.metadata;
        let nanos = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let new = Event {
            namespace: m.namespace.clone(),
            pod: m.name.clone(),
            uid: m.uid.clone(),
            field_path: if container.is_empty() {
                String::new()
            } else {
                format!("spec.containers{{{container}}}")
            },
            warning,
            reason,
            message,
            count: 1,
            first: now,
            last: now,
            name: format!("{}.{nanos:x}", m.name),
            sent: 0,
        };
        let mut events = self.events.borrow_mut();
        let event = match events.iter().position(|e| e.same(&new)) {
            Some(i) => {
                let mut e = events.remove(i).unwrap_or(new);
                e.count = e.count.saturating_add(1);
                e.last = now;
                e
            }
            None => {
                if events.len() >= MAX_EVENTS {
                    self.make_room(&mut events);
                }
                new
            }
        };
        // Kept in order of the last occurrence: the front is the oldest.
        events.push_back(event);
        let _ = self.tx.try_send(());
    }

    /// Drops the oldest event the API server has complete, else the oldest (counted).
    fn make_room(&self, events: &mut VecDeque<Event>) {
        match events.iter().position(|e| e.sent == e.count) {
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
        events
            .iter()
            .filter(|e| e.sent != e.count)
            .cloned()
            .collect()
    }

    /// Whether the API server lacks some event's count.
    pub fn has_unsent(&self) -> bool {
        self.events.borrow().iter().any(|e| e.sent != e.count)
    }

    /// The API server now has event `name` with `count`.
    pub fn sent(&self, name: &str, count: u32) {
        if let Some(e) = self.events.borrow_mut().iter_mut().find(|e| e.name == name) {
            e.sent = count;
        }
    }

    /// Events dropped unsent because too many were kept.
    pub fn dropped(&self) -> u64 {
        self.dropped.get()
    }

    /// Waits until something was recorded since the last wait.
    pub async fn changed(&self) {
        let _ = self.rx.recv().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = "ns".into();
        p.metadata.name = name.into();
        p.metadata.uid = format!("uid-{name}");
        p
    }

    #[test]
    fn repeats_add_to_one_event() {
        let r = Recorder::default();
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

    #[test]
    fn memory_is_bounded_sent_events_go_first_then_the_oldest_counted() {
        let r = Recorder::default();
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
}
