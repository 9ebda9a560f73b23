//! The kubelet API's TLS server configuration: rustls with ring's crypto, TLS 1.3 only
//! (as the uplink's client: the build has no TLS 1.2 code), the serving certificate of
//! `tlsCertFile`/`tlsPrivateKeyFile` (or one the cluster signed),
//! and client certificates verified against the client CA (`authentication.x509.clientCAFile`, else the kubeconfig's cluster CA).
//! A client without a certificate may connect (its requests get 401, as kubelet's with
//! anonymous auth off); a certificate from another CA fails the handshake. ALPN offers
//! HTTP/1.1 only: the API server's proxy and kubectl speak it to kubelets.

use crate::config::ApiServerConfig;
use crate::tls::config::{certificates, certified_key, pem_error, roots};
use crate::tls::files::{read_bounded, Secrecy, MAX_FILE_BYTES};
use crate::tls::kubeconfig::Kubeconfig;
use crate::tls::kubeconfig::Sourced;
use crate::tls::stream::TlsStream;
use crate::tls::SetupError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivateKeyDer;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, ServerConnection};
use smol::io::{AsyncRead, AsyncWrite};
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use tokio::io::ReadBuf;

/// PEM bytes and where they were read.
pub type Pem = Sourced<Vec<u8>>;

/// The serving certificate chain and key of `tlsCertFile` and `tlsPrivateKeyFile`.
pub fn files(api: &ApiServerConfig) -> Result<(Pem, Pem), SetupError> {
    Ok((
        read(&api.tls_cert_file, Secrecy::Public)?,
        read(&api.tls_private_key_file, Secrecy::Secret)?,
    ))
}

/// Builds the server configuration from the serving certificate chain and key (PEM),
/// the config and the node's kubeconfig (its CA, unless `clientCAFile` is set); the
/// certificate can be replaced later through the returned [`ServingCert`].
pub fn server_config(
    api: &ApiServerConfig,
    kc: &Kubeconfig,
    cert: &Pem,
    key: &Pem,
) -> Result<(Arc<ServerConfig>, Arc<ServingCert>), SetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls_error = |from: &str, source| SetupError::Tls {
        from: from.to_string(),
        source,
    };
    let ca_file = &api.authentication.x509.client_ca_file;
    let ca = if ca_file.as_os_str().is_empty() {
        roots(&kc.ca)?
    } else {
        roots(&read(ca_file, Secrecy::Public)?)?
    };
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(ca), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| {
            tls_error(
                "authentication.x509.clientCAFile",
                rustls::Error::General(e.to_string()),
            )
        })?;
    let serving = Arc::new(ServingCert {
        current: Mutex::new(Arc::new(certified(cert, key)?)),
    });
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| tls_error("TLS 1.3", e))?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(serving.clone());
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((Arc::new(config), serving))
}

/// The serving certificate the handshakes use, replaceable while the server runs (a
/// certificate the cluster signed, renewed before it expires). A mutex because rustls
/// wants a resolver that is `Sync`; only the agent's thread ever takes it.
#[derive(Debug)]
pub struct ServingCert {
    current: Mutex<Arc<CertifiedKey>>,
}

impl ServingCert {
    /// Serves `cert` with `key` from the next handshake on; on error the current one
    /// stays.
    pub fn replace(&self, cert: &Pem, key: &Pem) -> Result<(), SetupError> {
        let new = Arc::new(certified(cert, key)?);
        if let Ok(mut current) = self.current.lock() {
            *current = new;
        }
        Ok(())
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.lock().ok().map(|k| k.clone())
    }
}

/// The chain of `cert` with the key of `key`, checked to belong together.
fn certified(cert: &Pem, key: &Pem) -> Result<CertifiedKey, SetupError> {
    let provider = rustls::crypto::ring::default_provider();
    let key_der = PrivateKeyDer::from_pem_slice(&key.value)
        .map_err(|e| pem_error(&key.from, "a private key", e))?;
    certified_key(certificates(cert)?, key_der, &provider).map_err(|source| SetupError::Tls {
        from: format!("{} with {}", cert.from, key.from),
        source,
    })
}

/// A PEM file, bounded, with its name for messages.
fn read(path: &Path, secrecy: Secrecy) -> Result<Sourced<Vec<u8>>, SetupError> {
    Ok(Sourced {
        value: read_bounded(path, MAX_FILE_BYTES, secrecy)?,
        from: path.display().to_string(),
    })
}

/// A server-side TLS connection seen through the `futures` I/O traits the HTTP code of
/// `crate::http` is written against (`TlsStream` implements tokio's, for h2).
pub struct TlsConn(pub TlsStream<ServerConnection>);

impl AsyncRead for TlsConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let mut rb = ReadBuf::new(buf);
        ready!(tokio::io::AsyncRead::poll_read(
            Pin::new(&mut self.0),
            cx,
            &mut rb
        ))?;
        Poll::Ready(Ok(rb.filled().len()))
    }
}

impl AsyncWrite for TlsConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        tokio::io::AsyncWrite::poll_write(Pin::new(&mut self.0), cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::io::AsyncWrite::poll_flush(Pin::new(&mut self.0), cx)
    }

    /// Sends close_notify and shuts the socket's sending side.
    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::io::AsyncWrite::poll_shutdown(Pin::new(&mut self.0), cx)
    }
}
