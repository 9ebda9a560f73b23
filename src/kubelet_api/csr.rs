//! The serving certificate from the cluster when no `tlsCertFile` is configured, as
//! kubelet's `serverTLSBootstrap` does: a new ECDSA P-256 key, a certificate signing
//! request with signer `kubernetes.io/kubelet-serving` for `CN=system:node:NAME`,
//! `O=system:nodes` and the node's addresses (its name and InternalIP), sent with the
//! node's credentials; once an admin (or an approver) approves it and the
//! controller-manager signs it, certificate and key are kept in
//! `stateDir/pki/kubelet-server-current.pem` (mode 0600, kubelet's name) and used from
//! then on, also after restarts, until they expire. Rotation before expiry is not done.

use super::csr_der::{self, San};
use crate::model::base64;
use crate::uplink::agent::Uplink;
use crate::uplink::ApiError;
use async_io::Timer;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING as ALG};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The file holding certificate and key, in `stateDir/pki`.
pub const FILE: &str = "kubelet-server-current.pem";
/// How often the request is checked for its certificate.
const POLL: Duration = Duration::from_secs(5);
/// How long before a new request after a refusal or an error.
const RETRY: Duration = Duration::from_secs(60);
/// kubelet's signer for serving certificates.
const SIGNER: &str = "kubernetes.io/kubelet-serving";
const CSR_PATH: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

/// Why no certificate came.
#[derive(Debug)]
pub enum CsrError {
    /// The API call failed.
    Api(ApiError),
    /// The key or signature could not be made.
    Crypto,
    /// The request was denied or failed, with the condition's reason and message.
    Refused(String),
}

impl std::fmt::Display for CsrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CsrError::Api(e) => write!(f, "{e}"),
            CsrError::Crypto => write!(f, "cannot make a P-256 key or sign the request"),
            CsrError::Refused(why) => write!(f, "the request was refused: {why}"),
        }
    }
}

/// Certificate chain and key, PEM, in one buffer (what `FILE` holds).
pub async fn serving_pem(up: &Uplink) -> Vec<u8> {
    let dir = up.ctx.cfg.state_dir.join("pki");
    if let Some(pem) = current(&dir.join(FILE)) {
        log::info!(
            "kubelet API: serving certificate {}",
            dir.join(FILE).display()
        );
        return pem;
    }
    loop {
        match request(up).await {
            Ok(pem) => {
                let saved = std::fs::create_dir_all(&dir)
                    .and_then(|()| crate::store::atomic::write_file(&dir, FILE, &pem, 0o600));
                if let Err(e) = saved {
                    log::warn!("kubelet API: keeping {}: {e}", dir.join(FILE).display());
                }
                return pem;
            }
            Err(e) => {
                log::warn!(
                    "kubelet API: serving certificate (CSR, {SIGNER}): {e}; again in {RETRY:?}"
                );
                Timer::after(RETRY).await;
            }
        }
    }
}

/// The kept certificate and key when they are there and not expired.
fn current(path: &Path) -> Option<Vec<u8>> {
    let pem = crate::uplink::files::read_bounded(
        path,
        crate::uplink::files::MAX_FILE_BYTES,
        crate::uplink::files::Secrecy::Secret,
    )
    .ok()?;
    let cert = CertificateDer::pem_slice_iter(&pem).next()?.ok()?;
    let not_after = crate::uplink::identity::subject(&cert)?.not_after?;
    // "YYYY-MM-DD HH:MM:SS UTC" against "YYYY-MM-DDTHH:MM:SSZ": same digits, same order.
    let now = crate::model::time::format_rfc3339(SystemTime::now());
    let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
    (digits(&not_after) > digits(&now)).then_some(pem)
}

/// One request: made, sent, and waited for until it has a certificate or is refused.
async fn request(up: &Uplink) -> Result<Vec<u8>, CsrError> {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ALG, &rng).map_err(|_| CsrError::Crypto)?;
    let key = EcdsaKeyPair::from_pkcs8(&ALG, pkcs8.as_ref(), &rng).map_err(|_| CsrError::Crypto)?;
    let mut sans = vec![San::Dns(up.node_name.clone())];
    if let Ok(ip) = up.ctx.host.host_ip.parse() {
        sans.push(San::Ip(ip));
    }
    let cn = format!("system:node:{}", up.node_name);
    let info = csr_der::request_info(&cn, "system:nodes", key.public_key().as_ref(), &sans);
    let signature = key.sign(&rng, &info).map_err(|_| CsrError::Crypto)?;
    let csr = pem(
        "CERTIFICATE REQUEST",
        &csr_der::request(info, signature.as_ref()),
    );
    let body = json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"generateName": "csr-"},
        "spec": {
            "request": base64::encode(csr.as_bytes()),
            "signerName": SIGNER,
            "usages": ["digital signature", "key encipherment", "server auth"],
        },
    });
    let made: Value = up
        .client
        .create(CSR_PATH, &body)
        .await
        .map_err(CsrError::Api)?;
    let name = made["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    log::info!("kubelet API: waiting for CSR {name} ({SIGNER}) to be approved and signed");
    loop {
        Timer::after(POLL).await;
        let csr: Value = match up.client.get(&format!("{CSR_PATH}/{name}")).await {
            Ok(v) => v,
            Err(e) => {
                log::debug!("kubelet API: CSR {name}: {e}");
                continue;
            }
        };
        if let Some(refused) = refusal(&csr) {
            return Err(CsrError::Refused(refused));
        }
        let Some(cert) = csr["status"]["certificate"]
            .as_str()
            .filter(|c| !c.is_empty())
        else {
            continue;
        };
        let Ok(mut chain) = base64::decode(cert) else {
            return Err(CsrError::Refused("status.certificate is not base64".into()));
        };
        log::info!("kubelet API: CSR {name} signed");
        chain.extend_from_slice(pem("PRIVATE KEY", pkcs8.as_ref()).as_bytes());
        return Ok(chain);
    }
}

/// A Denied or Failed condition's reason and message.
fn refusal(csr: &Value) -> Option<String> {
    let conditions = csr["status"]["conditions"].as_array()?;
    conditions
        .iter()
        .find(|c| matches!(c["type"].as_str(), Some("Denied" | "Failed")))
        .map(|c| format!("{}: {} {}", c["type"], c["reason"], c["message"]))
}

/// A PEM block of `der`.
fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
