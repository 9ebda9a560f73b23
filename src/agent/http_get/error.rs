//! Why an httpGet failed: the request could not be written, the peer did not answer in
//! time, the socket failed (the system's error kept as the source), or the answer is
//! not an HTTP/1 response ([`BadResponse`]). Displayed as the probe and hook logs word it.

use super::MAX_HEAD;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// Why the bytes the peer sent are not an HTTP/1 response this client accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadResponse {
    /// No newline within the first 1024 bytes.
    StatusLineTooLong,
    /// The first bytes are not `HTTP/1.` (the first 60 of them).
    NotHttp1(String),
    /// A status line that does not parse (its first 60 bytes).
    MalformedStatusLine(String),
    /// The peer closed the connection before a status line was complete.
    ClosedEarly,
    /// Only interim responses within the bytes read.
    NoFinalStatus,
}

impl fmt::Display for BadResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadResponse::StatusLineTooLong => f.write_str("status line longer than 1024 bytes"),
            BadResponse::NotHttp1(start) => write!(f, "not an HTTP/1 response: {start:?}"),
            BadResponse::MalformedStatusLine(line) => write!(f, "malformed status line {line:?}"),
            BadResponse::ClosedEarly => {
                f.write_str("connection closed before a complete status line")
            }
            BadResponse::NoFinalStatus => {
                write!(f, "no final status line in the first {MAX_HEAD} bytes")
            }
        }
    }
}

impl std::error::Error for BadResponse {}

/// Why reading a response failed.
#[derive(Debug)]
pub enum ReadError {
    /// The socket failed.
    Io(io::Error),
    /// The peer's bytes are not a response.
    Bad(BadResponse),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => fmt::Display::fmt(e, f),
            ReadError::Bad(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => Some(e),
            ReadError::Bad(e) => Some(e),
        }
    }
}

impl From<BadResponse> for ReadError {
    fn from(e: BadResponse) -> ReadError {
        ReadError::Bad(e)
    }
}

/// Why a GET failed.
#[derive(Debug)]
pub enum HttpError {
    /// The path has spaces or control characters.
    BadPath(String),
    /// A header from the manifest (its name) is not a valid HTTP header.
    BadHeader(String),
    /// No complete answer within the timeout.
    Timeout {
        /// Where the GET went.
        addr: SocketAddr,
        /// How long it waited.
        timeout: Duration,
    },
    /// The connect failed.
    Connect {
        /// Where the GET went.
        addr: SocketAddr,
        /// The system's error.
        source: io::Error,
    },
    /// Sending the request failed.
    Send {
        /// Where the GET went.
        addr: SocketAddr,
        /// The system's error.
        source: io::Error,
    },
    /// Reading the answer failed.
    Answer {
        /// Where the GET went.
        addr: SocketAddr,
        /// What went wrong.
        source: ReadError,
    },
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::BadPath(path) => {
                write!(f, "path {path:?} contains spaces or control characters")
            }
            HttpError::BadHeader(name) => write!(f, "header {name:?} is not a valid HTTP header"),
            HttpError::Timeout { addr, timeout } => {
                write!(f, "no answer from {addr} within {timeout:?}")
            }
            HttpError::Connect { addr, source } => write!(f, "connecting to {addr}: {source}"),
            HttpError::Send { addr, source } => write!(f, "sending to {addr}: {source}"),
            HttpError::Answer { addr, source } => write!(f, "answer from {addr}: {source}"),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HttpError::Connect { source, .. } | HttpError::Send { source, .. } => Some(source),
            HttpError::Answer { source, .. } => Some(source),
            _ => None,
        }
    }
}
