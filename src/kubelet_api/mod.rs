//! The kubelet API on `apiServer.port` (10250) when the node has joined a cluster, so
//! the API server can proxy to it (`kubectl logs`): HTTPS with TLS 1.3 ([`tls`]), one
//! request per connection, the HTTP/1.1 code and connection bounds of the local status
//! endpoint (`crate::server`).
//!
//! Every request is authenticated and authorized as kubelet does with anonymous auth
//! off and webhook authorization: the client certificate's CN and O ([`auth`]), a
//! `SubjectAccessReview` for `nodes/<subresource>` ([`authz`], cached). No certificate:
//! 401; denied: 403; the API server unreachable: 500. Served: `/containerLogs/...`
//! ([`container_logs`]), `/exec`, `/attach` and `/portForward` relayed to the runtime's
//! streaming server ([`stream`], [`relay`]), `/healthz` and `/pods` as on the local
//! endpoint, kubelet's `/metrics/resource` (node and container CPU and memory).
//!
//! Bounded: at most [`MAX_CONNECTIONS`] connections in setup or a short answer (the
//! oldest is closed for a new one), plus at most `apiServer.maxStreams` authorized
//! long-lived ones (streams, followed logs: [`slots`], never closed for a newcomer); a request
//! head of `server::MAX_HEAD`, [`SETUP_DEADLINE`] from accept to an authorized request
//! (TLS handshake, head, review), then each write at most `WRITE_WAIT`. While nobody
//! connects it costs nothing: the accept waits in the reactor. Connections authorized
//! and refused (handshake failed, 401, 403) are counted for the status endpoint's
//! `/metrics`.

mod auth;
mod authz;
mod container_logs;
mod csr;
mod csr_der;
mod relay;
mod slots;
mod stream;
mod tls;

use crate::agent::context::Context;
use crate::metrics::Refused;
use crate::server::http::{self, Answer, Head};
use crate::server::Evictable;
use crate::uplink::agent::Uplink;
use crate::uplink::counters::Counters;
use crate::uplink::kubeconfig::{self, Sourced};
use crate::uplink::tls_io::TlsStream;
use crate::uplink::SetupError;
use async_io::{Async, Timer};
use auth::{Attributes, User};
use rustls::{ServerConfig, ServerConnection};
use smol::io::AsyncWriteExt;
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tls::TlsConn;

/// Connections served at once besides the long-lived ones ([`slots`]); the oldest is
/// closed for a new one past this.
pub const MAX_CONNECTIONS: usize = 16;
/// What is read and dropped after an answer, at most, before closing.
const LINGER_BYTES: usize = 64 << 10;
/// How long the client may take to close after the answer.
const LINGER_WAIT: Duration = Duration::from_secs(5);
/// From accept to an authorized request: handshake, request head, access review.
pub const SETUP_DEADLINE: Duration = Duration::from_secs(15);

/// What the connections share.
struct KubeletApi {
    ctx: Rc<Context>,
    tls: Arc<ServerConfig>,
    authz: authz::Authorizer,
    /// TLS bytes of the kubelet API (not the uplink's).
    counters: Rc<Counters>,
    /// Long-lived requests open now: exec, attach and port-forward streams, followed
    /// logs ([`slots`]).
    streams: std::cell::Cell<usize>,
}

impl KubeletApi {
    /// A setting of the `apiServer` section (always there while the API serves; its
    /// default otherwise).
    fn setting<T>(&self, get: impl Fn(&crate::config::ApiServerConfig) -> T) -> T {
        match &self.ctx.cfg.api_server {
            Some(c) => get(c),
            None => get(&Default::default()),
        }
    }
}

