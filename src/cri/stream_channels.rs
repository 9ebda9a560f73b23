//! The Kubernetes channel protocol over WebSocket (`v4.channel.k8s.io`, and
//! `v5.channel.k8s.io` when the server offers it): every binary message starts with the
//! byte of its channel.
//!
//! Channels (as the runtime's streaming server numbers them): 0 stdin, 1 stdout,
//! 2 stderr, 3 error (one JSON `metav1.Status` when the command ends), 4 resize (JSON
//! `{"Width":W,"Height":H}`). v5 adds message 255 + channel: the client closes that
//! stream (stdin EOF); v4 has no way to close stdin short of closing the connection.

use serde::Deserialize;
use std::fmt;

/// The protocols offered, preferred first.
pub const PROTOCOLS: &[&str] = &[V5, V4];
/// v5: v4 plus closing a single stream.
pub const V5: &str = "v5.channel.k8s.io";
/// v4: the status on channel 3 is a JSON `metav1.Status`.
pub const V4: &str = "v4.channel.k8s.io";

/// Channel: stdin (client to server).
pub const STDIN: u8 = 0;
/// Channel: stdout.
pub const STDOUT: u8 = 1;
/// Channel: stderr.
pub const STDERR: u8 = 2;
/// Channel: the status when the command ends.
pub const ERROR: u8 = 3;
/// Channel: terminal size (client to server).
pub const RESIZE: u8 = 4;
/// v5's "close stream" message type.
const CLOSE_STREAM: u8 = 255;

/// What a message from the server carries.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// Output of the command (may be empty: the server's "streams are ready").
    Stdout(&'a [u8]),
    /// Error output.
    Stderr(&'a [u8]),
    /// (Part of) the status on the error channel.
    Status(&'a [u8]),
    /// An empty message, or a channel the client did not ask for: nothing to do.
    Ignored,
}

/// The message `msg` (a binary WebSocket message) split by channel.
pub fn incoming(msg: &[u8]) -> Incoming<'_> {
    match msg.split_first() {
        Some((&STDOUT, d)) => Incoming::Stdout(d),
        Some((&STDERR, d)) => Incoming::Stderr(d),
        Some((&ERROR, d)) => Incoming::Status(d),
        _ => Incoming::Ignored,
    }
}

/// The payload of a message on `channel`.
pub fn outgoing(channel: u8, data: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(data.len() + 1);
    m.push(channel);
    m.extend_from_slice(data);
    m
}

/// The resize message for a terminal of `width` columns and `height` rows.
pub fn resize(width: u16, height: u16) -> Vec<u8> {
    outgoing(
        RESIZE,
        format!(r#"{{"Width":{width},"Height":{height}}}"#).as_bytes(),
    )
}

/// v5's message closing the remote stdin.
pub fn close_stdin() -> Vec<u8> {
    vec![CLOSE_STREAM, STDIN]
}

/// How the remote command ended, from the status on the error channel.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It exited with this code (0 for "Success").
    Exited(i32),
    /// The runtime failed to run it (its message: not found, not executable, ...).
    Failed(String),
}

/// The status could not be read.
#[derive(Debug, PartialEq, Eq)]
pub struct StatusError(pub String);

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "exec status from the runtime: {}", self.0)
    }
}

impl std::error::Error for StatusError {}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    reason: String,
    details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    causes: Vec<Cause>,
}

#[derive(Deserialize)]
struct Cause {
    #[serde(default)]
    reason: String,
    #[serde(default)]
    message: String,
}

/// Reads the `metav1.Status` the server sends when the command ends: "Success", or
/// "Failure" with reason "NonZeroExitCode" and a cause of reason "ExitCode" whose
/// message is the code; any other failure is the runtime's own error.
pub fn outcome(json: &[u8]) -> Result<Outcome, StatusError> {
    let s: Status = serde_json::from_slice(json)
        .map_err(|e| StatusError(format!("expected a JSON metav1.Status: {e}")))?;
    match s.status.as_str() {
        "Success" => return Ok(Outcome::Exited(0)),
        "Failure" => {}
        other => {
            return Err(StatusError(format!(
                "status {other:?}, expected Success or Failure"
            )))
        }
    }
    let code = s
        .details
        .iter()
        .flat_map(|d| &d.causes)
        .find(|c| c.reason == "ExitCode");
    match code {
        Some(c) => {
            c.message.parse().map(Outcome::Exited).map_err(|_| {
                StatusError(format!("ExitCode cause {:?}, expected a number", c.message))
            })
        }
        None if s.message.is_empty() => Ok(Outcome::Failed(s.reason)),
        None => Ok(Outcome::Failed(s.message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_split() {
        assert_eq!(incoming(b"\x01hi"), Incoming::Stdout(b"hi"));
        assert_eq!(incoming(b"\x02e"), Incoming::Stderr(b"e"));
        assert_eq!(incoming(b"\x01"), Incoming::Stdout(b""));
        assert_eq!(incoming(b"\x03{}"), Incoming::Status(b"{}"));
        assert_eq!(incoming(b""), Incoming::Ignored);
        assert_eq!(incoming(b"\x09x"), Incoming::Ignored);
        assert_eq!(outgoing(STDIN, b"ab"), b"\x00ab");
        assert_eq!(resize(80, 24), b"\x04{\"Width\":80,\"Height\":24}");
        assert_eq!(close_stdin(), [255, 0]);
    }

    #[test]
    fn statuses() {
        assert_eq!(
            outcome(br#"{"metadata":{},"status":"Success"}"#),
            Ok(Outcome::Exited(0))
        );
        let exit3 = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit status 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
        assert_eq!(outcome(exit3), Ok(Outcome::Exited(3)));
        let internal = br#"{"status":"Failure","message":"error executing command in container: not found","reason":"InternalError","code":500}"#;
        assert_eq!(
            outcome(internal),
            Ok(Outcome::Failed(
                "error executing command in container: not found".into()
            ))
        );
        assert!(outcome(b"not json").is_err());
        assert!(outcome(br#"{"status":"Maybe"}"#).is_err());
        let bad_code =
            br#"{"status":"Failure","details":{"causes":[{"reason":"ExitCode","message":"x"}]}}"#;
        assert!(outcome(bad_code)
            .unwrap_err()
            .to_string()
            .contains("expected a number"));
    }

    #[test]
    fn hostile_statuses_are_errors_not_panics() {
        let cause = |m: &str| {
            format!(
                r#"{{"status":"Failure","details":{{"causes":[{{"reason":"ExitCode","message":{m}}}]}}}}"#
            )
        };
        for bad in ["\"4294967299\"", "\"\"", "\" 3\"", "3", "null", "[]"] {
            assert!(outcome(cause(bad).as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(outcome(cause("\"-1\"").as_bytes()), Ok(Outcome::Exited(-1)));
        // Nesting 100,000 deep: skipped without recursion in a field the status ignores,
        // refused at serde_json's depth limit in one it reads; no stack overflow.
        let nest = |at: &str| {
            let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
            outcome(format!(r#"{{"status":"Failure","{at}":{deep}}}"#).as_bytes())
        };
        assert_eq!(nest("x"), Ok(Outcome::Failed(String::new())));
        assert!(nest("details").is_err());
        for bad in [
            &b""[..],
            b"{",
            b"\xff\xfe",
            br#"{"status":1}"#,
            br#"{"details":{"causes":{}}}"#,
        ] {
            assert!(outcome(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        // A Failure naming nothing: its (empty) reason, not a panic.
        assert_eq!(
            outcome(br#"{"status":"Failure"}"#),
            Ok(Outcome::Failed(String::new()))
        );
    }
}
