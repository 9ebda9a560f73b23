//! The certificate subject as the kubelet API reads a client's user and groups
//! (`tls::identity`), which must be what the API server (Go's crypto/x509) reads.
//! Two modes, by the first byte: raw bytes as a Name (and as a whole certificate):
//! no panic, and the user is the last CN the name holds; or a subject built from the
//! input (RDNs of one or more attributes: CN, O or another type, each of a string type
//! or not, valid for its type or not), read against a model of Go's rules: the last CN
//! is the user, every O a group in order, and any value Go would refuse (a type that
//! is no string, a character its type does not allow, bytes that are not UTF-8)
//! refuses the whole subject.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tinylet::tls::identity::{names, subject, Names};

const OIDS: [&[u8]; 3] = [
    &[0x55, 0x04, 0x03],
    &[0x55, 0x04, 0x0a],
    &[0x55, 0x04, 0x0b],
];

/// A DER element.
fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
    let n = contents.len();
    let mut out = vec![tag];
    match n {
        0..=0x7f => out.push(n as u8),
        0x80..=0xff => out.extend_from_slice(&[0x81, n as u8]),
        _ => out.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(contents);
    out
}

/// A value's text as Go reads it, or `None` when Go refuses it.
fn go_text(tag: u8, v: &[u8]) -> Option<String> {
    let printable = |b: &u8| b.is_ascii_alphanumeric() || b" '()+,-./:=?*&".contains(b);
    let ascii = |ok: bool| ok.then(|| v.iter().map(|&b| char::from(b)).collect());
    match tag {
        0x0c | 0x14 => String::from_utf8(v.to_vec()).ok(),
        0x13 => ascii(v.iter().all(printable)),
        0x16 => ascii(v.is_ascii()),
        0x12 => ascii(v.iter().all(|b| b.is_ascii_digit() || *b == b' ')),
        0x1e if v.len() % 2 == 0 => {
            let v = v.strip_suffix(&[0, 0]).unwrap_or(v);
            let units = v.chunks(2).map(|u| u16::from_be_bytes([u[0], u[1]]));
            Some(
                char::decode_utf16(units)
                    .map(|c| c.unwrap_or('\u{fffd}'))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Builds a Name from `input`: per attribute a control byte (type, value tag, whether
/// it starts a new RDN, length) and the value's bytes; and the model's reading of it.
fn build(mut input: &[u8]) -> (Vec<u8>, Option<Names>) {
    const TAGS: [u8; 8] = [0x0c, 0x13, 0x16, 0x12, 0x14, 0x1e, 0x02, 0x04];
    let mut rdns: Vec<Vec<u8>> = Vec::new();
    let mut model = Some(Names::default());
    while let [control, len, rest @ ..] = input {
        let (value, after) = rest.split_at(usize::from(*len % 24).min(rest.len()));
        input = after;
        let oid = OIDS[usize::from(control % 3)];
        let tag = TAGS[usize::from(control >> 2 & 7)];
        let attr = der(0x30, &[der(0x06, oid), der(tag, value)].concat());
        match rdns.last_mut() {
            Some(rdn) if control & 0x80 == 0 => rdn.extend(attr),
            _ => rdns.push(attr),
        }
        model = model.and_then(|mut m| {
            let text = go_text(tag, value)?;
            match usize::from(control % 3) {
                0 => m.common_name = Some(text),
                1 => m.organizations.push(text),
                _ => {}
            }
            Some(m)
        });
    }
    // Attributes are read in the order encoded (a real encoder sorts each SET; the
    // reading must not depend on it).
    let name: Vec<u8> = rdns.iter().flat_map(|r| der(0x31, r)).collect();
    (name, model)
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        if let Ok(n) = names(rest) {
            assert!(n
                .common_name
                .as_ref()
                .is_none_or(|c| c.len() <= rest.len() * 2));
        }
        let _ = subject(rest);
        return;
    }
    let (name, model) = build(rest);
    let got = names(&name);
    assert_eq!(got.as_ref().ok(), model.as_ref(), "{name:02x?}");
    // Inside a certificate: the same user and groups, the rest still read.
    let skeleton = [
        der(0xa0, &der(0x02, &[2])),
        der(0x02, &[1]),
        der(
            0x30,
            &der(0x06, &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02]),
        ),
        der(0x30, &[]),
        der(
            0x30,
            &[der(0x17, b"260101000000Z"), der(0x17, b"270101000000Z")].concat(),
        ),
        der(0x30, &name),
        der(0x30, &der(0x03, &[0])),
    ];
    let cert = der(0x30, &der(0x30, &skeleton.concat()));
    let s = subject(&cert).expect("a well-formed certificate");
    let want = model.unwrap_or_default();
    assert_eq!(
        (s.common_name, s.organizations),
        (want.common_name, want.organizations)
    );
    assert_eq!(s.not_after.as_deref(), Some("2027-01-01 00:00:00 UTC"));
});
