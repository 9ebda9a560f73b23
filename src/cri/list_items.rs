//! The items of a CRI list answer (ListPodSandbox, ListContainers) as undecoded bytes.
//!
//! Both answers are one message whose field 1 repeats the listed objects. Splitting it
//! into the objects' encoded bytes costs no allocation per object (each item is a slice
//! of the answer), so a caller polling the runtime can tell "nothing changed" from the
//! bytes alone and decode the objects only when something did (see the agent's PLEG).

use bytes::Bytes;

/// Protobuf wire types (the encoding's own numbers).
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const FIXED32: u64 = 5;

/// The encoded bytes of every field-1 entry of `message`, in order; other fields are
/// skipped. Fails, naming the offset, on a message that is not valid protobuf.
pub fn items(message: &Bytes) -> Result<Vec<Bytes>, Malformed> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < message.len() {
        let key = varint(message, &mut at)?;
        let (field, wire) = (key >> 3, key & 7);
        let end = match wire {
            VARINT => {
                varint(message, &mut at)?;
                at
            }
            FIXED64 => at + 8,
            FIXED32 => at + 4,
            LEN => {
                let len = usize::try_from(varint(message, &mut at)?)
                    .map_err(|_| Malformed::LengthTooLarge { at })?;
                at.checked_add(len)
                    .ok_or(Malformed::LengthTooLarge { at })?
            }
            _ => return Err(Malformed::WireType { wire, at }),
        };
        if end > message.len() {
            return Err(Malformed::FieldPastEnd { field, at });
        }
        if field == 1 && wire == LEN {
            out.push(message.slice(at..end));
        }
        at = end;
    }
    Ok(out)
}

/// Reads a base-128 varint at `*at`, advancing past it.
fn varint(buf: &[u8], at: &mut usize) -> Result<u64, Malformed> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&b) = buf.get(*at) else {
            return Err(Malformed::VarintPastEnd { at: *at });
        };
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(Malformed::VarintTooLong { at: *at })
}

/// Why a list answer is not valid protobuf, with the byte offset where it broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    /// A length that does not fit in memory.
    LengthTooLarge {
        /// Where.
        at: usize,
    },
    /// A wire type protobuf does not define (or a deprecated group).
    WireType {
        /// The wire type.
        wire: u64,
        /// Where.
        at: usize,
    },
    /// A field that runs past the end of the message.
    FieldPastEnd {
        /// Its number.
        field: u64,
        /// Where.
        at: usize,
    },
    /// A varint cut off by the end of the message.
    VarintPastEnd {
        /// Where.
        at: usize,
    },
    /// A varint of more than 10 bytes.
    VarintTooLong {
        /// Where it ends.
        at: usize,
    },
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Malformed::LengthTooLarge { at } => write!(f, "length at byte {at} too large"),
            Malformed::WireType { wire, at } => {
                write!(f, "unsupported wire type {wire} at byte {at}")
            }
            Malformed::FieldPastEnd { field, at } => {
                write!(f, "field {field} at byte {at} runs past the end")
            }
            Malformed::VarintPastEnd { at } => write!(f, "varint at byte {at} runs past the end"),
            Malformed::VarintTooLong { at } => write!(f, "varint ending at byte {at} is too long"),
        }
    }
}

impl std::error::Error for Malformed {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::pb;
    use prost::Message;

    #[test]
    fn splits_a_list_answer_into_its_objects() {
        let sb = |id: &str| pb::PodSandbox {
            id: id.into(),
            created_at: 1_700_000_000_000_000_000,
            state: 1,
            labels: [("a".to_string(), "b".to_string())].into(),
            ..Default::default()
        };
        let resp = pb::ListPodSandboxResponse {
            items: vec![sb("one"), sb("two")],
        };
        let bytes = Bytes::from(resp.encode_to_vec());
        let got = items(&bytes).unwrap();
        assert_eq!(got.len(), 2);
        let back: Vec<pb::PodSandbox> = got
            .into_iter()
            .map(|b| pb::PodSandbox::decode(b).unwrap())
            .collect();
        assert_eq!(back, resp.items);
        assert!(items(&Bytes::new()).unwrap().is_empty());
    }

    #[test]
    fn skips_other_fields_and_rejects_garbage() {
        // field 2 varint 5, field 1 "xy", field 3 fixed32.
        let msg = Bytes::from_static(&[0x10, 5, 0x0a, 2, b'x', b'y', 0x1d, 1, 2, 3, 4]);
        assert_eq!(items(&msg).unwrap(), [Bytes::from_static(b"xy")]);
        for bad in [&[0x0a, 5, 1][..], &[0x0a][..], &[0x0b][..], &[0x80; 11][..]] {
            assert!(items(&Bytes::copy_from_slice(bad)).is_err(), "{bad:?}");
        }
    }
}