/// Serves the kubelet API when `apiServer` names a port and a certificate (files, or
/// `serverTLSBootstrap`: then once the cluster has signed one), and records its port for
/// the Node's status. Unusable certificate or CA files are an error (the agent refuses
/// to start, naming the file); a port that cannot be bound is logged and the agent goes
/// on without the API (the pods matter more).
pub fn start(up: &Rc<Uplink>) -> Result<(), SetupError> {
    let Some(api) = &up.ctx.cfg.api_server else {
        return Ok(());
    };
    let Some(addr) = api.kubelet_api_address() else {
        if api.port != 0 {
            log::warn!(
                "kubelet API off: neither apiServer.tlsCertFile/tlsPrivateKeyFile nor \
                 serverTLSBootstrap is set (kubectl logs for this node's pods will fail)"
            );
        }
        return Ok(());
    };
    let kc = kubeconfig::load(&api.kubeconfig)?;
    if !api.tls_cert_file.as_os_str().is_empty() {
        let (cert, key) = tls::files(api)?;
        let (config, _) = tls::server_config(api, &kc, &cert, &key)?;
        listen(up, addr, config);
        return Ok(());
    }
    let up = up.clone();
    let bootstrap = async move {
        let pem = csr::serving_pem(&up).await;
        let from = up.ctx.cfg.state_dir.join("pki").join(csr::FILE);
        let sourced = Sourced {
            value: pem,
            from: from.display().to_string(),
        };
        let Some(api) = &up.ctx.cfg.api_server else {
            return;
        };
        match tls::server_config(api, &kc, &sourced, &sourced) {
            Ok((config, serving)) => {
                listen(&up, addr, config);
                csr::rotate(up, serving, sourced.value).await;
            }
            Err(e) => log::error!("kubelet API: the signed certificate: {e}; no kubelet API"),
        }
    };
    crate::rt::spawn(bootstrap).detach();
    Ok(())
}

/// Binds `addr` and serves it on the executor.
fn listen(up: &Rc<Uplink>, addr: std::net::SocketAddr, tls: Arc<ServerConfig>) {
    let listener = match TcpListener::bind(addr).and_then(Async::new) {
        Ok(l) => l,
        Err(e) => {
            log::error!("apiServer.port: cannot listen on {addr}: {e}; no kubelet API");
            return;
        }
    };
    up.kubelet_port.set(addr.port());
    log::info!(
        "kubelet API on https://{addr}/ (containerLogs, exec, attach, portForward, healthz, \
         pods, metrics/resource)"
    );
    let shared = Rc::new(KubeletApi {
        ctx: up.ctx.clone(),
        tls,
        authz: authz::Authorizer::new(up.clone()),
        counters: up.kubelet_api_bytes.clone(),
        streams: Default::default(),
    });
    let accept =
        crate::server::accept_bounded(listener, MAX_CONNECTIONS, "kubelet API", move |s, e| {
            connection(s, e, shared.clone())
        });
    crate::rt::spawn(accept).detach();
}

/// One connection: handshake, request, authorization, answer, close.
async fn connection(tcp: Async<TcpStream>, evictable: Evictable, api: Rc<KubeletApi>) {
    let setup = async {
        let (mut conn, user) = handshake(tcp, &api).await?;
        let refused = match http::read_head(&mut conn, crate::server::MAX_HEAD).await {
            Ok(head) => match authorize(&api, user.as_ref(), &head).await {
                None => return Some((conn, Ok(head))),
                Some(answer) => answer,
            },
            Err(http::BadHead::Closed) => return None,
            Err(bad) => bad.answer(),
        };
        Some((conn, Err(refused)))
    };
    let late = async {
        Timer::after(SETUP_DEADLINE).await;
        None
    };
    let Some((mut conn, request)) = smol::future::or(setup, late).await else {
        return;
    };
    let served = match request {
        Ok(head) => route(&mut conn, &api, &evictable, &head).await,
        Err(answer) => container_logs::timed(answer.write_to(&mut conn)).await,
    };
    if let Err(e) = served {
        log::debug!("kubelet API: answering: {e}");
        return;
    }
    // close_notify, then what the client still sends is dropped until it closes (as
    // the local endpoint's `linger_close`: a reset could destroy the answer).
    let _ = container_logs::timed(conn.close()).await;
    let linger = http::drain(&mut conn, LINGER_BYTES);
    let late = async {
        Timer::after(LINGER_WAIT).await;
    };
    smol::future::or(linger, late).await;
}

