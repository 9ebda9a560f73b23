//! The kubelet API on `apiServer.port` (10250) when the node has joined a cluster, so
//! the API server can proxy to it (`kubectl logs`): HTTPS with TLS 1.3 (`crate::tls::server`), one
//! request per connection, the HTTP/1.1 code and connection bounds it shares with the
//! local status endpoint (`crate::http`).
//!
//! The pod a request names is the pod the API server names, never another of the
//! node's: a local pod only under its mirror's name ([`pod_names`]).
//!
//! Every request is authenticated and authorized as kubelet does with anonymous auth
//! off and webhook authorization: the client certificate's CN and O ([`auth`]), then an
//! [`Authorize`] asked about `nodes/<subresource>` (the agent's is a cached
//! `SubjectAccessReview` through the uplink). No certificate: 401; denied: 403; the API
//! server unreachable: 500. Served: `/containerLogs/...`
//! ([`container_logs`]), `/exec`, `/attach` and `/portForward` relayed to the runtime's
//! streaming server ([`stream`], [`relay`]), `/healthz` and `/pods` as on the local
//! endpoint, kubelet's `/metrics/resource` (node and container CPU and memory).
//!
//! Bounded (`crate::http::accept`): at most [`MAX_UNTRUSTED`] connections not yet
//! authorized (in the TLS handshake, without a client certificate, authenticated and
//! waiting for their request or its review, or refused), at most [`MAX_PER_PEER`] of
//! them from one address and [`MAX_PER_USER`] of one authenticated user (unless a
//! request of that user, or from that address, was authorized lately), which never close an authorized one;
//! at most [`MAX_CONNECTIONS`] authorized ones in a short request, plus at most
//! `apiServer.maxStreams` authorized long-lived ones (streams, followed logs:
//! [`slots`], never closed for a newcomer). A certificate of the cluster CA alone (a
//! stolen gateway's) buys no trust: the connection counts as trusted only once its
//! request was authorized. The handshake is bounded in time and in the
//! thread's CPU ([`handshake`]); then a request head of [`http::MAX_HEAD`],
//! [`SETUP_DEADLINE`] from accept to an authorized request (handshake, head, review),
//! then each write at most `WRITE_WAIT`. While nobody connects it costs nothing: the
//! accept waits in the reactor. Connections authorized and refused (handshake failed or
//! too slow, 401, 403, closed for a newcomer) are counted for the status endpoint's
//! `/metrics`.

mod auth;
mod container_logs;
mod handshake;
mod pod_names;
mod relay;
mod serving;
mod slots;
mod stream;

pub use auth::{Attributes, Authorize, AuthorizeError, Decision, User};
pub use container_logs::LogRequest;
pub use pod_names::{Mirror, MirrorNames};
pub use serving::{Sign, Signing};
pub use stream::{StreamKind, StreamRequest};

use crate::agent::context::Context;
use crate::http::accept::{accept_bounded, Limits, Ticket};
use crate::http::query::Refused as RefusedRequest;
use crate::http::{self, Answer, Head};
use crate::metrics::Refused;
use crate::model::Pod;
use crate::tls::counters::Counters;
use crate::tls::kubeconfig;
use crate::tls::server::{self as tls, TlsConn};
use crate::tls::SetupError;
use async_io::{Async, Timer};
use rustls::ServerConfig;
use smol::io::AsyncWriteExt;
use std::cell::Cell;
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// Authorized connections served at once besides the long-lived ones ([`slots`]);
/// the oldest is closed for a new one past this.
pub const MAX_CONNECTIONS: usize = 16;
/// Connections not yet authorized at once (in the handshake, without a certificate, or
/// authenticated and waiting for their request or its review, or refused); past it
/// one of the peer holding most is closed for a newcomer.
pub const MAX_UNTRUSTED: usize = 32;
/// Connections not yet authenticated from one address (an IPv6 /64) at once.
pub const MAX_PER_PEER: usize = 8;
/// Connections of one user authenticated but not (yet) authorized at once, from any
/// number of addresses (a user, or an address, whose request was authorized lately is
/// held by the other bounds only: an API server opens many streams at once).
pub const MAX_PER_USER: usize = 4;
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
    /// Who decides whether a request may be served.
    authz: Box<dyn Authorize>,
    /// Which API names are this node's mirror pods ([`pod_names`]).
    mirrors: Rc<dyn MirrorNames>,
    /// TLS bytes of the kubelet API (not the uplink's).
    counters: Rc<Counters>,
    /// Long-lived requests open now: exec, attach and port-forward streams, followed
    /// logs ([`slots`]).
    streams: std::cell::Cell<usize>,
    /// The thread time TLS handshakes may take.
    handshakes: handshake::CpuShare,
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

    /// The pod a request names, as the API server names it ([`pod_names`]). A pod the
    /// node refused by its uid ([`crate::agent::verdicts`]: also one whose status file
    /// another pod of its name wrote over) is not found either.
    fn pod(&self, asked: pod_names::Asked<'_>) -> Result<Box<Pod>, RefusedRequest> {
        let (ns, name) = (asked.ns, asked.name);
        let store = &mut self.ctx.store.borrow_mut();
        let pod = pod_names::resolve(store, &*self.mirrors, asked)?;
        if self.ctx.verdicts.get(&pod.metadata.uid) == Some(false) {
            log::debug!("kubelet API: pod {ns}/{name}: refused at admission (its uid)");
            return Err(pod_names::pod_not_found(ns, name));
        }
        Ok(pod)
    }
}

