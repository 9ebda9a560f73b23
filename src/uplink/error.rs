//! The uplink's errors. [`ApiError`]: one request failed; it keeps its cause and tells
//! callers what they need to decide (retry later, relist, give up on this object). No
//! message ever holds a token, a key or a secret's data: only file names, fields and
//! the API server's own words. [`SetupError`] and [`ConnectError`] are the TLS
//! plumbing's (`crate::tls::error`), named here too because the uplink's calls return
//! them.

pub use crate::tls::error::{ConnectError, SetupError};
use std::fmt;
use std::time::Duration;

/// A failure status from the API server: HTTP code, and the reason and message of the
/// `Status` object it sent (when it sent one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The HTTP status code.
    pub code: u16,
    /// `NotFound`, `AlreadyExists`, `Conflict`, `Forbidden`, `Expired`, `Gone`,
    /// `Invalid`, ... (empty when the body was not a `Status`).
    pub reason: String,
    /// The `Status` object's message.
    pub message: String,
}

/// Why one request failed.
#[derive(Debug)]
pub enum ApiError {
    /// The API server answered with a failure status.
    Status(Status),
    /// Not connected, or the connection broke before the answer was complete.
    Unavailable(ConnectError),
    /// No complete answer within the request's deadline.
    Timeout(Duration),
    /// The answer (or a watch event) is larger than the client accepts.
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The answer is not what the API sends (not JSON, wrong shape).
    Decode(serde_json::Error),
    /// The answer broke the protocol (e.g. a watch line that is not an event).
    Protocol(String),
    /// The request could not be made (a body that does not serialize, a bad path).
    Request(String),
}

impl ApiError {
    /// A failure status with `code` alone (no reason, no message), for tests.
    #[cfg(test)]
    pub fn with_code(code: u16) -> ApiError {
        ApiError::Status(Status {
            code,
            reason: String::new(),
            message: String::new(),
        })
    }

    /// The HTTP status code of a failure status.
    pub fn code(&self) -> Option<u16> {
        match self {
            ApiError::Status(s) => Some(s.code),
            _ => None,
        }
    }

    /// The object does not exist (404).
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// The object changed or exists (409).
    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }

    /// The node may not do this (403).
    pub fn is_forbidden(&self) -> bool {
        self.code() == Some(403)
    }

    /// 410 Gone (or reason `Expired`): the resourceVersion is too old; relist.
    pub fn is_gone(&self) -> bool {
        matches!(self, ApiError::Status(s) if s.code == 410 || s.reason == "Expired" || s.reason == "Gone")
    }

    /// 422: the object was refused by validation or admission.
    pub fn is_invalid(&self) -> bool {
        self.code() == Some(422)
    }

    /// Whether trying again later may succeed without changing the request.
    pub fn is_transient(&self) -> bool {
        match self {
            ApiError::Unavailable(_) | ApiError::Timeout(_) => true,
            ApiError::Status(s) => matches!(s.code, 429 | 500 | 502 | 503 | 504),
            _ => false,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Status(s) if s.reason.is_empty() => {
                write!(f, "HTTP {}: {}", s.code, s.message)
            }
            ApiError::Status(s) => write!(f, "HTTP {} {}: {}", s.code, s.reason, s.message),
            ApiError::Unavailable(e) => write!(f, "API server unavailable: {e}"),
            ApiError::Timeout(t) => write!(f, "no answer within {t:?}"),
            ApiError::TooLarge { limit } => write!(f, "answer larger than {limit} bytes"),
            ApiError::Decode(e) => write!(f, "decoding the answer: {e}"),
            ApiError::Protocol(m) => write!(f, "bad answer: {m}"),
            ApiError::Request(m) => write!(f, "bad request: {m}"),
        }
    }
}

impl std::error::Error for ApiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ApiError::Unavailable(e) => Some(e),
            ApiError::Decode(e) => Some(e),
            _ => None,
        }
    }
}
