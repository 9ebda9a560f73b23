//! [`Limit`]: at most N heavy CRI calls (RunPodSandbox, CreateContainer, StartContainer,
//! PullImage) in flight at once, the config's `maxParallelRuntimeOperations`.
//!
//! Why: on a 128 MB board five StartContainers at once after a reboot drove containerd
//! into swapping, one start took 91 s and the others outlasted `runtimeRequestTimeout`.
//! Queued one or two at a time each finishes in seconds. A call waits for its turn
//! before its deadline starts, so waiting in the queue never times a call out.
//!
//! A tiny FIFO semaphore for the one-thread executor (`Rc`/`RefCell`, no atomics): a
//! waiter holds a place in a queue; the front one takes a free slot; a permit given
//! back, or a waiter that gives up, wakes the next.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

/// The bound and who waits for it. Shared by the clients of one agent.
#[derive(Debug)]
pub struct Limit {
    max: usize,
    inner: RefCell<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    busy: usize,
    queue: VecDeque<(u64, Waker)>,
    next_id: u64,
}

/// One slot, given back when dropped.
pub struct Permit(Rc<Limit>);

/// A place in the queue; dropping it before it got a slot leaves the queue.
struct Ticket {
    limit: Rc<Limit>,
    id: u64,
    served: bool,
}

impl Limit {
    /// At most `max` permits at once (0 is taken as 1).
    pub fn new(max: usize) -> Rc<Limit> {
        Rc::new(Limit {
            max: max.max(1),
            inner: RefCell::default(),
        })
    }

    /// No bound worth the name (clients built without a config).
    pub fn unbounded() -> Rc<Limit> {
        Limit::new(usize::MAX)
    }

    /// Waits, first come first served, for a slot.
    pub async fn acquire(self: &Rc<Self>) -> Permit {
        let id = {
            let mut i = self.inner.borrow_mut();
            i.next_id += 1;
            i.next_id
        };
        let mut t = Ticket {
            limit: self.clone(),
            id,
            served: false,
        };
        poll_fn(|cx| {
            let mut i = self.inner.borrow_mut();
            let pos = i.queue.iter().position(|w| w.0 == id);
            if i.busy < self.max
                && pos.is_none_or(|p| p == 0)
                && (pos.is_some() || i.queue.is_empty())
            {
                if pos.is_some() {
                    i.queue.pop_front();
                }
                i.busy += 1;
                t.served = true;
                i.wake_front_if(self.max);
                return Poll::Ready(());
            }
            match pos {
                Some(p) => i.queue[p].1.clone_from(cx.waker()),
                None => i.queue.push_back((id, cx.waker().clone())),
            }
            Poll::Pending
        })
        .await;
        Permit(self.clone())
    }
}

impl Inner {
    /// Wakes the first waiter when a slot is free for it.
    fn wake_front_if(&self, max: usize) {
        if self.busy < max {
            if let Some((_, w)) = self.queue.front() {
                w.wake_by_ref();
            }
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut i = self.0.inner.borrow_mut();
        i.busy -= 1;
        i.wake_front_if(self.0.max);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.served {
            return;
        }
        let mut i = self.limit.inner.borrow_mut();
        i.queue.retain(|w| w.0 != self.id);
        i.wake_front_if(self.limit.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn at_most_max_in_flight_and_in_order() {
        let limit = Limit::new(2);
        let (now, peak) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let order = Rc::new(RefCell::new(Vec::new()));
        crate::rt::block_on(async {
            let tasks: Vec<_> = (0..6)
                .map(|n| {
                    let (limit, now, peak, order) =
                        (limit.clone(), now.clone(), peak.clone(), order.clone());
                    crate::rt::spawn(async move {
                        let _p = limit.acquire().await;
                        order.borrow_mut().push(n);
                        now.set(now.get() + 1);
                        peak.set(peak.get().max(now.get()));
                        async_io::Timer::after(std::time::Duration::from_millis(5)).await;
                        now.set(now.get() - 1);
                    })
                })
                .collect();
            for t in tasks {
                t.await;
            }
        });
        assert_eq!(peak.get(), 2);
        assert_eq!(*order.borrow(), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_waiter_that_gives_up_passes_its_turn_on() {
        let limit = Limit::new(1);
        crate::rt::block_on(async {
            let held = limit.acquire().await;
            let gave_up = smol::future::or(async { Some(limit.acquire().await) }, async {
                async_io::Timer::after(std::time::Duration::from_millis(5)).await;
                None
            })
            .await;
            assert!(gave_up.is_none(), "the slot was held");
            let next = crate::rt::spawn({
                let limit = limit.clone();
                async move {
                    let _p = limit.acquire().await;
                }
            });
            drop(held);
            next.await;
        });
        assert!(limit.inner.borrow().queue.is_empty());
        assert_eq!(limit.inner.borrow().busy, 0);
    }
}
