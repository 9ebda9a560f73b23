//! A watch: the answer to `GET ...?watch=true` is a stream of JSON watch events, one
//! per line (`{"type":"ADDED","object":{...}}`), as long as the server keeps it open.
//! [`WatchStream::next`] hands out each event as soon as its line is complete; each
//! line is bounded (`max_event`), so a hostile or broken server cannot grow memory.
//!
//! Ends: `Ok(None)` when the server closed the stream normally (its `timeoutSeconds`
//! passed): watch again from [`WatchStream::resource_version`]. An `ERROR` event
//! (typically 410 Gone: that resourceVersion is too old) is returned once as
//! `Err(ApiError::Status)` and ends the stream: relist, then watch from the list's
//! resourceVersion. A broken connection is `Err(ApiError::Unavailable)`.
//!
//! Objects come without `metadata.managedFields` (see [`super::lean`]).

use super::api_status::status_of;
use super::conn::Connection;
use super::error::ApiError;
use super::lean::LeanValue;
use bytes::{Buf, BytesMut};
use serde::Deserialize;
use serde_json::Value;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created (or listed at the start).
    Added,
    /// The object changed.
    Modified,
    /// The object was deleted (its last state).
    Deleted,
    /// No change: the resourceVersion moved on (the object carries only it).
    Bookmark,
}

/// One watch event.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchEvent {
    /// What happened.
    pub kind: EventType,
    /// The object, as it is after the change.
    pub object: Value,
}

/// An open watch. Dropping it cancels the stream (the connection stays).
pub struct WatchStream {
    body: h2::RecvStream,
    buf: BytesMut,
    max_event: usize,
    done: bool,
    resource_version: Option<String>,
    conn: Connection,
    generation: u64,
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type")]
    kind: String,
    object: LeanValue,
}

impl WatchStream {
    pub(super) fn new(
        body: h2::RecvStream,
        max_event: usize,
        conn: Connection,
        generation: u64,
    ) -> WatchStream {
        WatchStream {
            body,
            buf: BytesMut::new(),
            max_event,
            done: false,
            resource_version: None,
            conn,
            generation,
        }
    }

    /// The resourceVersion of the last event (a bookmark's included): where a new
    /// watch continues after this one ended normally.
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// The next event; `Ok(None)` once the stream ended.
    pub async fn next(&mut self) -> Result<Option<WatchEvent>, ApiError> {
        loop {
            if self.done {
                return Ok(None);
            }
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line = self.buf.split_to(i + 1);
                if line.len() - 1 > self.max_event {
                    return self.fail(ApiError::TooLarge {
                        limit: self.max_event,
                    });
                }
                if line.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                return self.event(&line).map(Some);
            }
            if self.buf.len() > self.max_event {
                return self.fail(ApiError::TooLarge {
                    limit: self.max_event,
                });
            }
            match self.body.data().await {
                Some(Ok(chunk)) => {
                    let _ = self.body.flow_control().release_capacity(chunk.len());
                    self.buf.extend_from_slice(&chunk);
                }
                Some(Err(e)) => {
                    if !e.is_reset() {
                        self.conn.broken(self.generation);
                    }
                    return self.fail(ApiError::Unavailable(self.conn.h2_error(e)));
                }
                None => {
                    self.done = true;
                    if self.buf.iter().any(|b| !b.is_ascii_whitespace()) {
                        let partial = self.buf.len();
                        self.buf.advance(partial);
                        return Err(ApiError::Protocol(format!(
                            "the watch ended inside an event ({partial} bytes)"
                        )));
                    }
                }
            }
        }
    }

    fn fail<T>(&mut self, e: ApiError) -> Result<T, ApiError> {
        self.done = true;
        self.buf = BytesMut::new();
        Err(e)
    }

    /// Decodes one line; an ERROR event ends the stream with its status.
    fn event(&mut self, line: &[u8]) -> Result<WatchEvent, ApiError> {
        let raw: RawEvent = match serde_json::from_slice(line) {
            Ok(raw) => raw,
            Err(e) => return self.fail(ApiError::Decode(e)),
        };
        let kind = match raw.kind.as_str() {
            "ADDED" => EventType::Added,
            "MODIFIED" => EventType::Modified,
            "DELETED" => EventType::Deleted,
            "BOOKMARK" => EventType::Bookmark,
            "ERROR" => {
                let body = serde_json::to_vec(&raw.object.0).unwrap_or_default();
                return self.fail(ApiError::Status(status_of(500, &body)));
            }
            other => {
                return self.fail(ApiError::Protocol(format!(
                    "unknown watch event type {other:?}"
                )))
            }
        };
        if let Some(rv) = raw
            .object
            .0
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        {
            self.resource_version = Some(rv.to_string());
        }
        Ok(WatchEvent {
            kind,
            object: raw.object.0,
        })
    }
}
