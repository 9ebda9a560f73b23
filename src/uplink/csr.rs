//! The serving certificate from the cluster when no `tlsCertFile` is configured, as
//! kubelet's `serverTLSBootstrap` does: a new ECDSA P-256 key, a certificate signing
//! request with signer `kubernetes.io/kubelet-serving` for `CN=system:node:NAME`,
//! `O=system:nodes` and the node's addresses (its name and InternalIP), sent with the
//! node's credentials; once an admin (or an approver) approves it and the
//! controller-manager signs it, certificate and key are kept in
//! `stateDir/pki/kubelet-server-current.pem` (mode 0600, kubelet's name) and used from
//! then on, also after restarts. [`rotate`] asks for the next one before it expires,
//! as kubelet's certificate manager does: at a random point between 70 % and 90 % of
//! the certificate's lifetime (or at once when a kept one is already past that), and
//! serves it from the next handshake on; until it is signed, the current one stays.

use super::csr_der::{self, San};
use crate::model::base64;
use crate::tls::kubeconfig::Sourced;
use crate::tls::server::ServingCert;
use crate::tls::SetupError;
use crate::uplink::agent::Uplink;
use crate::uplink::ApiError;
use async_io::Timer;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING as ALG};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};
use std::io::ErrorKind;
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
                keep(&dir, &pem);
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

