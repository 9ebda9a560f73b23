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
    lines: EventLines,
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
            lines: EventLines::new(max_event),
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
            match self.lines.next_line() {
                Ok(Some(line)) => return self.event(&line).map(Some),
                Ok(None) => {}
                Err(e) => return self.fail(e),
            }
            match self.body.data().await {
                Some(Ok(chunk)) => {
                    let _ = self.body.flow_control().release_capacity(chunk.len());
                    self.lines.push(&chunk);
                }
                Some(Err(e)) => {
                    if !e.is_reset() {
                        self.conn.broken(self.generation);
                    }
                    return self.fail(ApiError::Unavailable(self.conn.h2_error(e)));
                }
                None => {
                    self.done = true;
                    self.lines.finish()?;
                }
            }
        }
    }

    fn fail<T>(&mut self, e: ApiError) -> Result<T, ApiError> {
        self.done = true;
        self.lines = EventLines::new(0);
        Err(e)
    }

    /// Decodes one line; an ERROR event (or one that does not decode) ends the stream.
    fn event(&mut self, line: &[u8]) -> Result<WatchEvent, ApiError> {
        let event = match decode_event(line) {
            Ok(e) => e,
            Err(e) => return self.fail(e),
        };
        if let Some(rv) = event
            .object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        {
            self.resource_version = Some(rv.to_string());
        }
        Ok(event)
    }
}

/// The framing of a watch's body: one event per line, each line at most `max_event`
/// bytes, so what is held never passes `max_event` plus the chunk that proved a line too
/// long.
pub struct EventLines {
    buf: BytesMut,
    max_event: usize,
}

impl EventLines {
    /// Lines of at most `max_event` bytes.
    pub fn new(max_event: usize) -> EventLines {
        EventLines {
            buf: BytesMut::new(),
            max_event,
        }
    }

    /// Takes the next bytes of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete line that is not blank (its newline included); `Ok(None)`
    /// until more bytes come; `TooLarge` for a line past the bound.
    pub fn next_line(&mut self) -> Result<Option<BytesMut>, ApiError> {
        let too_large = ApiError::TooLarge {
            limit: self.max_event,
        };
        while let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
            let line = self.buf.split_to(i + 1);
            if line.len() - 1 > self.max_event {
                return Err(too_large);
            }
            if !line.iter().all(|b| b.is_ascii_whitespace()) {
                return Ok(Some(line));
            }
        }
        if self.buf.len() > self.max_event {
            return Err(too_large);
        }
        Ok(None)
    }

    /// The body ended: an error when it ended inside an event.
    pub fn finish(&mut self) -> Result<(), ApiError> {
        if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
            return Ok(());
        }
        let partial = self.buf.len();
        self.buf.advance(partial);
        Err(ApiError::Protocol(format!(
            "the watch ended inside an event ({partial} bytes)"
        )))
    }

    /// Bytes held.
    pub fn held(&self) -> usize {
        self.buf.len()
    }
}

/// One watch event from its line; an ERROR event is its status as an error, an unknown
/// type or a line that is not an event's JSON an error too.
pub fn decode_event(line: &[u8]) -> Result<WatchEvent, ApiError> {
    let raw: RawEvent = serde_json::from_slice(line).map_err(ApiError::Decode)?;
    let kind = match raw.kind.as_str() {
        "ADDED" => EventType::Added,
        "MODIFIED" => EventType::Modified,
        "DELETED" => EventType::Deleted,
        "BOOKMARK" => EventType::Bookmark,
        "ERROR" => {
            let body = serde_json::to_vec(&raw.object.0).unwrap_or_default();
            return Err(ApiError::Status(status_of(500, &body)));
        }
        other => {
            return Err(ApiError::Protocol(format!(
                "unknown watch event type {other:?}"
            )))
        }
    };
    Ok(WatchEvent {
        kind,
        object: raw.object.0,
    })
}
