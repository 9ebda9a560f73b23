//! The one executor: a thread-local `smol::LocalExecutor` driven by async-io's
//! `block_on`, so every task of the agent runs on the calling thread. Tasks are `!Send`
//! on purpose: state has one owner and no locks are needed.
//!
//! Do not use smol's `fs`, `process` or `unblock`: they start the `blocking` thread pool,
//! and the agent's thread budget is this thread plus async-io's helper.

use smol::{LocalExecutor, Task};
use std::future::Future;

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
    EXECUTOR.with(|ex| async_io::block_on(ex.run(fut)))
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
}
