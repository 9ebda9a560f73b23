//! Probes and lifecycle hooks, following `validateProbe`, `validateLifecycle` and the
//! handler checks they share (`validateHTTPGetAction`, `validateTCPSocketAction`, the
//! port number or name). Where tinylet cannot carry a handler out it refuses it here
//! rather than let it fail later, or silently pass: gRPC probes, HTTPS (no TLS client),
//! host names (no resolver: IP addresses or localhost), tcpSocket hooks (kubelet fails
//! them when they run).

use super::names::port_name;
use super::Errors;
use crate::model::container::{Container, HttpGetAction, IntOrString};
use crate::model::container::{LifecycleHandler, Probe, UriScheme};
use std::fmt::Display;

impl Errors {
    /// The liveness, readiness and startup probes and the lifecycle hooks of a
    /// container; init containers may have none of them.
    pub(super) fn probes(&mut self, path: &str, c: &Container, init: bool) {
        let probes = [
            ("livenessProbe", &c.liveness_probe, true),
            ("readinessProbe", &c.readiness_probe, false),
            ("startupProbe", &c.startup_probe, true),
        ];
        for (what, probe, success_one) in probes {
            let Some(probe) = probe else { continue };
            let p = format!("{path}.{what}");
            if init {
                self.add(&p, "not allowed for init containers");
                continue;
            }
            self.probe(&p, probe, success_one);
        }
        if let Some(l) = &c.lifecycle {
            if init {
                self.add(
                    format_args!("{path}.lifecycle"),
                    "not allowed for init containers",
                );
            }
            for (what, h) in [("postStart", &l.post_start), ("preStop", &l.pre_stop)] {
                if let Some(h) = h {
                    self.lifecycle_handler(&format!("{path}.lifecycle.{what}"), h);
                }
            }
        }
    }

    /// One probe: exactly one action, timings of at least 1 (successThreshold 1 for
    /// liveness and startup), and the action itself.
    fn probe(&mut self, p: &str, probe: &Probe, success_one: bool) {
        let set = [
            ("exec", probe.exec.is_some()),
            ("httpGet", probe.http_get.is_some()),
            ("tcpSocket", probe.tcp_socket.is_some()),
            ("grpc", probe.grpc.is_some()),
        ];
        self.exactly_one(p, "exec, httpGet, tcpSocket, grpc", &set);
        self.non_negative(
            format_args!("{p}.initialDelaySeconds"),
            probe.initial_delay_seconds.into(),
        );
        for (field, v) in [
            ("timeoutSeconds", probe.timeout_seconds),
            ("periodSeconds", probe.period_seconds),
            ("successThreshold", probe.success_threshold),
            ("failureThreshold", probe.failure_threshold),
        ] {
            if v < 1 {
                self.add(
                    format_args!("{p}.{field}"),
                    format_args!("must be at least 1, got {v}"),
                );
            }
        }
        if success_one && probe.success_threshold != 1 {
            self.add(
                format_args!("{p}.successThreshold"),
                format_args!(
                    "must be 1 for liveness and startup probes, got {}",
                    probe.success_threshold
                ),
            );
        }
        if let Some(g) = probe.termination_grace_period_seconds.filter(|g| *g < 1) {
            self.add(
                format_args!("{p}.terminationGracePeriodSeconds"),
                format_args!("must be at least 1, got {g}"),
            );
        }
        if let Some(e) = &probe.exec {
            self.exec(p, &e.command);
        }
        if let Some(h) = &probe.http_get {
            self.http_get(p, h);
        }
        if let Some(t) = &probe.tcp_socket {
            self.port(format_args!("{p}.tcpSocket.port"), &t.port);
            self.host(format_args!("{p}.tcpSocket.host"), &t.host);
        }
        if let Some(g) = &probe.grpc {
            self.range(format_args!("{p}.grpc.port"), g.port.into(), 1, 65535);
            // Refused rather than ignored: a probe that never runs would report a
            // container healthy that nobody checked.
            self.add(
                format_args!("{p}.grpc"),
                "gRPC probes are not supported by tinylet; use exec, httpGet or tcpSocket",
            );
        }
    }

    /// An httpGet action: port, an IP literal host (tinylet resolves no names), and
    /// plain HTTP (there is no TLS client).
    fn http_get(&mut self, p: &str, h: &HttpGetAction) {
        self.port(format_args!("{p}.httpGet.port"), &h.port);
        self.host(format_args!("{p}.httpGet.host"), &h.host);
        if h.scheme == UriScheme::HTTPS {
            self.add(
                format_args!("{p}.httpGet.scheme"),
                "HTTPS is not supported by tinylet (no TLS client); use HTTP or tcpSocket",
            );
        }
        for (i, hd) in h.http_headers.iter().enumerate() {
            let bad_name =
                hd.name.is_empty() || hd.name.bytes().any(|b| !b.is_ascii_graphic() || b == b':');
            if bad_name {
                self.add(
                    format_args!("{p}.httpGet.httpHeaders[{i}].name"),
                    format_args!("must be an HTTP header name, got {:?}", hd.name),
                );
            }
            if hd.value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                self.add(
                    format_args!("{p}.httpGet.httpHeaders[{i}].value"),
                    "must not contain line breaks",
                );
            }
        }
        if h.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            self.add(
                format_args!("{p}.httpGet.path"),
                format_args!(
                    "must not contain spaces or control characters, got {:?}",
                    h.path
                ),
            );
        }
    }

    /// A probe or hook host: empty (the pod's IP), `localhost` or an IP address.
    fn host(&mut self, path: impl Display, host: &str) {
        if !host.is_empty() && host != "localhost" && host.parse::<std::net::IpAddr>().is_err() {
            self.add(
                path,
                format_args!(
                    "must be an IP address or localhost (tinylet resolves no names), got {host:?}"
                ),
            );
        }
    }

    /// A postStart or preStop hook: exactly one action, each checked.
    fn lifecycle_handler(&mut self, p: &str, h: &LifecycleHandler) {
        let set = [
            ("exec", h.exec.is_some()),
            ("httpGet", h.http_get.is_some()),
            ("tcpSocket", h.tcp_socket.is_some()),
            ("sleep", h.sleep.is_some()),
        ];
        self.exactly_one(p, "exec, httpGet, tcpSocket, sleep", &set);
        if let Some(e) = &h.exec {
            self.exec(p, &e.command);
        }
        if let Some(g) = &h.http_get {
            self.http_get(p, g);
        }
        if h.tcp_socket.is_some() {
            self.add(
                format_args!("{p}.tcpSocket"),
                "not supported as a lifecycle handler (kubelet fails such hooks when they run); use exec, httpGet or sleep",
            );
        }
        if let Some(s) = &h.sleep {
            self.non_negative(format_args!("{p}.sleep.seconds"), s.seconds);
        }
    }

    /// An exec action needs a command.
    fn exec(&mut self, p: &str, command: &[String]) {
        if command.is_empty() {
            self.add(format_args!("{p}.exec.command"), "required");
        }
    }

    /// A probe or hook port: a number 1-65535 or a port name.
    fn port(&mut self, path: impl Display, port: &IntOrString) {
        match port {
            IntOrString::Int(n) => self.range(path, (*n).into(), 1, 65535),
            IntOrString::String(s) => {
                if let Err(e) = port_name(s) {
                    self.add(path, e);
                }
            }
        }
    }
}
