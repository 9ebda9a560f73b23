//! Call deadlines of one channel, kept by one timer instead of one timer per call.
//!
//! Registering an async-io `Timer` wakes the reactor (an eventfd write, then an extra
//! `epoll_wait` round and an eventfd read): with a timer per call that was several
//! syscalls of every call. Here a call in flight only notes its deadline in a list (no
//! syscall, no allocation once the list has grown), and one watchdog task per channel
//! sleeps on a single timer set to the earliest deadline. The timer is moved only when a
//! call needs it to fire earlier than it is set; when it fires it wakes the calls whose
//! deadline passed and is set again for the earliest remaining one. With the usual equal
//! timeouts it fires about once per timeout period, not once per call.
//!
//! A call decides by itself that its deadline passed (`Instant::now()` against its
//! deadline, a vDSO read): the watchdog only makes sure it is polled then.

use async_io::Timer;
use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// The deadlines of the calls in flight on one channel, and its watchdog.
#[derive(Default)]
pub struct Deadlines {
    inner: RefCell<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Calls that are waiting for an answer, with the waker to poll them again.
    waiting: Vec<Waiting>,
    next_id: u64,
    /// When the watchdog's timer is set to fire (`None`: not set).
    armed: Option<Instant>,
    /// The watchdog task, woken when the timer must be set earlier. `None` until the
    /// first deadline spawns it.
    watchdog: Option<Waker>,
    spawned: bool,
}

struct Waiting {
    id: u64,
    at: Instant,
    waker: Waker,
}

/// One call's deadline; dropping it (the call ended either way) forgets it.
pub struct Entry {
    deadlines: Rc<Deadlines>,
    id: u64,
    at: Instant,
}

impl Deadlines {
    /// A deadline at `at` for one call.
    pub fn entry(self: &Rc<Self>, at: Instant) -> Entry {
        let mut inner = self.inner.borrow_mut();
        inner.next_id += 1;
        Entry {
            deadlines: self.clone(),
            id: inner.next_id,
            at,
        }
    }
}

impl Entry {
    /// Whether the deadline passed. If not, the current task is polled again when it
    /// passes (unless the call ends first and drops the entry).
    pub fn expired(&self, cx: &mut Context<'_>) -> bool {
        if Instant::now() >= self.at {
            return true;
        }
        let this = &self.deadlines;
        let mut inner = this.inner.borrow_mut();
        match inner.waiting.iter_mut().find(|w| w.id == self.id) {
            Some(w) => w.waker.clone_from(cx.waker()),
            None => inner.waiting.push(Waiting {
                id: self.id,
                at: self.at,
                waker: cx.waker().clone(),
            }),
        }
        if inner.armed.is_some_and(|armed| armed <= self.at) {
            return false;
        }
        // The timer is not set early enough: the watchdog must move it.
        if let Some(watchdog) = &inner.watchdog {
            watchdog.wake_by_ref();
        } else if !inner.spawned {
            inner.spawned = true;
            crate::rt::spawn(watch(Rc::downgrade(this))).detach();
        }
        false
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let mut inner = self.deadlines.inner.borrow_mut();
        if let Some(i) = inner.waiting.iter().position(|w| w.id == self.id) {
            inner.waiting.swap_remove(i);
        }
    }
}

impl Drop for Deadlines {
    /// Lets the watchdog see the channel is gone and end.
    fn drop(&mut self) {
        if let Some(watchdog) = self.inner.get_mut().watchdog.take() {
            watchdog.wake();
        }
    }
}

/// The watchdog: wakes calls whose deadline passed and keeps its timer set to the
/// earliest remaining deadline. Ends when the channel is dropped.
async fn watch(deadlines: Weak<Deadlines>) {
    let mut timer = Timer::never();
    poll_fn(|cx| loop {
        let Some(this) = deadlines.upgrade() else {
            return Poll::Ready(());
        };
        this.inner.borrow_mut().check(&mut timer, cx.waker());
        match Pin::new(&mut timer).poll(cx) {
            Poll::Ready(_) => this.inner.borrow_mut().armed = None,
            Poll::Pending => return Poll::Pending,
        }
    })
    .await
}

