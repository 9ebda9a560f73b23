//! The errors of the TLS plumbing. [`SetupError`]: the kubeconfig or a file it names
//! cannot be used (found at start or by `check-config`; names the file and field).
//! [`ConnectError`]: a connection (TCP, TLS, HTTP/2) could not be made or broke. No
//! message ever holds a token, a key or a secret's data: only file names and fields.

use crate::model::yaml::YamlError;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why the kubeconfig (or a file it names) cannot be used.
#[derive(Debug)]
pub enum SetupError {
    /// The file cannot be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The path is not a regular file.
    NotRegular {
        /// The path.
        path: PathBuf,
    },
    /// The file is larger than the limit.
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit in bytes.
        limit: usize,
    },
    /// A key or token file (or a kubeconfig embedding one) readable by group or others.
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// The kubeconfig is not YAML the reader accepts.
    Yaml {
        /// The kubeconfig.
        path: PathBuf,
        /// The YAML error.
        source: YamlError,
    },
    /// A field is missing, malformed or asks for something not supported.
    Invalid {
        /// The kubeconfig.
        path: PathBuf,
        /// The field's path.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A certificate or key (named by `from`) that TLS cannot use.
    Tls {
        /// Where it was read (a file or a kubeconfig field).
        from: String,
        /// rustls' error.
        source: rustls::Error,
    },
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            SetupError::NotRegular { path } => write!(f, "{}: not a regular file", path.display()),
            SetupError::TooLarge { path, limit } => {
                write!(f, "{}: larger than {limit} bytes", path.display())
            }
            SetupError::NotPrivate { path, mode } => write!(
                f,
                "{}: holds a secret but is readable by group or others (mode {mode:04o}); \
                 chmod 600 it",
                path.display()
            ),
            SetupError::Yaml { path, source } => write!(f, "{}: {source}", path.display()),
            SetupError::Invalid {
                path,
                field,
                message,
            } => write!(f, "{}: {field}: {message}", path.display()),
            SetupError::Tls { from, source } => write!(f, "{from}: {source}"),
        }
    }
}

impl std::error::Error for SetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SetupError::Io { source, .. } => Some(source),
            SetupError::Yaml { source, .. } => Some(source),
            SetupError::Tls { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why a connection to the API server could not be made or broke.
#[derive(Debug)]
pub enum ConnectError {
    /// TCP connect, or reading/writing the socket.
    Io(io::Error),
    /// The TLS handshake failed (certificate not trusted, wrong name, expired, client
    /// certificate refused by the server...).
    Tls(rustls::Error),
    /// The server did not agree to HTTP/2 (ALPN `h2`).
    NoH2,
    /// The HTTP/2 connection failed (handshake, GOAWAY, protocol error).
    H2(h2::Error),
    /// No connection within the request's deadline.
    TimedOut,
    /// The host name did not resolve.
    Resolve(String),
    /// Earlier attempts failed (`last`); the next is not due before the deadline.
    BackingOff {
        /// The last attempt's error.
        last: String,
        /// When the next attempt is due.
        retry_in: Duration,
    },
    /// The server asked to wait (429 or 503 with `Retry-After`) past the deadline.
    AskedToWait {
        /// When the next request may go.
        retry_in: Duration,
    },
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Io(e) => write!(f, "{e}"),
            ConnectError::Tls(e) => write!(f, "TLS: {e}{}", tls_hint(e)),
            ConnectError::NoH2 => f.write_str("the server did not agree to HTTP/2 (ALPN h2)"),
            ConnectError::H2(e) => write!(f, "HTTP/2: {e}"),
            ConnectError::TimedOut => f.write_str("timed out"),
            ConnectError::Resolve(why) => write!(f, "resolving the server's name: {why}"),
            ConnectError::BackingOff { last, retry_in } => {
                write!(f, "not connected ({last}); next attempt in {retry_in:.1?}")
            }
            ConnectError::AskedToWait { retry_in } => write!(
                f,
                "the API server asked to wait (Retry-After); next request in {retry_in:.1?}"
            ),
        }
    }
}

/// What a TLS failure most likely means for a node's kubeconfig.
fn tls_hint(e: &rustls::Error) -> &'static str {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            " (the server's certificate is not signed by the kubeconfig's certificate authority)"
        }
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            " (the server's certificate does not name the host in the kubeconfig's server URL)"
        }
        E::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            " (the server's certificate has expired, or this machine's clock is wrong)"
        }
        E::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            " (the server's certificate is not valid yet: is this machine's clock right?)"
        }
        E::AlertReceived(
            A::BadCertificate
            | A::CertificateRequired
            | A::UnknownCA
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::DecryptError,
        ) => " (the server refused the node's client certificate)",
        E::AlertReceived(A::ProtocolVersion) => {
            " (the server does not speak TLS 1.3, the only version this build has)"
        }
        _ => "",
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::Io(e) => Some(e),
            ConnectError::Tls(e) => Some(e),
            ConnectError::H2(e) => Some(e),
            _ => None,
        }
    }
}