/// The kept certificate and key when they are there and not expired; why not is
/// logged (a new one is requested then).
fn current(path: &Path) -> Option<Vec<u8>> {
    let read = crate::tls::files::read_bounded(
        path,
        crate::tls::files::MAX_FILE_BYTES,
        crate::tls::files::Secrecy::Secret,
    );
    let pem = match read {
        Ok(pem) => pem,
        Err(SetupError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => return None,
        Err(e) => {
            log::warn!("kubelet API: the kept serving certificate: {e}; requesting a new one");
            return None;
        }
    };
    match validity(&pem) {
        Some((_, not_after)) if not_after > SystemTime::now() => Some(pem),
        Some(_) => {
            log::info!(
                "kubelet API: {} has expired; requesting a new one",
                path.display()
            );
            None
        }
        None => {
            log::warn!(
                "kubelet API: {}: no certificate with readable dates; requesting a new one",
                path.display()
            );
            None
        }
    }
}

/// notBefore and notAfter of the first certificate in `pem`.
fn validity(pem: &[u8]) -> Option<(SystemTime, SystemTime)> {
    let cert = CertificateDer::pem_slice_iter(pem).next()?.ok()?;
    let subject = crate::tls::identity::subject(&cert)?;
    // "YYYY-MM-DD HH:MM:SS UTC" -> "YYYY-MM-DDTHH:MM:SSZ".
    let time = |t: &str| {
        let t = t.strip_suffix(" UTC")?.replacen(' ', "T", 1) + "Z";
        crate::model::time::parse_rfc3339(&t).ok()
    };
    Some((
        time(subject.not_before.as_deref()?)?,
        time(subject.not_after.as_deref()?)?,
    ))
}

/// When to ask for the next certificate: `fraction` (0.7 to 0.9, random per
/// certificate, so a fleet does not ask at once) of the way from notBefore to notAfter.
fn rotation_time(not_before: SystemTime, not_after: SystemTime, fraction: f64) -> SystemTime {
    let lifetime = not_after.duration_since(not_before).unwrap_or_default();
    not_before + lifetime.mul_f64(fraction.clamp(0.0, 1.0))
}

/// 0.7 to 0.9, at random.
fn jitter() -> f64 {
    let mut byte = [0u8];
    let _ = ring::rand::SecureRandom::fill(&SystemRandom::new(), &mut byte);
    0.7 + 0.2 * f64::from(byte[0]) / 255.0
}

/// Rotates the serving certificate `pem` (kept in `stateDir/pki`) before it expires,
/// forever: waits for its rotation time, requests the next one, keeps it and has
/// `serving` use it. The wait is re-checked against the wall clock at least hourly:
/// a gateway without a battery-backed clock may set its time well after boot.
pub async fn rotate(up: &Uplink, serving: std::sync::Arc<ServingCert>, mut pem: Vec<u8>) {
    let dir = up.ctx.cfg.state_dir.join("pki");
    loop {
        let Some((not_before, not_after)) = validity(&pem) else {
            log::warn!(
                "kubelet API: the serving certificate has no readable validity; not rotated"
            );
            return;
        };
        let at = rotation_time(not_before, not_after, jitter());
        log::info!(
            "kubelet API: serving certificate valid until {}, renewed from {}",
            crate::model::time::format_rfc3339(not_after),
            crate::model::time::format_rfc3339(at)
        );
        while let Ok(left) = at.duration_since(SystemTime::now()) {
            Timer::after(left.min(Duration::from_secs(3600))).await;
        }
        let next = loop {
            match request(up).await {
                Ok(next) => break next,
                Err(e) => {
                    log::warn!(
                        "kubelet API: renewing the serving certificate: {e}; again in {RETRY:?}"
                    );
                    Timer::after(RETRY).await;
                }
            }
        };
        let sourced = Sourced {
            value: next.clone(),
            from: dir.join(FILE).display().to_string(),
        };
        if let Err(e) = serving.replace(&sourced, &sourced) {
            log::error!("kubelet API: the renewed serving certificate: {e}; the old one stays");
            Timer::after(RETRY).await;
            continue;
        }
        keep(&dir, &next);
        log::info!("kubelet API: serving the renewed certificate");
        pem = next;
    }
}

/// Saves certificate and key in `dir` (0600); a failure is logged, the certificate
/// is used anyway (and requested again after a restart).
fn keep(dir: &Path, pem: &[u8]) {
    let saved = std::fs::create_dir_all(dir)
        .and_then(|()| crate::store::atomic::write_file(dir, FILE, pem, 0o600));
    if let Err(e) = saved {
        log::warn!("kubelet API: keeping {}: {e}", dir.join(FILE).display());
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    /// Made by `openssl ca -startdate 20260101000000Z -enddate 20270101000000Z`.
    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBJjCBzAIBATAKBggqhkjOPQQDAjAPMQ0wCwYDVQQDDAR0LWNhMB4XDTI2MDEw\nMTAwMDAwMFoXDTI3MDEwMTAwMDAwMFowLzEWMBQGA1UEAwwNc3lzdGVtOm5vZGU6\neDEVMBMGA1UECgwMc3lzdGVtOm5vZGVzMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcD\nQgAEBnjVyrPBqQUkpO9vJfHBXdDCbVX/zWd1AE+QB/hQJzlK0EPOSYXRhc2OJqgS\nGNoeoGxWP+JKl5ix2osNT/adwTAKBggqhkjOPQQDAgNJADBGAiEA8OTESNPXsK9m\nT7M3EsHMJB5CUDlaHZEMdXFbp4ILVh0CIQDeG9hN0RHD+VRC7dF1+Toh5bppy7gb\n07Jtjacq6LRCRQ==\n-----END CERTIFICATE-----\n";
    const JAN_2026: u64 = 1_767_225_600;
    const JAN_2027: u64 = 1_798_761_600;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn validity_is_read_from_the_first_certificate() {
        let (from, to) = validity(CERT.as_bytes()).expect("validity");
        assert_eq!((from, to), (at(JAN_2026), at(JAN_2027)));
        assert_eq!(validity(b"no pem here"), None);
    }

    #[test]
    fn renewal_comes_between_70_and_90_percent_of_the_lifetime() {
        let year = JAN_2027 - JAN_2026;
        let seventy = rotation_time(at(JAN_2026), at(JAN_2027), 0.7);
        assert_eq!(seventy, at(JAN_2026 + year * 7 / 10));
        for _ in 0..50 {
            let f = jitter();
            assert!((0.7..=0.9).contains(&f), "{f}");
        }
        // A certificate whose dates are the wrong way round renews at once.
        assert_eq!(rotation_time(at(JAN_2027), at(JAN_2026), 0.8), at(JAN_2027));
    }
}