/// The TLS handshake and the client's user (`None`: no certificate).
async fn handshake(tcp: Async<TcpStream>, api: &KubeletApi) -> Option<(TlsConn, Option<User>)> {
    let server = ServerConnection::new(api.tls.clone()).ok()?;
    let tls = match TlsStream::handshake(tcp, server, api.counters.clone()).await {
        Ok(t) => t,
        Err(e) => {
            log::debug!("kubelet API: TLS handshake: {e}");
            crate::metrics::kubelet_api_refused(Refused::TlsHandshake);
            return None;
        }
    };
    let user = tls
        .connection()
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| User::from_certificate(c));
    Some((TlsConn(tls), user))
}

/// `None` when `user` may make the request; else the refusal, worded as kubelet's.
async fn authorize(api: &KubeletApi, user: Option<&User>, head: &Head) -> Option<Answer> {
    let Some(user) = user else {
        crate::metrics::kubelet_api_refused(Refused::Unauthorized);
        return Some(Answer::text(401, "Unauthorized\n"));
    };
    let Some(attrs) = Attributes::of(&head.method, &head.path) else {
        return Some(Answer::text(405, "method not allowed\n"));
    };
    let what = format!(
        "user={}, verb={}, resource=nodes, subresource={}",
        user.name, attrs.verb, attrs.subresource
    );
    match api.authz.allowed(user, &attrs).await {
        Ok(true) => {
            crate::metrics::kubelet_api_accepted();
            None
        }
        Ok(false) => {
            crate::metrics::kubelet_api_refused(Refused::Forbidden);
            Some(Answer::text(403, &format!("Forbidden ({what})\n")))
        }
        Err(e) => {
            log::warn!("kubelet API: SubjectAccessReview for {what}: {e}");
            Some(Answer::text(
                500,
                &format!("Authorization error ({what})\n"),
            ))
        }
    }
}

/// The answer to an authorized request.
async fn route(
    conn: &mut TlsConn,
    api: &KubeletApi,
    evictable: &Evictable,
    head: &Head,
) -> std::io::Result<()> {
    let cfg = &api.ctx.cfg;
    match stream::StreamRequest::parse(&head.path, &head.query) {
        Some(Ok(req)) => return stream::serve(conn, api, evictable, head, req).await,
        Some(Err(refused)) => return container_logs::timed(refused.answer().write_to(conn)).await,
        None => {}
    }
    if let Some(rest) = head.path.strip_prefix("/containerLogs/") {
        if head.method != "GET" {
            return container_logs::timed(Answer::text(405, "only GET is served\n").write_to(conn))
                .await;
        }
        return match container_logs::LogRequest::parse(rest, &head.query) {
            Ok(req) if req.follows() => match slots::take(api, evictable) {
                Ok(_slot) => container_logs::serve(conn, cfg, &req).await,
                Err(too_many) => container_logs::timed(too_many.write_to(conn)).await,
            },
            Ok(req) => container_logs::serve(conn, cfg, &req).await,
            Err(refused) => container_logs::timed(refused.answer().write_to(conn)).await,
        };
    }
    let answer = match (head.method.as_str(), head.path.as_str()) {
        ("GET", "/healthz") => crate::server::routes::healthz(cfg),
        ("GET", "/pods") => crate::server::pods::answer(cfg),
        ("GET", "/metrics/resource") => {
            crate::server::metrics_text::resource_answer(&api.ctx).await
        }
        (_, "/healthz" | "/pods" | "/metrics/resource") => {
            Answer::text(405, "only GET is served\n")
        }
        _ => Answer::text(
            404,
            "not found; served: /containerLogs/, /exec/, /attach/, /portForward/, /healthz, \
             /pods, /metrics/resource\n",
        ),
    };
    container_logs::timed(answer.write_to(conn)).await
}
