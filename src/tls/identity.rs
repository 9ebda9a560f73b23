//! Who a certificate names: the subject's common name and organizations (the API
//! server's user and groups: `system:node:NAME` in `system:nodes`) and its validity,
//! read with a few lines of DER walking instead of an X.509 crate. For the node's own
//! certificate (`check-config`, the agent's start-up line) and for the kubelet API's
//! clients, whose user a SubjectAccessReview names: so the subject is read exactly as
//! the API server (Go's `crypto/x509`) reads it ([`names`]), or not at all. TLS itself
//! never relies on this: webpki verifies certificates.

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
    /// Why the subject cannot be read as the API server reads it (then no CN, no O).
    pub name_error: Option<&'static str>,
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
                Some(Subject {
                    name_error: Some(why),
                    ..
                }) => format!(
                    "client certificate whose subject the API server cannot read: {why} \
                     (from {})",
                    cert.from
                ),
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

/// One DER element: (tag, contents, rest). Lengths must be DER's (the shortest form),
/// as Go's parser wants them.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n || rest[0] == 0 {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| acc << 8 | b as usize);
        if len < 0x80 {
            return None;
        }
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// 2.5.4.3 and 2.5.4.10, as DER spells them (the only spelling: arcs are minimal).
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
    let (common_name, organizations, name_error) = match names(name) {
        Ok(n) => (n.common_name, n.organizations, None),
        Err(e) => (None, Vec::new(), Some(e)),
    };
    Some(Subject {
        common_name,
        organizations,
        name_error,
        public_key: spki.to_vec(),
        not_before: not_before.and_then(|(t, time, _)| format_time(t, time)),
        not_after: not_before
            .and_then(|(_, _, v)| tlv(v))
            .and_then(|(t, time, _)| format_time(t, time)),
    })
}

/// The user and groups a subject names, as the API server reads them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Names {
    /// The last CN: the user name.
    pub common_name: Option<String>,
    /// Every O, in order: the groups.
    pub organizations: Vec<String>,
}

/// Reads the contents of a DER `Name` (an RDNSequence) as Go's `crypto/x509` does, and
/// so the API server's x509 authenticator: every attribute of every RDN (a
/// multi-valued RDN such as `CN=a+O=g1` holds several), in order; a later CN replaces an
/// earlier one, every O is a group. Go refuses a certificate whose subject holds a
/// value that is not one of its string types or not valid for its type, and so does
/// this (the error says which); where Go would keep bytes that are not UTF-8 (a
/// T61String) this refuses too, since no RBAC binding could name such a user.
pub fn names(name: &[u8]) -> Result<Names, &'static str> {
    let mut out = Names::default();
    let mut rdns = name;
    while !rdns.is_empty() {
        let Some((SET, rdn, next)) = tlv(rdns) else {
            return Err("an RDN is not a SET");
        };
        rdns = next;
        let mut attrs = rdn;
        while !attrs.is_empty() {
            let Some((SEQUENCE, attr, next)) = tlv(attrs) else {
                return Err("an attribute is not a SEQUENCE");
            };
            attrs = next;
            let (oid, text) = attribute(attr)?;
            if oid == OID_CN {
                out.common_name = Some(text);
            } else if oid == OID_O {
                out.organizations.push(text);
            }
        }
    }
    Ok(out)
}

/// An attribute's type (the OID's DER contents) and its value as text.
fn attribute(attr: &[u8]) -> Result<(&[u8], String), &'static str> {
    let Some((OID, oid, value)) = tlv(attr) else {
        return Err("an attribute type is not an OID");
    };
    if !minimal_oid(oid) {
        return Err("an attribute type is not a DER OID");
    }
    let Some((tag, bytes, rest)) = tlv(value) else {
        return Err("an attribute has no value");
    };
    if !rest.is_empty() {
        return Err("an attribute has more than a type and a value");
    }
    Ok((oid, text(tag, bytes)?))
}

/// Whether `oid` (contents) is a well-formed OID: arcs in base 128, each ending with a
/// byte below 0x80, none starting with the padding byte 0x80.
fn minimal_oid(oid: &[u8]) -> bool {
    let mut arc_start = true;
    for &b in oid {
        if arc_start && b == 0x80 {
            return false;
        }
        arc_start = b < 0x80;
    }
    !oid.is_empty() && arc_start
}

const UTF8_STRING: u8 = 0x0c;
const NUMERIC_STRING: u8 = 0x12;
const PRINTABLE_STRING: u8 = 0x13;
const T61_STRING: u8 = 0x14;
const IA5_STRING: u8 = 0x16;
const BMP_STRING: u8 = 0x1e;

