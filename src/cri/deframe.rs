//! Reassembles the one length-prefixed message of a unary gRPC response from the DATA
//! frames it arrives in, however they are split.
//!
//! The 5-byte prefix (compressed flag, big-endian length) is checked before anything is
//! allocated: a length above the receive limit fails at once with `ResourceExhausted`.
//! A message that arrives inside one DATA frame is sliced out of it without a copy;
//! otherwise it is copied once into a buffer of exactly its size.

use super::error::Code;
use super::grpc::PREFIX_LEN;
use bytes::{Buf, Bytes, BytesMut};

/// Where the deframer is within the response body.
enum State {
    /// Reading the prefix; `have` bytes of it are in `buf`.
    Prefix { buf: [u8; PREFIX_LEN], have: usize },
    /// Reading a message of `want` bytes into `parts`.
    Body { want: usize, parts: BytesMut },
    /// The message is complete.
    Done(Bytes),
}

/// Collects the single message of a unary response, at most `limit` bytes long.
pub struct Deframer {
    limit: usize,
    state: State,
}

/// Why a response body was refused.
pub type Refusal = (Code, String);

impl Deframer {
    pub fn new(limit: usize) -> Deframer {
        Deframer {
            limit,
            state: State::Prefix {
                buf: [0; PREFIX_LEN],
                have: 0,
            },
        }
    }

    /// Feeds the next DATA frame's payload.
    pub fn push(&mut self, mut chunk: Bytes) -> Result<(), Refusal> {
        while !chunk.is_empty() {
            self.state = match std::mem::replace(&mut self.state, State::Done(Bytes::new())) {
                State::Prefix { mut buf, have } => {
                    let take = (PREFIX_LEN - have).min(chunk.len());
                    if let (Some(dst), Some(src)) =
                        (buf.get_mut(have..have + take), chunk.get(..take))
                    {
                        dst.copy_from_slice(src);
                    }
                    chunk.advance(take);
                    if have + take < PREFIX_LEN {
                        State::Prefix {
                            buf,
                            have: have + take,
                        }
                    } else {
                        let want = self.check_prefix(&buf)?;
                        start_body(want, &mut chunk)
                    }
                }
                State::Body { want, mut parts } => {
                    let take = (want - parts.len()).min(chunk.len());
                    parts.extend_from_slice(chunk.get(..take).unwrap_or_default());
                    chunk.advance(take);
                    if parts.len() == want {
                        State::Done(parts.freeze())
                    } else {
                        State::Body { want, parts }
                    }
                }
                State::Done(_) => {
                    return Err((
                        Code::Internal,
                        "unary response carries more than one message".into(),
                    ))
                }
            };
        }
        Ok(())
    }

    /// The message, once the body has ended: `None` if the body was empty, an error if
    /// it ended inside a prefix or a message.
    pub fn finish(self) -> Result<Option<Bytes>, Refusal> {
        match self.state {
            State::Prefix { have: 0, .. } => Ok(None),
            State::Prefix { have, .. } => Err((
                Code::Internal,
                format!("response ended inside a message prefix ({have} of {PREFIX_LEN} bytes)"),
            )),
            State::Body { want, parts } => Err((
                Code::Internal,
                format!(
                    "response ended inside a message ({} of {want} bytes)",
                    parts.len()
                ),
            )),
            State::Done(msg) => Ok(Some(msg)),
        }
    }

    /// Validates the prefix and returns the message length.
    fn check_prefix(&self, prefix: &[u8; PREFIX_LEN]) -> Result<usize, Refusal> {
        let [flag, l0, l1, l2, l3] = *prefix;
        match flag {
            0 => {}
            1 => {
                return Err((
                    Code::Internal,
                    "response message is compressed, but this client never asks for compression"
                        .into(),
                ))
            }
            other => {
                return Err((
                    Code::Internal,
                    format!("response message has an invalid compressed flag {other}"),
                ))
            }
        }
        let len = u32::from_be_bytes([l0, l1, l2, l3]) as usize;
        if len > self.limit {
            return Err((
                Code::ResourceExhausted,
                format!(
                    "response message of {len} bytes exceeds the receive limit of {} bytes",
                    self.limit
                ),
            ));
        }
        Ok(len)
    }
}

