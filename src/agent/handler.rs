//! The three actions probes and lifecycle hooks share, run against one container:
//! exec (CRI ExecSync; exit status 0 is success), httpGet (see [`super::http_get`];
//! 200-399 is success) and tcpSocket (a connect is success). Each returns `Err` with
//! what went wrong, for the log line; none of them panics on what the peer does.

use super::context::Context;
use super::http_get::{self, Get, Until};
use crate::kuberuntime::observed::ObservedPod;
use crate::model::container::{ContainerPort, HttpGetAction, IntOrString, TcpSocketAction};
use crate::model::Pod;
use async_io::{Async, Timer};
use smol::future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

mod error;
pub use error::HandlerError;

/// The container a handler acts on.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The runtime id of the container (for exec).
    pub container_id: String,
    /// Where httpGet and tcpSocket go when the handler names no host: the pod's IP.
    pub pod_ip: String,
    /// The container's ports, for handlers that name a port.
    pub ports: Vec<ContainerPort>,
}

/// The address handlers reach the pod at: the host's for hostNetwork pods (loopback
/// when it is unknown), else the newest sandbox's IP.
pub fn pod_ip(ctx: &Context, pod: &Pod, observed: &ObservedPod) -> String {
    if pod.spec.host_network {
        return if ctx.host.host_ip.is_empty() {
            Ipv4Addr::LOCALHOST.to_string()
        } else {
            ctx.host.host_ip.clone()
        };
    }
    observed
        .latest_sandbox()
        .map(|s| s.ip.clone())
        .unwrap_or_default()
}

/// Runs `cmd` in the container; the runtime kills it after `timeout`.
pub async fn exec(
    ctx: &Context,
    t: &Target,
    cmd: &[String],
    timeout: Duration,
) -> Result<(), HandlerError> {
    let r = ctx
        .cri
        .runtime
        .exec_sync(&t.container_id, cmd.to_vec(), Some(timeout))
        .await
        .map_err(HandlerError::Exec)?;
    if r.exit_code == 0 {
        return Ok(());
    }
    let out = if r.stderr.is_empty() {
        &r.stdout
    } else {
        &r.stderr
    };
    let text = String::from_utf8_lossy(out.get(..200).unwrap_or(out));
    Err(HandlerError::ExitStatus {
        code: r.exit_code,
        output: text.trim_end().to_string(),
    })
}

/// An HTTP GET; a probe's verdict: a status outside 200-399 is a failure, a 3xx a
/// success with a warning (the `Ok` value; kubelet's `ProbeWarning` event).
pub async fn http_probe(
    t: &Target,
    h: &HttpGetAction,
    timeout: Duration,
) -> Result<Option<String>, HandlerError> {
    let (addr, code) = http_get(t, h, timeout, Until::Status).await?;
    if !http_get::is_success(code) {
        return Err(HandlerError::HttpStatus {
            addr,
            path: h.path.clone(),
            code,
        });
    }
    // A redirect counts as success with kubelet's warning (redirects are not followed).
    Ok((code >= 300).then(|| format!("Probe terminated redirects, Response status: {code}")))
}

/// An HTTP GET: the address it went to and the status code it got, once the answer
/// has come as far as `until`.
pub async fn http_get(
    t: &Target,
    h: &HttpGetAction,
    timeout: Duration,
    until: Until,
) -> Result<(SocketAddr, u16), HandlerError> {
    let addr = address(t, &h.host, &h.port)?;
    let headers: Vec<(String, String)> = h
        .http_headers
        .iter()
        .map(|x| (x.name.clone(), x.value.clone()))
        .collect();
    let get = Get {
        addr,
        path: &h.path,
        headers: &headers,
    };
    let code = http_get::get(&get, timeout, until)
        .await
        .map_err(HandlerError::Http)?;
    Ok((addr, code))
}

/// A TCP connect within `timeout`.
pub async fn tcp_socket(
    t: &Target,
    s: &TcpSocketAction,
    timeout: Duration,
) -> Result<(), HandlerError> {
    let addr = address(t, &s.host, &s.port)?;
    future::or(
        async {
            Async::<TcpStream>::connect(addr)
                .await
                .map(drop)
                .map_err(|source| HandlerError::Connect { addr, source })
        },
        async {
            Timer::after(timeout).await;
            Err(HandlerError::ConnectTimeout { addr, timeout })
        },
    )
    .await
}

/// The socket address of `host` (or the pod IP) and `port` (a number or one of the
/// container's port names).
fn address(t: &Target, host: &str, port: &IntOrString) -> Result<SocketAddr, HandlerError> {
    let port = match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(name) => t
            .ports
            .iter()
            .find(|p| &p.name == name)
            .map(|p| p.container_port)
            .ok_or_else(|| HandlerError::NoPortNamed(name.clone()))?,
    };
    let port = u16::try_from(port)
        .ok()
        .filter(|p| *p != 0)
        .ok_or(HandlerError::PortOutOfRange(port))?;
    let host = if host.is_empty() {
        t.pod_ip.as_str()
    } else {
        host
    };
    let ip = match host {
        "" => return Err(HandlerError::NoPodIp),
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h => h
            .parse()
            .map_err(|_| HandlerError::HostNotIp(h.to_string()))?,
    };
    Ok(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_from_pod_ip_host_and_port_names() {
        let t = Target {
            container_id: "c".into(),
            pod_ip: "10.1.0.7".into(),
            ports: vec![ContainerPort {
                name: "http".into(),
                container_port: 8080,
                ..Default::default()
            }],
        };
        let a = |host: &str, port: IntOrString| address(&t, host, &port);
        assert_eq!(
            a("", IntOrString::Int(80)).unwrap().to_string(),
            "10.1.0.7:80"
        );
        assert_eq!(
            a("", IntOrString::String("http".into()))
                .unwrap()
                .to_string(),
            "10.1.0.7:8080"
        );
        assert_eq!(
            a("localhost", IntOrString::Int(1)).unwrap().to_string(),
            "127.0.0.1:1"
        );
        assert_eq!(
            a("::1", IntOrString::Int(9)).unwrap().to_string(),
            "[::1]:9"
        );
        assert!(a("", IntOrString::String("nope".into())).is_err());
        assert!(a("", IntOrString::Int(0)).is_err());
        assert!(a("", IntOrString::Int(70000)).is_err());
        assert!(a("example.com", IntOrString::Int(80)).is_err());
        let no_ip = Target::default();
        assert!(address(&no_ip, "", &IntOrString::Int(80)).is_err());
    }
}