/// An attribute value of one of Go's string types, checked as Go checks it.
fn text(tag: u8, bytes: &[u8]) -> Result<String, &'static str> {
    let ascii = |valid: fn(&u8) -> bool, what| {
        if bytes.iter().all(valid) {
            Ok(bytes.iter().map(|&b| char::from(b)).collect())
        } else {
            Err(what)
        }
    };
    match tag {
        UTF8_STRING | T61_STRING => {
            String::from_utf8(bytes.to_vec()).map_err(|_| "a value is not UTF-8")
        }
        PRINTABLE_STRING => ascii(printable, "a PrintableString holds other characters"),
        IA5_STRING => ascii(u8::is_ascii, "an IA5String holds other than ASCII"),
        NUMERIC_STRING => ascii(
            |b| b.is_ascii_digit() || *b == b' ',
            "a NumericString holds other than digits and spaces",
        ),
        BMP_STRING => bmp(bytes),
        _ => Err("a value is not of a string type"),
    }
}

/// PrintableString's characters, with `*` and `&` (Go accepts both: certificates in
/// use hold them).
fn printable(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || b" '()+,-./:=?*&".contains(b)
}

/// A BMPString: UTF-16 big-endian, an optional terminating NUL dropped, unpaired
/// surrogates replaced as Go's `utf16.Decode` does.
fn bmp(bytes: &[u8]) -> Result<String, &'static str> {
    if bytes.len() % 2 != 0 {
        return Err("a BMPString has an odd length");
    }
    let bytes = bytes.strip_suffix(&[0, 0]).unwrap_or(bytes);
    let units = bytes
        .chunks_exact(2)
        .map(|u| u16::from_be_bytes([u[0], u[1]]));
    Ok(char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect())
}

