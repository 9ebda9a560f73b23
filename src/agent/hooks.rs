//! Lifecycle hooks, as kubelet runs them: postStart right after StartContainer (the
//! worker waits for it; if it fails the container is killed and the restart policy
//! and crash-loop back-off decide what follows), preStop before StopContainer within
//! the grace period. Handlers: exec (exit status 0 is success), httpGet (any HTTP
//! answer completes the hook once it has come to its end, as kubelet: only a failed
//! connection or a timeout fails it) and sleep. tcpSocket hooks are refused by validation (kubelet fails them at
//! run time).

use super::context::Context;
use super::handler::{self, HandlerError, Target};
use super::http_get::Until;
use crate::model::container::LifecycleHandler;
use async_io::Timer;
use smol::future;
use std::time::Duration;

/// The longest a postStart hook may take. kubelet sets no bound, so a hung hook stalls
/// the pod for good; here it fails (and the container is killed) after this long.
pub const POST_START_LIMIT: Duration = Duration::from_secs(120);

/// Runs hook `h` against the container; gives up after `limit` (the runtime kills an
/// exec hook's command then too).
pub async fn run(
    ctx: &Context,
    h: &LifecycleHandler,
    t: &Target,
    limit: Duration,
) -> Result<(), HandlerError> {
    future::or(handler_run(ctx, h, t, limit), async {
        Timer::after(limit).await;
        Err(HandlerError::NotDone(limit))
    })
    .await
}

async fn handler_run(
    ctx: &Context,
    h: &LifecycleHandler,
    t: &Target,
    limit: Duration,
) -> Result<(), HandlerError> {
    if let Some(e) = &h.exec {
        handler::exec(ctx, t, &e.command, limit).await
    } else if let Some(g) = &h.http_get {
        let (addr, code) = handler::http_get(t, g, limit, Until::End).await?;
        log::debug!("hook GET {addr}{} answered {code}", g.path);
        Ok(())
    } else if let Some(s) = &h.sleep {
        let secs = Duration::from_secs(u64::try_from(s.seconds).unwrap_or(0));
        Timer::after(secs.min(limit)).await;
        Ok(())
    } else if h.tcp_socket.is_some() {
        Err(HandlerError::TcpSocketHook)
    } else {
        Ok(())
    }
}
