//! CRI list answers split into their items (`cri::list_items::items`, what the PLEG
//! relists with). Properties: no panic; the items are pieces of the answer, in order,
//! never more bytes than it holds; re-encoding them gives the same items; wherever
//! prost decodes the answer as a ListContainersResponse, the split agrees with it.
#![no_main]

use bytes::{BufMut, Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tinylet::cri::list_items::{items, Malformed};
use tinylet::cri::pb;

fn put_varint(out: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        out.put_u8(v as u8 | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

fuzz_target!(|data: &[u8]| {
    let msg = Bytes::copy_from_slice(data);
    let split = items(&msg);
    let decoded = pb::ListContainersResponse::decode(msg.clone());
    let list = match split {
        Ok(list) => list,
        Err(e) => {
            // Only protobuf groups (wire types 3 and 4, never sent by proto3 peers) are
            // skipped by prost and refused here.
            if decoded.is_ok() {
                assert!(
                    matches!(e, Malformed::WireType { wire: 3 | 4, .. }),
                    "{e}"
                );
            }
            return;
        }
    };
    let base = msg.as_ptr() as usize;
    let mut last_end = 0;
    let mut total = 0;
    for item in &list {
        let start = item.as_ptr() as usize - base;
        assert!(item.is_empty() || (start >= last_end && start + item.len() <= msg.len()));
        last_end = start + item.len();
        total += item.len();
    }
    assert!(total <= msg.len());
    let mut again = BytesMut::new();
    for item in &list {
        again.put_u8(0x0a);
        put_varint(&mut again, item.len() as u64);
        again.put_slice(item);
    }
    assert_eq!(items(&again.freeze()).unwrap(), list);
    if let Ok(resp) = decoded {
        assert_eq!(resp.containers.len(), list.len());
    }
});
