//! Where the serving certificate comes from when no `tlsCertFile` is configured
//! (`serverTLSBootstrap`): from whoever has the cluster sign one, behind [`Sign`]. The
//! kubelet API waits for the first, serves with it, and leaves its renewal to the
//! signer (the agent gives it the uplink, `crate::uplink::csr`, which asks the API
//! server with a CertificateSigningRequest).

use crate::tls::server::{Pem, ServingCert};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Has the serving certificate signed and renewed.
pub trait Sign {
    /// Certificate chain and key, PEM in one buffer, with where they are kept: a kept
    /// one still valid, else a newly signed one (waits, retrying, until there is one).
    fn serving_pem(&self) -> Signing<'_, Pem>;
    /// Renews `pem` before it expires, forever, having `serving` use each new one.
    fn renew(&self, serving: Arc<ServingCert>, pem: Vec<u8>) -> Signing<'_, ()>;
}

/// What a [`Sign`] does, to be awaited.
pub type Signing<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;
