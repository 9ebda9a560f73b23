//! The bound on the kubelet API's long-lived requests: exec, attach and port-forward
//! streams and followed logs (`containerLogs?follow=true`). They may stay open for
//! hours, so they are taken out of the accept loop's connection bound (which closes the
//! oldest connection for a new one: right for idle or slow clients, wrong for a
//! `kubectl exec` session) and counted against `apiServer.maxStreams` instead; one past
//! it is answered 429 before anything is opened.

use super::KubeletApi;
use crate::http::accept::{Exempt, Ticket};
use crate::http::Answer;
use std::cell::Cell;

/// A long-lived request counted while it lives, its connection out of the accept
/// loop's bound.
pub struct Slot<'a> {
    open: &'a Cell<usize>,
    _exempt: Exempt,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.open.set(self.open.get().saturating_sub(1));
    }
}

/// A slot for the connection of `ticket`, or the 429 answer when `maxStreams` are open.
pub fn take<'a>(api: &'a KubeletApi, ticket: &Ticket) -> Result<Slot<'a>, Answer> {
    let max = api.setting(|c| c.max_streams);
    let open = api.streams.get();
    if open >= max as usize {
        crate::metrics::kubelet_api_stream(false);
        let msg = format!("too many streams: {open} open, apiServer.maxStreams is {max}\n");
        return Err(Answer::text(429, &msg));
    }
    api.streams.set(open + 1);
    Ok(Slot {
        open: &api.streams,
        _exempt: ticket.exempt(),
    })
}
