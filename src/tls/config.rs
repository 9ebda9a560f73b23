//! The TLS client configuration for the API server: rustls with ring's crypto, TLS 1.3
//! only (kube-apiserver, a Go server, speaks it; the build has no TLS 1.2 code), the
//! server verified against the kubeconfig's CA and nothing else (no system roots, no
//! way to turn verification off), the node's client certificate (RSA or ECDSA key in
//! PKCS#8, PKCS#1 or SEC1 PEM; rustls checks that it matches the certificate), and
//! ALPN `h2`.

use super::error::SetupError;
use super::kubeconfig::{Credentials, Kubeconfig, Sourced};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{ClientConfig, RootCertStore};
use std::sync::Arc;

/// What a connection needs: the configuration and the name to verify.
#[derive(Clone)]
pub struct TlsTarget {
    /// The rustls client configuration.
    pub config: Arc<ClientConfig>,
    /// The name the server's certificate must carry.
    pub server_name: ServerName<'static>,
}

/// Builds the TLS configuration from a loaded kubeconfig.
pub fn target(kc: &Kubeconfig) -> Result<TlsTarget, SetupError> {
    let server_name =
        ServerName::try_from(kc.server_name.clone()).map_err(|_| SetupError::Invalid {
            path: kc.path.clone(),
            field: "server name".into(),
            message: format!(
                "{:?} is neither a DNS name nor an IP address",
                kc.server_name
            ),
        })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder_provider = provider.clone();
    let tls_error = |from: &str, source| SetupError::Tls {
        from: from.to_string(),
        source,
    };
    let builder = ClientConfig::builder_with_provider(builder_provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| tls_error("TLS 1.3", e))?
        .with_root_certificates(roots(&kc.ca)?);
    let mut config = match &kc.credentials {
        Credentials::Certificate { cert, key } => {
            let chain = certificates(cert)?;
            let key_der = PrivateKeyDer::from_pem_slice(&key.value.0)
                .map_err(|e| pem_error(&key.from, "a private key", e))?;
            let certified = certified_key(chain, key_der, &provider)
                .map_err(|e| tls_error(&format!("{} with {}", cert.from, key.from), e))?;
            builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(certified)))
        }
        Credentials::Token(_) => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(TlsTarget {
        config: Arc::new(config),
        server_name,
    })
}

/// The client certificate chain with its key, checked to belong together. Unlike
/// rustls's own check this also covers X.509 v1 certificates (what `openssl x509 -req`
/// makes without an extension file, and Go servers accept): webpki cannot parse those,
/// so their public key is compared from a DER walk.
pub(crate) fn certified_key(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, rustls::Error> {
    let signing_key = provider.key_provider.load_private_key(key)?;
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        Ok(()) => Ok(certified),
        Err(e @ rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => Err(e),
        Err(_) => {
            let in_cert = certified
                .end_entity_cert()
                .ok()
                .and_then(|c| super::identity::subject(c));
            match (in_cert, certified.key.public_key()) {
                (Some(c), Some(k)) if c.public_key != k.as_ref() => {
                    Err(rustls::InconsistentKeys::KeyMismatch.into())
                }
                _ => Ok(certified),
            }
        }
    }
}

/// Every certificate of a PEM bundle; at least one.
pub(crate) fn certificates(
    pem: &Sourced<Vec<u8>>,
) -> Result<Vec<CertificateDer<'static>>, SetupError> {
    let certs = CertificateDer::pem_slice_iter(&pem.value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(&pem.from, "certificates", e))?;
    if certs.is_empty() {
        return Err(SetupError::Tls {
            from: pem.from.clone(),
            source: rustls::Error::General("no CERTIFICATE block (expected PEM)".into()),
        });
    }
    Ok(certs)
}

/// The cluster CA bundle as the only trust roots.
pub(crate) fn roots(ca: &Sourced<Vec<u8>>) -> Result<RootCertStore, SetupError> {
    let mut store = RootCertStore::empty();
    for cert in certificates(ca)? {
        store.add(cert).map_err(|source| SetupError::Tls {
            from: ca.from.clone(),
            source,
        })?;
    }
    Ok(store)
}

pub(crate) fn pem_error(from: &str, what: &str, e: rustls::pki_types::pem::Error) -> SetupError {
    SetupError::Tls {
        from: from.to_string(),
        source: rustls::Error::General(format!("no usable {what} in PEM: {e:?}")),
    }
}
