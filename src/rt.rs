//! The one executor: a thread-local `smol::LocalExecutor` driven by async-io's
//! `block_on`, so every task of the agent runs on the calling thread. Tasks are `!Send`
//! on purpose: state has one owner and no locks are needed.
//!
//! Do not use smol's `fs`, `process` or `unblock`: they start the `blocking` thread pool,
//! and the agent's thread budget is this thread plus async-io's helper.

use smol::{LocalExecutor, Task};
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

thread_local! {
    static EXECUTOR: LocalExecutor<'static> = const { LocalExecutor::new() };
}

/// Spawns a task on this thread's executor. Dropping the returned `Task` cancels it;
/// call `.detach()` to let it run on its own.
pub fn spawn<T: 'static>(fut: impl Future<Output = T> + 'static) -> Task<T> {
    EXECUTOR.with(|ex| ex.spawn(fut))
}

/// Runs `fut` to completion on this thread, running spawned tasks meanwhile.
pub fn block_on<T>(fut: impl Future<Output = T>) -> T {
    EXECUTOR.with(|ex| async_io::block_on(rerun(ex.run(fut))))
}

/// Polls in a row at most this many times before letting the reactor look for I/O.
const MAX_RERUNS: usize = 32;

/// Polls `fut` again at once when it was woken during its own poll, instead of
/// returning to async-io's `block_on`: that answers every such wake-up with a
/// non-blocking pass over the reactor (`timerfd_settime`, two `epoll_ctl`, `epoll_pwait`
/// and an eventfd `read`) before polling again. Tasks waking each other on this thread
/// (a CRI call handing its request to the connection task, which hands back the answer)
/// then cost no syscall. After `MAX_RERUNS` polls in a row the reactor gets its turn
/// anyway, so tasks that keep waking each other cannot starve I/O and timers.
async fn rerun<T>(fut: impl Future<Output = T>) -> T {
    let mut fut = pin!(fut);
    let flag = Arc::new(WakeFlag::default());
    let waker = Waker::from(flag.clone());
    poll_fn(|cx| {
        flag.set_parent(cx.waker());
        for _ in 0..MAX_RERUNS {
            flag.polling.store(true, SeqCst);
            flag.woken.store(false, SeqCst);
            let polled = fut.as_mut().poll(&mut Context::from_waker(&waker));
            flag.polling.store(false, SeqCst);
            if polled.is_ready() || !flag.woken.swap(false, SeqCst) {
                return polled;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

/// The waker [`rerun`] polls with: a wake-up during the poll is only noted (the poll is
/// repeated); one at any other time, from any thread, wakes `block_on`.
#[derive(Default)]
struct WakeFlag {
    woken: AtomicBool,
    polling: AtomicBool,
    parent: Mutex<Option<Waker>>,
}

impl WakeFlag {
    fn set_parent(&self, waker: &Waker) {
        if let Ok(mut parent) = self.parent.lock() {
            if !parent.as_ref().is_some_and(|p| p.will_wake(waker)) {
                *parent = Some(waker.clone());
            }
        }
    }
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, SeqCst);
        if !self.polling.load(SeqCst) {
            if let Ok(parent) = self.parent.lock() {
                if let Some(p) = parent.as_ref() {
                    p.wake_by_ref();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn spawned_tasks_run_on_this_thread() {
        let hits = Rc::new(Cell::new(0));
        let h = hits.clone();
        let me = std::thread::current().id();
        let out = block_on(async move {
            let t = spawn(async move {
                assert_eq!(std::thread::current().id(), me);
                h.set(h.get() + 1);
                7
            });
            t.await
        });
        assert_eq!((out, hits.get()), (7, 1));
    }

    #[test]
    fn a_wake_from_another_thread_reaches_the_blocked_executor() {
        // The other thread sends only once the receiver has been polled and found
        // nothing, so the value can only arrive through a cross-thread wake-up (a send
        // that came first would need none).
        let (tx, rx) = smol::channel::bounded::<u32>(1);
        let pending = Arc::new(AtomicBool::new(false));
        let seen = pending.clone();
        let sender = std::thread::spawn(move || {
            let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !seen.load(SeqCst) {
                assert!(std::time::Instant::now() < give_up, "never polled");
                std::thread::yield_now();
            }
            tx.send_blocking(5)
        });
        let got = block_on(async {
            let mut recv = pin!(rx.recv());
            poll_fn(|cx| {
                let r = recv.as_mut().poll(cx);
                if r.is_pending() {
                    pending.store(true, SeqCst);
                }
                r
            })
            .await
        });
        // No timer may bound this wait: registering one wakes the executor by another
        // path. A lost wake-up hangs here (the test runner's timeout ends it).
        assert_eq!(got, Ok(5));
        assert!(sender.join().is_ok());
    }

    #[test]
    fn tasks_that_keep_waking_each_other_do_not_starve_timers() {
        block_on(async {
            let (ping_tx, ping_rx) = smol::channel::bounded::<()>(1);
            let (pong_tx, pong_rx) = smol::channel::bounded::<()>(1);
            let rounds = Rc::new(Cell::new(0u64));
            let r = rounds.clone();
            let _ponger = spawn(async move {
                while ping_rx.recv().await.is_ok() {
                    if pong_tx.send(()).await.is_err() {
                        break;
                    }
                }
            });
            let _pinger = spawn(async move {
                loop {
                    if ping_tx.send(()).await.is_err() || pong_rx.recv().await.is_err() {
                        break;
                    }
                    r.set(r.get() + 1);
                }
            });
            async_io::Timer::after(std::time::Duration::from_millis(20)).await;
            assert!(rounds.get() > 0);
        });
    }
}
