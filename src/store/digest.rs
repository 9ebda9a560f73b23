//! FNV-1a with 128 bits: a tiny, stable, dependency-free digest. Used where bytes must
//! map to the same value on every run and every build (derived uids of firmware pods,
//! the remembered content of status files). Not cryptographic: nothing here defends
//! against an adversary choosing colliding inputs, and nothing needs to.

const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
const PRIME: u128 = 0x0000000001000000000000000000013b;

/// The 128-bit FNV-1a digest of `bytes`.
pub fn fnv1a128(bytes: &[u8]) -> u128 {
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u128::from(*b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // Published FNV-1a 128 test vectors.
        assert_eq!(fnv1a128(b""), 0x6c62272e07bb014262b821756295c58d);
        assert_eq!(fnv1a128(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
    }
}