/// UTCTime (`YYMMDDHHMMSSZ`, tag 0x17) or GeneralizedTime (`YYYYMMDDHHMMSSZ`, 0x18).
fn format_time(tag: u8, t: &[u8]) -> Option<String> {
    // ASCII only, so that slicing by byte offsets below cannot split a character.
    let t = std::str::from_utf8(t).ok().filter(|t| t.is_ascii())?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A self-signed certificate (DER) for `subj`, made by openssl with multi-valued
    /// RDNs allowed (`CN=a+O=b` is one RDN of two attributes).
    fn openssl_cert(subj: &str) -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!(
            "tinylet-identity-{}-{}",
            std::process::id(),
            subj.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
            .args([
                "-multivalue-rdn",
                "-subj",
                subj,
                "-outform",
                "DER",
                "-keyout",
            ])
            .arg(dir.join("key.pem"))
            .output()
            .expect("openssl (a test dependency: tests/harness/install-deps.sh)");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    fn user(der: &[u8]) -> (Option<String>, Vec<String>) {
        let s = subject(der).unwrap();
        assert_eq!(s.name_error, None);
        (s.common_name, s.organizations)
    }

    #[test]
    fn every_attribute_of_every_rdn_counts_the_last_cn_wins() {
        let groups = |g: &[&str]| g.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let got = user(&openssl_cert("/CN=a+O=g1/O=g2/CN=b"));
        assert_eq!(got, (Some("b".into()), groups(&["g1", "g2"])));
        // DER sorts a SET: in the last RDN "O=g1" (shorter) comes before "CN=eve", so
        // reading only an RDN's first attribute would have named the user "admin".
        let got = user(&openssl_cert("/O=g0/CN=admin/O=g1+CN=eve"));
        assert_eq!(got, (Some("eve".into()), groups(&["g0", "g1"])));
        let got = user(&openssl_cert("/CN=system:node:gw1/O=system:nodes"));
        assert_eq!(
            got,
            (Some("system:node:gw1".into()), groups(&["system:nodes"]))
        );
        let got = user(&openssl_cert("/O=only/OU=unit+O=two"));
        assert_eq!(got, (None, groups(&["only", "two"])));
        let s = subject(&openssl_cert("/CN=x")).unwrap();
        assert!(s.not_before.is_some() && s.not_after.is_some() && !s.public_key.is_empty());
    }

    /// A DER element with a short contents (under 128 bytes).
    fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
        [&[tag, contents.len() as u8][..], contents].concat()
    }

    /// An attribute (type OID contents, value tag and bytes) in an RDN of its own.
    fn rdn(oid: &[u8], tag: u8, value: &[u8]) -> Vec<u8> {
        der(
            SET,
            &der(SEQUENCE, &[der(OID, oid), der(tag, value)].concat()),
        )
    }

    #[test]
    fn values_are_checked_as_go_checks_its_string_types() {
        let cn = |tag: u8, v: &[u8]| names(&rdn(OID_CN, tag, v)).map(|n| n.common_name);
        let ok = |s: &str| Ok(Some(s.to_string()));
        assert_eq!(cn(PRINTABLE_STRING, b"a-b (c) *&"), ok("a-b (c) *&"));
        assert!(cn(PRINTABLE_STRING, b"a@b").is_err());
        assert!(cn(PRINTABLE_STRING, b"a\nb").is_err());
        assert_eq!(cn(IA5_STRING, b"a@b"), ok("a@b"));
        assert!(cn(IA5_STRING, b"\xc3\xa9").is_err());
        assert_eq!(cn(NUMERIC_STRING, b"12 3"), ok("12 3"));
        assert!(cn(NUMERIC_STRING, b"12a").is_err());
        assert_eq!(cn(UTF8_STRING, "café".as_bytes()), ok("café"));
        assert!(cn(UTF8_STRING, b"\xff").is_err());
        assert_eq!(cn(T61_STRING, b"plain"), ok("plain"));
        assert!(cn(T61_STRING, b"\xe9").is_err(), "not UTF-8: refused");
        // BMPString: UTF-16BE, a final NUL dropped, a lone surrogate replaced.
        assert_eq!(cn(BMP_STRING, &[0, b'a', 0, 0xe9, 0, 0]), ok("aé"));
        assert_eq!(cn(BMP_STRING, &[0xd8, 0]), ok("\u{fffd}"));
        assert!(cn(BMP_STRING, &[0, b'a', 0]).is_err());
        // Not a string: an INTEGER, a BOOLEAN.
        assert!(cn(0x02, &[1]).is_err());
        assert!(cn(0x01, &[0xff]).is_err());
    }

    #[test]
    fn malformed_names_are_refused_not_guessed() {
        let good = rdn(OID_CN, UTF8_STRING, b"a");
        assert_eq!(names(&good).unwrap().common_name.as_deref(), Some("a"));
        // An empty RDN is skipped, as Go does.
        let with_empty = [der(SET, &[]), good.clone()].concat();
        assert_eq!(
            names(&with_empty).unwrap().common_name.as_deref(),
            Some("a")
        );
        let attr = |rest: &[u8]| {
            let inner = [der(OID, OID_CN), der(UTF8_STRING, b"a"), rest.to_vec()].concat();
            der(SET, &der(SEQUENCE, &inner))
        };
        let bad = [
            der(SEQUENCE, &good),                              // an RDN that is no SET
            der(SET, &der(SET, &[])),                          // an attribute that is no SEQUENCE
            attr(&der(UTF8_STRING, b"b")),                     // a second value
            rdn(&[0x55, 0x04, 0x80, 0x03], UTF8_STRING, b"a"), // an arc padded with 0x80
            rdn(&[0x55, 0x04, 0x83], UTF8_STRING, b"a"),       // an unfinished arc
            der(SET, &der(SEQUENCE, &der(OID, OID_CN))),       // no value
            [good.clone(), vec![SET]].concat(),                // cut short
            vec![SET, 0x81, 0x01, 0x00],                       // a length not in DER's form
        ];
        for b in bad {
            assert!(names(&b).is_err(), "{b:02x?}");
        }
    }

    #[test]
    fn times_are_digits_or_unread() {
        assert_eq!(
            format_time(0x17, b"260101120000Z").as_deref(),
            Some("2026-01-01 12:00:00 UTC")
        );
        assert_eq!(
            format_time(0x18, b"19991231235959Z").as_deref(),
            Some("1999-12-31 23:59:59 UTC")
        );
        // A multi-byte character where digits belong: not a time, and no panic.
        assert_eq!(format_time(0x18, "2026120606154\u{2a5}".as_bytes()), None);
        assert_eq!(format_time(0x17, "\u{2a5}0101120000Z".as_bytes()), None);
        assert_eq!(format_time(0x17, b"2601011200x0Z"), None);
    }

    #[test]
    fn a_certificate_whose_subject_go_refuses_names_nobody() {
        let der_cert = openssl_cert("/CN=ok");
        let s = subject(&der_cert).unwrap();
        let name_at = |der: &[u8], find: &[u8]| der.windows(find.len()).rposition(|w| w == find);
        // Make the CN's UTF8String a PrintableString holding '@' ("ok" -> "o@").
        let mut broken = der_cert.clone();
        let at = name_at(&broken, &[OID_CN, &[UTF8_STRING, 2], b"ok"].concat()).unwrap();
        broken[at + 3] = PRINTABLE_STRING;
        broken[at + 6] = b'@';
        let b = subject(&broken).unwrap();
        assert_eq!((b.common_name, b.organizations), (None, vec![]));
        assert!(b.name_error.is_some());
        assert_eq!(b.not_after, s.not_after, "the rest is still read");
    }
}
