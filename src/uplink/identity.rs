//! Which identity the node will present, for `check-config` and the agent's start-up
//! line: the client certificate's subject common name and organizations (the API
//! server's user and groups: `system:node:NAME` in `system:nodes`) and its expiry, read
//! with a few lines of DER walking instead of an X.509 crate. TLS itself never relies
//! on this: webpki verifies certificates.

use super::kubeconfig::{Credentials, Kubeconfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

/// The subject and expiry of a certificate.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Subject {
    /// CN: the API server's user name.
    pub common_name: Option<String>,
    /// O: the API server's groups.
    pub organizations: Vec<String>,
    /// notBefore as `YYYY-MM-DD HH:MM:SS UTC`.
    pub not_before: Option<String>,
    /// notAfter as `YYYY-MM-DD HH:MM:SS UTC`.
    pub not_after: Option<String>,
    /// The DER SubjectPublicKeyInfo.
    pub public_key: Vec<u8>,
}

/// One line saying which server and identity a kubeconfig gives.
pub fn describe(kc: &Kubeconfig) -> String {
    let who = match &kc.credentials {
        Credentials::Token(t) => format!("a bearer token (from {})", t.from),
        Credentials::Certificate { cert, .. } => {
            let subject = CertificateDer::pem_slice_iter(&cert.value)
                .next()
                .and_then(|c| c.ok())
                .and_then(|der| subject(&der));
            match subject {
                Some(s) => format!(
                    "client certificate CN={}, O={}{} (from {})",
                    s.common_name.as_deref().unwrap_or("(none)"),
                    if s.organizations.is_empty() {
                        "(none)".to_string()
                    } else {
                        s.organizations.join(",")
                    },
                    s.not_after
                        .map(|t| format!(", expires {t}"))
                        .unwrap_or_default(),
                    cert.from
                ),
                None => format!(
                    "client certificate (subject unreadable; from {})",
                    cert.from
                ),
            }
        }
    };
    format!(
        "server {} (context {:?}, cluster {:?}, user {:?}), identity: {who}",
        kc.server, kc.context, kc.cluster, kc.user
    )
}

/// One DER element: (tag, contents, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| acc << 8 | b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
const OID_O: &[u8] = &[0x55, 0x04, 0x0a];

/// The subject CN and O values, notBefore and notAfter of a DER certificate.
pub fn subject(der: &[u8]) -> Option<Subject> {
    let (SEQUENCE, cert, _) = tlv(der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = tlv(cert)? else {
        return None;
    };
    let mut rest = tbs;
    let (tag, _, after) = tlv(rest)?;
    if tag == 0xa0 {
        rest = after; // [0] version
    }
    let (_, _, rest) = tlv(rest)?; // serialNumber
    let (_, _, rest) = tlv(rest)?; // signature algorithm
    let (_, _, rest) = tlv(rest)?; // issuer
    let (SEQUENCE, validity, rest) = tlv(rest)? else {
        return None;
    };
    let (SEQUENCE, name, rest) = tlv(rest)? else {
        return None;
    };
    let (SEQUENCE, _, after_spki) = tlv(rest)? else {
        return None;
    };
    let spki = &rest[..rest.len() - after_spki.len()];
    let not_before = tlv(validity);
    let mut out = Subject {
        public_key: spki.to_vec(),
        not_before: not_before.and_then(|(t, time, _)| format_time(t, time)),
        not_after: not_before
            .and_then(|(_, _, v)| tlv(v))
            .and_then(|(t, time, _)| format_time(t, time)),
        ..Subject::default()
    };
    let mut rdns = name;
    while let Some((SET, rdn, next)) = tlv(rdns) {
        rdns = next;
        let Some((SEQUENCE, attr, _)) = tlv(rdn) else {
            continue;
        };
        let Some((0x06, oid, value)) = tlv(attr) else {
            continue;
        };
        let Some((_, text, _)) = tlv(value) else {
            continue;
        };
        let text = String::from_utf8_lossy(text).into_owned();
        if oid == OID_CN {
            out.common_name = Some(text);
        } else if oid == OID_O {
            out.organizations.push(text);
        }
    }
    Some(out)
}

/// UTCTime (`YYMMDDHHMMSSZ`, tag 0x17) or GeneralizedTime (`YYYYMMDDHHMMSSZ`, 0x18).
fn format_time(tag: u8, t: &[u8]) -> Option<String> {
    let t = std::str::from_utf8(t).ok()?;
    let full = match (tag, t.len()) {
        (0x17, 13) => {
            let yy: u32 = t[..2].parse().ok()?;
            format!("{}{t}", if yy < 50 { "20" } else { "19" })
        }
        (0x18, 15) => t.to_string(),
        _ => return None,
    };
    if !full[..14].bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(format!(
        "{}-{}-{} {}:{}:{} UTC",
        &full[..4],
        &full[4..6],
        &full[6..8],
        &full[8..10],
        &full[10..12],
        &full[12..14]
    ))
}
