//! DNS answers as the uplink's stub resolver reads them (`uplink::resolve`): whatever a
//! server, or anyone who can send it a datagram, answers to a query for a name and type
//! taken from the input. Properties: no panic; a packet counts only when it repeats the
//! query's id and its question (name in any letter case, type, class), so changing the
//! id or the question's type makes any answer be ignored; at most one address per
//! answer record; an answer built from the input's addresses gives them back in order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::net::IpAddr;
use tinylet::uplink::resolve::{decode_answer, encode_query};

const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;

/// An answer to `query` with one record per piece of `data` (4 or 16 bytes each),
/// owner names as compression pointers to the question.
fn answer_to(query: &[u8], qtype: u16, data: &[u8]) -> (Vec<u8>, Vec<IpAddr>) {
    let size = if qtype == TYPE_A { 4 } else { 16 };
    let mut p = query.to_vec();
    p[2] |= 0x80;
    p[3] = 0x80;
    let mut ips = Vec::new();
    for piece in data.chunks_exact(size).take(40) {
        p.extend_from_slice(&[0xc0, 12]);
        p.extend_from_slice(&qtype.to_be_bytes());
        p.extend_from_slice(&[0, 1, 0, 0, 0, 60, 0, size as u8]);
        p.extend_from_slice(piece);
        ips.push(match <[u8; 4]>::try_from(piece) {
            Ok(v4) => IpAddr::from(v4),
            Err(_) => IpAddr::from(<[u8; 16]>::try_from(piece).unwrap()),
        });
    }
    p[6..8].copy_from_slice(&(ips.len() as u16).to_be_bytes());
    (p, ips)
}

fuzz_target!(|input: &[u8]| {
    // id (2 bytes), type choice, name length, name, then the packet.
    let [id0, id1, kind, len, rest @ ..] = input else {
        return;
    };
    let (name, packet) = rest.split_at(usize::from(*len % 64).min(rest.len()));
    let Ok(name) = std::str::from_utf8(name) else {
        return;
    };
    let qtype = if kind & 1 == 0 { TYPE_A } else { TYPE_AAAA };
    let id = u16::from_be_bytes([*id0, *id1]);
    let Ok(query) = encode_query(id, name, qtype) else {
        return;
    };
    if let Some(Ok(ips)) = decode_answer(packet, &query) {
        assert_eq!(&packet[..2], &query[..2]);
        let records = u16::from_be_bytes([packet[6], packet[7]]);
        assert!(ips.len() <= usize::from(records));
        let other_id = encode_query(id ^ 1, name, qtype).unwrap();
        assert_eq!(decode_answer(packet, &other_id), None);
        let other_type = encode_query(id, name, TYPE_A + TYPE_AAAA - qtype).unwrap();
        assert_eq!(decode_answer(packet, &other_type), None);
    }
    let (built, ips) = answer_to(&query, qtype, packet);
    assert_eq!(decode_answer(&built, &query), Some(Ok(ips)));
});
