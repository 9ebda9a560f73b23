//! Why a handler (probe or lifecycle hook) failed, worded for the probe and hook log
//! lines; the runtime's, the socket's or the HTTP client's error is kept as the source.

use crate::agent::http_get::HttpError;
use crate::cri::CriError;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// A failed exec, httpGet or tcpSocket handler.
#[derive(Debug)]
pub enum HandlerError {
    /// ExecSync failed.
    Exec(CriError),
    /// The command exited with another status than 0.
    ExitStatus {
        /// Its exit status.
        code: i32,
        /// The start of its stderr (else stdout), trimmed.
        output: String,
    },
    /// The handler names a port the container does not declare.
    NoPortNamed(String),
    /// The port number is outside 1-65535.
    PortOutOfRange(i32),
    /// No host named and the pod has no IP yet.
    NoPodIp,
    /// The host is not an IP address (names are not resolved).
    HostNotIp(String),
    /// The GET failed.
    Http(HttpError),
    /// The GET was answered with a status outside 200-399.
    HttpStatus {
        /// Where the GET went.
        addr: SocketAddr,
        /// The path asked for.
        path: String,
        /// The status code.
        code: u16,
    },
    /// The TCP connect failed.
    Connect {
        /// Where it went.
        addr: SocketAddr,
        /// The system's error.
        source: io::Error,
    },
    /// The TCP connect got no answer in time.
    ConnectTimeout {
        /// Where it went.
        addr: SocketAddr,
        /// How long it waited.
        timeout: Duration,
    },
    /// A lifecycle hook ran past its limit.
    NotDone(Duration),
    /// A lifecycle handler of a kind hooks do not support (tcpSocket).
    TcpSocketHook,
    /// A probe without a handler tinylet runs.
    NoProbeHandler,
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Exec(e) => fmt::Display::fmt(e, f),
            HandlerError::ExitStatus { code, output } => write!(f, "exit status {code}: {output}"),
            HandlerError::NoPortNamed(name) => {
                write!(f, "the container has no port named {name:?}")
            }
            HandlerError::PortOutOfRange(port) => write!(f, "port {port} is not 1-65535"),
            HandlerError::NoPodIp => f.write_str("the pod has no IP address yet"),
            HandlerError::HostNotIp(h) => write!(f, "host {h:?} is not an IP address"),
            HandlerError::Http(e) => fmt::Display::fmt(e, f),
            HandlerError::HttpStatus { addr, path, code } => {
                write!(f, "HTTP GET {addr}{path} answered {code}")
            }
            HandlerError::Connect { addr, source } => write!(f, "connecting to {addr}: {source}"),
            HandlerError::ConnectTimeout { addr, timeout } => {
                write!(f, "connecting to {addr}: no answer within {timeout:?}")
            }
            HandlerError::NotDone(limit) => write!(f, "not done within {limit:?}"),
            HandlerError::TcpSocketHook => {
                f.write_str("tcpSocket is not supported as a lifecycle handler")
            }
            HandlerError::NoProbeHandler => {
                f.write_str("the probe has no handler tinylet runs (exec, httpGet, tcpSocket)")
            }
        }
    }
}

impl HandlerError {
    /// What kubelet puts after `Liveness probe failed: ` in its `Unhealthy` event: an
    /// exec probe's output alone, an httpGet's status in kubelet's words; the other
    /// failures as the log words them (kubelet's there are Go's dial errors).
    pub fn probe_output(&self) -> String {
        match self {
            HandlerError::ExitStatus { output, .. } => output.clone(),
            HandlerError::HttpStatus { code, .. } => {
                format!("HTTP probe failed with statuscode: {code}")
            }
            other => other.to_string(),
        }
    }
}

impl std::error::Error for HandlerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HandlerError::Exec(e) => Some(e),
            HandlerError::Http(e) => Some(e),
            HandlerError::Connect { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_output_is_worded_as_kubelet_words_it() {
        let exit = HandlerError::ExitStatus {
            code: 1,
            output: "not ready".into(),
        };
        assert_eq!(exit.probe_output(), "not ready");
        let http = HandlerError::HttpStatus {
            addr: "10.0.0.5:8080".parse().unwrap(),
            path: "/healthz".into(),
            code: 503,
        };
        assert_eq!(
            http.probe_output(),
            "HTTP probe failed with statuscode: 503"
        );
        let port = HandlerError::NoPortNamed("web".into());
        assert_eq!(port.probe_output(), port.to_string());
    }
}
