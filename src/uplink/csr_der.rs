//! A PKCS#10 certificate signing request in DER, by hand (a few dozen bytes of ASN.1
//! instead of an X.509 crate): the subject kubelet asks for (`CN=system:node:NAME`,
//! `O=system:nodes`), an ECDSA P-256 public key, the node's addresses as
//! subjectAltName in an extensionRequest, signed with ECDSA-SHA256 by the key.

/// ecPublicKey, prime256v1, ecdsa-with-SHA256, extensionRequest, subjectAltName, CN, O.
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
const OID_EXTENSION_REQUEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e];
const OID_SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
const OID_O: &[u8] = &[0x55, 0x04, 0x0a];

/// One DER element: tag, definite length, contents.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

fn oid(o: &[u8]) -> Vec<u8> {
    tlv(0x06, o)
}

/// A BIT STRING without unused bits.
fn bits(b: &[u8]) -> Vec<u8> {
    tlv(0x03, &[&[0u8][..], b].concat())
}

/// A subject alternative name: a DNS name or an IP address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum San {
    /// dNSName.
    Dns(String),
    /// iPAddress.
    Ip(std::net::IpAddr),
}

/// The part of the request that is signed: subject, key, requested SANs.
pub fn request_info(cn: &str, org: &str, public_point: &[u8], sans: &[San]) -> Vec<u8> {
    let rdn = |o: &[u8], v: &str| tlv(0x31, &seq(&[oid(o), tlv(0x0c, v.as_bytes())]));
    let subject = seq(&[rdn(OID_O, org), rdn(OID_CN, cn)]);
    let spki = seq(&[
        seq(&[oid(OID_EC_PUBLIC_KEY), oid(OID_P256)]),
        bits(public_point),
    ]);
    let names: Vec<Vec<u8>> = sans
        .iter()
        .map(|s| match s {
            San::Dns(d) => tlv(0x82, d.as_bytes()),
            San::Ip(std::net::IpAddr::V4(a)) => tlv(0x87, &a.octets()),
            San::Ip(std::net::IpAddr::V6(a)) => tlv(0x87, &a.octets()),
        })
        .collect();
    let san_ext = seq(&[oid(OID_SUBJECT_ALT_NAME), tlv(0x04, &seq(&names))]);
    let ext_request = seq(&[oid(OID_EXTENSION_REQUEST), tlv(0x31, &seq(&[san_ext]))]);
    let attributes = tlv(0xa0, &ext_request);
    seq(&[tlv(0x02, &[0]), subject, spki, attributes])
}

/// The whole request: the info, the algorithm, the signature (DER ECDSA) of the info.
pub fn request(info: Vec<u8>, signature: &[u8]) -> Vec<u8> {
    seq(&[info, seq(&[oid(OID_ECDSA_SHA256)]), bits(signature)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lengths_are_encoded_in_base_256() {
        assert_eq!(&tlv(0x04, &[0; 5])[..2], [0x04, 5]);
        assert_eq!(&tlv(0x04, &[0; 200])[..3], [0x04, 0x81, 200]);
        assert_eq!(&tlv(0x04, &[0; 300])[..4], [0x04, 0x82, 1, 44]);
    }

    #[test]
    fn openssl_reads_the_request() {
        use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING as ALG};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ALG, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ALG, pkcs8.as_ref(), &rng).unwrap();
        let sans = [
            San::Dns("gw1".into()),
            San::Ip("192.0.2.15".parse().unwrap()),
        ];
        let info = request_info(
            "system:node:gw1",
            "system:nodes",
            key.public_key().as_ref(),
            &sans,
        );
        let signature = key.sign(&rng, &info).unwrap();
        let csr = request(info, signature.as_ref());
        let pem = format!(
            "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
            crate::model::base64::encode(&csr)
        );
        let dir = std::env::temp_dir().join(format!("tinylet-csr-{}", std::process::id()));
        std::fs::write(&dir, pem).unwrap();
        let out = std::process::Command::new("openssl")
            .args(["req", "-noout", "-text", "-verify", "-in"])
            .arg(&dir)
            .output()
            .expect("openssl (a test dependency: tests/harness/install-deps.sh)");
        let _ = std::fs::remove_file(&dir);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("CN = system:node:gw1") || text.contains("CN=system:node:gw1"),
            "{text}"
        );
        assert!(text.contains("DNS:gw1, IP Address:192.0.2.15"), "{text}");
    }
}