impl Inner {
    /// One round of the watchdog (`waker` is its own): wakes the calls whose deadline
    /// passed and sets `timer` earlier if the earliest remaining deadline needs it.
    fn check(&mut self, timer: &mut Timer, waker: &Waker) {
        let now = Instant::now();
        self.waiting.retain(|w| {
            let passed = w.at <= now;
            if passed {
                w.waker.wake_by_ref();
            }
            !passed
        });
        if let Some(at) = self.waiting.iter().map(|w| w.at).min() {
            if self.armed.is_none_or(|armed| armed > at) {
                timer.set_at(at);
                self.armed = Some(at);
            }
        }
        match &mut self.watchdog {
            Some(w) => w.clone_from(waker),
            None => self.watchdog = Some(waker.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Waits until `entry` expires.
    async fn expiry(entry: &Entry) {
        poll_fn(|cx| {
            if entry.expired(cx) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }

    /// Runs `body`, failing instead of hanging if the watchdog never wakes it.
    fn run(body: impl Future<Output = ()>) {
        crate::rt::block_on(smol::future::or(body, async {
            Timer::after(Duration::from_secs(30)).await;
            panic!("a deadline was never noticed");
        }))
    }

    #[test]
    fn an_earlier_deadline_moves_the_timer_set_for_a_later_one() {
        run(async {
            let deadlines = Rc::new(Deadlines::default());
            let far_at = Instant::now() + Duration::from_secs(3600);
            let far = deadlines.entry(far_at);
            let waiting_far = poll_fn(|cx| {
                assert!(!far.expired(cx));
                Poll::Ready(())
            });
            waiting_far.await;
            // Let the watchdog set its timer for the far deadline first.
            Timer::after(Duration::from_millis(10)).await;
            assert_eq!(deadlines.inner.borrow().armed, Some(far_at));
            let at = Instant::now() + Duration::from_millis(50);
            let near = deadlines.entry(at);
            expiry(&near).await;
            assert!(Instant::now() >= at);
            drop(near);
            let inner = deadlines.inner.borrow();
            assert_eq!(inner.waiting.len(), 1, "only the far call still waits");
        })
    }

    #[test]
    fn each_call_expires_at_its_own_deadline() {
        run(async {
            let deadlines = Rc::new(Deadlines::default());
            let start = Instant::now();
            let tasks: Vec<_> = [30u64, 10, 20]
                .into_iter()
                .map(|ms| {
                    let deadlines = deadlines.clone();
                    crate::rt::spawn(async move {
                        let at = start + Duration::from_millis(ms);
                        expiry(&deadlines.entry(at)).await;
                        assert!(Instant::now() >= at, "{ms} ms deadline fired early");
                    })
                })
                .collect();
            for t in tasks {
                t.await;
            }
            assert!(deadlines.inner.borrow().waiting.is_empty());
        })
    }

    #[test]
    fn a_finished_call_is_forgotten_and_dropping_the_channel_is_clean() {
        run(async {
            let deadlines = Rc::new(Deadlines::default());
            let entry = deadlines.entry(Instant::now() + Duration::from_secs(3600));
            poll_fn(|cx| Poll::Ready(entry.expired(cx))).await;
            assert_eq!(deadlines.inner.borrow().waiting.len(), 1);
            drop(entry);
            assert!(deadlines.inner.borrow().waiting.is_empty());
            // Let the watchdog start, then drop the channel's deadlines: it is woken to
            // see they are gone and end.
            Timer::after(Duration::from_millis(10)).await;
            let weak = Rc::downgrade(&deadlines);
            drop(deadlines);
            assert!(weak.upgrade().is_none());
            Timer::after(Duration::from_millis(10)).await;
        })
    }
}
