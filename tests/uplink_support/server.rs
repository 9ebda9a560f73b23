//! A fault-injection API server for uplink tests: TLS 1.3 (rustls) and HTTP/2 (h2's
//! server side) on loopback, on the test's own executor (no thread), through the same
//! TLS adapter as the client. Each request goes to the test's handler; the server can
//! be stopped (every connection dropped) and started again on the same port, or
//! frozen (connections kept open but no longer read: a dead link).

use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use tinylet::rt;
use tinylet::tls::counters::Counters;
use tinylet::tls::stream::TlsStream;

pub type Handler =
    Rc<dyn Fn(http::Request<RecvStream>, SendResponse<Bytes>) -> Pin<Box<dyn Future<Output = ()>>>>;

/// A TLS server configuration: this certificate, client certificates verified against
/// `client_ca` when one is sent, ALPN h2 unless `alpn` is false.
pub fn tls_config(cert: &Path, key: &Path, client_ca: &Path, alpn: bool) -> Arc<ServerConfig> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(client_ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Client certificates are verified when sent; token clients send none.
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .unwrap();
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .unwrap();
    if alpn {
        config.alpn_protocols = vec![b"h2".to_vec()];
    }
    Arc::new(config)
}

/// A running (or stopped) fake API server.
pub struct FakeApi {
    pub addr: SocketAddr,
    config: Arc<ServerConfig>,
    handler: Handler,
    tasks: Rc<RefCell<Vec<smol::Task<()>>>>,
    /// TCP connections accepted.
    pub accepted: Rc<Cell<u32>>,
    /// Set: connections stop being served (a dead link that still holds the socket).
    pub frozen: Rc<Cell<bool>>,
}

impl FakeApi {
    pub fn start(config: Arc<ServerConfig>, handler: Handler) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let api = FakeApi {
            addr,
            config,
            handler,
            tasks: Rc::default(),
            accepted: Rc::default(),
            frozen: Rc::default(),
        };
        api.serve(listener);
        api
    }

    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Drops the listener and every connection.
    pub fn stop(&self) {
        self.tasks.borrow_mut().clear();
    }

    /// Listens again on the same port.
    pub fn restart(&self) {
        self.stop();
        self.serve(TcpListener::bind(self.addr).unwrap());
    }

    fn serve(&self, listener: TcpListener) {
        let listener = async_io::Async::new(listener).unwrap();
        let (config, handler, tasks, accepted, frozen) = (
            self.config.clone(),
            self.handler.clone(),
            self.tasks.clone(),
            self.accepted.clone(),
            self.frozen.clone(),
        );
        let inner_tasks = tasks.clone();
        let accept_loop = rt::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                accepted.set(accepted.get() + 1);
                let conn = serve_connection(tcp, config.clone(), handler.clone(), frozen.clone());
                inner_tasks.borrow_mut().push(rt::spawn(conn));
            }
        });
        tasks.borrow_mut().push(accept_loop);
    }
}

async fn serve_connection(
    tcp: async_io::Async<std::net::TcpStream>,
    config: Arc<ServerConfig>,
    handler: Handler,
    frozen: Rc<Cell<bool>>,
) {
    let Ok(tls) = ServerConnection::new(config) else {
        return;
    };
    let Ok(stream) = TlsStream::handshake(tcp, tls, Rc::new(Counters::default())).await else {
        return;
    };
    let Ok(mut h2) = h2::server::handshake(stream).await else {
        return;
    };
    loop {
        let freeze = async {
            while !frozen.get() {
                async_io::Timer::after(std::time::Duration::from_millis(10)).await;
            }
            None
        };
        match smol::future::or(async { Some(h2.accept().await) }, freeze).await {
            Some(Some(Ok((request, respond)))) => rt::spawn((handler)(request, respond)).detach(),
            Some(_) => return,
            // Keep the connection open but never read or write it again: a dead link.
            None => std::future::pending::<()>().await,
        }
    }
}

/// Answers with `status` and a JSON body.
pub fn reply(mut respond: SendResponse<Bytes>, status: u16, body: impl Into<Bytes>) {
    let head = http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    if let Ok(mut stream) = respond.send_response(head, false) {
        let _ = stream.send_data(body.into(), true);
    }
}

/// A Kubernetes `Status` failure body.
pub fn status_body(code: u16, reason: &str, message: &str) -> String {
    serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
        "reason": reason, "message": message, "code": code})
    .to_string()
}

/// Reads a request body (tests send small ones).
pub async fn body_of(mut body: RecvStream) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    out
}