/// The state after a prefix announcing `want` bytes: the message is sliced out of
/// `chunk` when it is all there, else a buffer of exactly `want` bytes is started.
fn start_body(want: usize, chunk: &mut Bytes) -> State {
    if chunk.len() >= want {
        State::Done(chunk.split_to(want))
    } else {
        let mut parts = BytesMut::with_capacity(want);
        parts.extend_from_slice(chunk);
        chunk.clear();
        State::Body { want, parts }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(msg: &[u8]) -> Vec<u8> {
        let mut v = vec![0];
        v.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        v.extend_from_slice(msg);
        v
    }

    #[test]
    fn whole_message_in_one_chunk_is_sliced_not_copied() {
        let data = Bytes::from(frame(b"hello"));
        let mut d = Deframer::new(100);
        d.push(data.clone()).unwrap();
        let msg = d.finish().unwrap().unwrap();
        assert_eq!(&msg[..], b"hello");
        // Same allocation: the message points into the chunk.
        assert_eq!(msg.as_ptr(), data[PREFIX_LEN..].as_ptr());
    }

    #[test]
    fn message_split_at_every_byte() {
        let msg: Vec<u8> = (0..200u8).collect();
        let data = frame(&msg);
        for chunk_size in [1, 2, 3, 4, 5, 6, 7, 64, 204, 205] {
            let mut d = Deframer::new(1000);
            for c in data.chunks(chunk_size) {
                d.push(Bytes::copy_from_slice(c)).unwrap();
            }
            assert_eq!(&d.finish().unwrap().unwrap()[..], &msg[..], "{chunk_size}");
        }
    }

    #[test]
    fn empty_body_and_empty_message() {
        assert_eq!(Deframer::new(10).finish().unwrap(), None);
        let mut d = Deframer::new(10);
        d.push(Bytes::from(frame(b""))).unwrap();
        assert_eq!(d.finish().unwrap(), Some(Bytes::new()));
    }

    #[test]
    fn limit_is_checked_from_the_prefix() {
        let mut d = Deframer::new(16 << 20);
        // Claims 4 GiB - 1 and sends nothing else: refused before any allocation.
        let err = d
            .push(Bytes::from_static(&[0, 255, 255, 255, 255]))
            .unwrap_err();
        assert_eq!(err.0, Code::ResourceExhausted);
        assert!(err.1.contains("4294967295"), "{}", err.1);
        let mut d = Deframer::new(4);
        d.push(Bytes::from(frame(b"1234"))).unwrap();
        let mut d = Deframer::new(4);
        assert_eq!(
            d.push(Bytes::from(frame(b"12345"))).unwrap_err().0,
            Code::ResourceExhausted
        );
    }

    #[test]
    fn compressed_and_bad_flags_are_refused() {
        let mut d = Deframer::new(10);
        let err = d.push(Bytes::from_static(&[1, 0, 0, 0, 1, 7])).unwrap_err();
        assert_eq!(err.0, Code::Internal);
        assert!(err.1.contains("compressed"), "{}", err.1);
        let mut d = Deframer::new(10);
        assert!(d.push(Bytes::from_static(&[2, 0, 0, 0, 0])).is_err());
    }

    #[test]
    fn truncated_and_extra_data_are_errors() {
        let mut d = Deframer::new(10);
        d.push(Bytes::from_static(&[0, 0, 0])).unwrap();
        assert!(d.finish().unwrap_err().1.contains("prefix"));
        let mut d = Deframer::new(10);
        d.push(Bytes::from_static(&[0, 0, 0, 0, 3, 1])).unwrap();
        assert!(d.finish().unwrap_err().1.contains("1 of 3"));
        let mut d = Deframer::new(10);
        let mut two = frame(b"a");
        two.extend(frame(b"b"));
        assert!(d.push(Bytes::from(two)).is_err());
    }
}
