//! Errors of CRI calls, typed by gRPC status code.
//!
//! Every failure of a call - a status sent by the runtime, a broken connection, a
//! deadline, a malformed answer - becomes one [`CriError`] carrying a gRPC [`Code`], the
//! method that failed and a human-readable message. Callers branch on the code (a
//! missing container is `NotFound`, a restarting runtime is `Unavailable`) and log the
//! rest.

use std::fmt;

/// The 17 gRPC status codes, numbered as on the wire (`grpc-status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// Not an error.
    Ok = 0,
    /// The call was cancelled (by the caller).
    Cancelled = 1,
    /// An unknown error (also for codes gRPC does not define).
    Unknown = 2,
    /// The request is invalid.
    InvalidArgument = 3,
    /// No answer before the deadline.
    DeadlineExceeded = 4,
    /// The object named does not exist.
    NotFound = 5,
    /// The object to create exists.
    AlreadyExists = 6,
    /// The caller may not do this.
    PermissionDenied = 7,
    /// Out of a resource (or a message too large).
    ResourceExhausted = 8,
    /// The system is not in the state the call needs.
    FailedPrecondition = 9,
    /// Aborted (a conflict).
    Aborted = 10,
    /// A value out of range.
    OutOfRange = 11,
    /// The method is not implemented.
    Unimplemented = 12,
    /// An internal error (also a malformed answer).
    Internal = 13,
    /// The runtime cannot be reached now.
    Unavailable = 14,
    /// Data lost or corrupted.
    DataLoss = 15,
    /// No valid credentials.
    Unauthenticated = 16,
}

impl Code {
    /// The code for a wire value; numbers gRPC does not define map to `Unknown`, as the
    /// gRPC spec asks of clients.
    pub fn from_u32(n: u32) -> Code {
        match n {
            0 => Code::Ok,
            1 => Code::Cancelled,
            2 => Code::Unknown,
            3 => Code::InvalidArgument,
            4 => Code::DeadlineExceeded,
            5 => Code::NotFound,
            6 => Code::AlreadyExists,
            7 => Code::PermissionDenied,
            8 => Code::ResourceExhausted,
            9 => Code::FailedPrecondition,
            10 => Code::Aborted,
            11 => Code::OutOfRange,
            12 => Code::Unimplemented,
            13 => Code::Internal,
            14 => Code::Unavailable,
            15 => Code::DataLoss,
            16 => Code::Unauthenticated,
            _ => Code::Unknown,
        }
    }

    /// The code's name as written in logs and error messages (`NotFound`).
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "Cancelled",
            Code::Unknown => "Unknown",
            Code::InvalidArgument => "InvalidArgument",
            Code::DeadlineExceeded => "DeadlineExceeded",
            Code::NotFound => "NotFound",
            Code::AlreadyExists => "AlreadyExists",
            Code::PermissionDenied => "PermissionDenied",
            Code::ResourceExhausted => "ResourceExhausted",
            Code::FailedPrecondition => "FailedPrecondition",
            Code::Aborted => "Aborted",
            Code::OutOfRange => "OutOfRange",
            Code::Unimplemented => "Unimplemented",
            Code::Internal => "Internal",
            Code::Unavailable => "Unavailable",
            Code::DataLoss => "DataLoss",
            Code::Unauthenticated => "Unauthenticated",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed CRI call: the gRPC code, the method (full path such as
/// `/runtime.v1.RuntimeService/Version`, empty for errors outside a call) and a message.
///
/// Displayed as `METHOD: CODE: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CriError {
    /// The gRPC status code.
    pub code: Code,
    /// The method's path; empty outside a call.
    pub method: &'static str,
    /// What went wrong.
    pub message: String,
}

impl CriError {
    /// An error of `method` with `code` and `message`.
    pub fn new(code: Code, method: &'static str, message: impl Into<String>) -> CriError {
        CriError {
            code,
            method,
            message: message.into(),
        }
    }

    /// The gRPC status code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The object named in the call does not exist (a removed container or sandbox).
    pub fn is_not_found(&self) -> bool {
        self.code == Code::NotFound
    }

    /// The runtime cannot be reached now (not running, restarting, socket missing);
    /// retrying later may succeed.
    pub fn is_unavailable(&self) -> bool {
        self.code == Code::Unavailable
    }

    /// The call's deadline passed before the runtime answered.
    pub fn is_deadline_exceeded(&self) -> bool {
        self.code == Code::DeadlineExceeded
    }

    /// The object to create already exists (e.g. a container name in use).
    pub fn is_already_exists(&self) -> bool {
        self.code == Code::AlreadyExists
    }

    /// The runtime does not implement the method.
    pub fn is_unimplemented(&self) -> bool {
        self.code == Code::Unimplemented
    }
}

impl fmt::Display for CriError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.method.is_empty() {
            write!(f, "{}: ", self.method)?;
        }
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for CriError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_from_wire_numbers() {
        for n in 0..=16u32 {
            assert_eq!(Code::from_u32(n) as u32, n);
        }
        assert_eq!(Code::from_u32(17), Code::Unknown);
        assert_eq!(Code::from_u32(u32::MAX), Code::Unknown);
    }

    #[test]
    fn display_names_method_code_and_message() {
        let e = CriError::new(
            Code::NotFound,
            "/runtime.v1.RuntimeService/ContainerStatus",
            "container \"abc\" not found",
        );
        assert_eq!(
            e.to_string(),
            "/runtime.v1.RuntimeService/ContainerStatus: NotFound: container \"abc\" not found"
        );
        assert!(e.is_not_found() && !e.is_unavailable());
        let e = CriError::new(Code::InvalidArgument, "", "bad endpoint");
        assert_eq!(e.to_string(), "InvalidArgument: bad endpoint");
    }
}