/// What the kubelet API serves from and reports to.
pub struct Parts {
    /// The agent's shared state: config, CRI client, store.
    pub ctx: Rc<Context>,
    /// Where the port it serves on is recorded (for the Node's status).
    pub port: Rc<Cell<u16>>,
    /// Its TLS bytes, all its connections (for the status endpoint's `/metrics`).
    pub counters: Rc<Counters>,
    /// Who decides whether a request may be served.
    pub authz: Box<dyn Authorize>,
    /// Which API names are this node's mirror pods (the uplink's view of the API).
    pub mirrors: Rc<dyn MirrorNames>,
}

/// Serves the kubelet API when `apiServer` names a port and a certificate (files, or
/// `serverTLSBootstrap`: then once `signer` has had the cluster sign one), and records
/// its port in `parts.port`. Unusable certificate or CA files are an error (the agent
/// refuses to start, naming the file); a port that cannot be bound is logged and the
/// agent goes on without the API (the pods matter more).
pub fn start(parts: Parts, signer: Rc<dyn Sign>) -> Result<(), SetupError> {
    let Some(api) = &parts.ctx.cfg.api_server else {
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
        listen(parts, addr, config);
        return Ok(());
    }
    let bootstrap = async move {
        let sourced = signer.serving_pem().await;
        let Some(api) = &parts.ctx.cfg.api_server else {
            return;
        };
        match tls::server_config(api, &kc, &sourced, &sourced) {
            Ok((config, serving)) => {
                listen(parts, addr, config);
                signer.renew(serving, sourced.value).await;
            }
            Err(e) => log::error!("kubelet API: the signed certificate: {e}; no kubelet API"),
        }
    };
    crate::rt::spawn(bootstrap).detach();
    Ok(())
}

/// Binds `addr` and serves it on the executor.
fn listen(parts: Parts, addr: std::net::SocketAddr, tls: Arc<ServerConfig>) {
    let listener = match TcpListener::bind(addr).and_then(Async::new) {
        Ok(l) => l,
        Err(e) => {
            log::error!("apiServer.port: cannot listen on {addr}: {e}; no kubelet API");
            return;
        }
    };
    parts.port.set(addr.port());
    log::info!(
        "kubelet API on https://{addr}/ (containerLogs, exec, attach, portForward, healthz, \
         pods, metrics/resource)"
    );
    let shared = Rc::new(KubeletApi {
        ctx: parts.ctx,
        tls,
        authz: parts.authz,
        mirrors: parts.mirrors,
        counters: parts.counters,
        streams: Default::default(),
        handshakes: handshake::CpuShare::new(
            handshake::HANDSHAKE_SHARE,
            handshake::HANDSHAKE_BURST,
        ),
    });
    let limits = Limits {
        untrusted: MAX_UNTRUSTED,
        per_peer: MAX_PER_PEER,
        per_user: MAX_PER_USER,
        trusted: MAX_CONNECTIONS,
        on_evict: || crate::metrics::kubelet_api_refused(Refused::Evicted),
    };
    let accept = accept_bounded(listener, limits, "kubelet API", move |s, ticket| {
        connection(s, ticket, shared.clone())
    });
    crate::rt::spawn(accept).detach();
}

/// One connection: handshake, request, authorization, answer, close.
async fn connection(tcp: Async<TcpStream>, ticket: Ticket, api: Rc<KubeletApi>) {
    let setup = async {
        let (tls, user) = handshake::handshake(tcp, &api, &ticket).await?;
        if let Some(u) = &user {
            // Not trusted yet: any certificate of the cluster CA gets this far.
            ticket.authenticated(&u.name);
        }
        let mut conn = TlsConn(tls);
        let refused = match http::read_head(&mut conn, http::MAX_HEAD).await {
            Ok(head) => match authorize(&api, user.as_ref(), &head).await {
                None => {
                    ticket.authorized();
                    return Some((conn, Ok(head)));
                }
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
        Ok(head) => route(&mut conn, &api, &ticket, &head).await,
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
    ticket: &Ticket,
    head: &Head,
) -> std::io::Result<()> {
    let cfg = &api.ctx.cfg;
    match stream::StreamRequest::parse(&head.path, &head.query) {
        Some(Ok(req)) => return stream::serve(conn, api, ticket, head, req).await,
        Some(Err(refused)) => return container_logs::timed(refused.answer().write_to(conn)).await,
        None => {}
    }
    if let Some(rest) = head.path.strip_prefix("/containerLogs/") {
        if head.method != "GET" {
            return container_logs::timed(Answer::text(405, "only GET is served\n").write_to(conn))
                .await;
        }
        return match container_logs::LogRequest::parse(rest, &head.query) {
            Ok(req) if req.follows() => match slots::take(api, ticket) {
                Ok(_slot) => container_logs::serve(conn, api, &req).await,
                Err(too_many) => container_logs::timed(too_many.write_to(conn)).await,
            },
            Ok(req) => container_logs::serve(conn, api, &req).await,
            Err(refused) => container_logs::timed(refused.answer().write_to(conn)).await,
        };
    }
    let answer = match (head.method.as_str(), head.path.as_str()) {
        ("GET", "/healthz") => crate::answers::healthz(cfg),
        ("GET", "/pods") => crate::answers::pods::answer(cfg),
        ("GET", "/metrics/resource") => {
            crate::answers::resource::answer(&api.ctx.cri.runtime).await
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
