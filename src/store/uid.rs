//! Pod uids: random ones for pods stored by `apply`, derived ones for firmware pods.
//!
//! A stored pod without `metadata.uid` gets a random UUID (version 4, from the kernel's
//! `getrandom`) when it is first stored, and the file keeps it for the pod's life.
//! Firmware pods live on read-only flash, so their uid cannot be written down; it is
//! derived from kind, namespace and name instead (a version-8 "custom" UUID over a 128-bit
//! FNV-1a digest), so it is the same after every reboot and firmware update.

use super::digest::fnv1a128;
use std::io;

/// A fresh random UUID v4, e.g. `1b4e28ba-2fa1-41d2-883f-0016d3cca427`.
pub fn random_uid() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        filled +=
            rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())?;
    }
    Ok(format_uuid(u128::from_be_bytes(bytes), 4))
}

/// The stable uid of the firmware object `kind` (`Pod`, ...) `namespace/name`.
pub fn derived_uid(kind: &str, namespace: &str, name: &str) -> String {
    let digest = fnv1a128(format!("tinylet-firmware/{kind}/{namespace}/{name}").as_bytes());
    format_uuid(digest, 8)
}

/// Formats 128 bits as a UUID with the given version and the RFC 9562 variant bits.
fn format_uuid(bits: u128, version: u8) -> String {
    let mut b = bits.to_be_bytes();
    b[6] = (b[6] & 0x0f) | (version << 4);
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn well_formed(u: &str, version: char) {
        assert_eq!(u.len(), 36, "{u}");
        let parts: Vec<_> = u.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{u}");
        assert_eq!(u.chars().nth(14), Some(version), "{u}");
        assert!(
            matches!(u.chars().nth(19), Some('8' | '9' | 'a' | 'b')),
            "{u}"
        );
    }

    #[test]
    fn random_uids_are_v4_and_differ() {
        let a = random_uid().unwrap();
        let b = random_uid().unwrap();
        well_formed(&a, '4');
        assert_ne!(a, b);
    }

    #[test]
    fn derived_uids_are_stable_and_distinct() {
        let a = derived_uid("Pod", "default", "web");
        well_formed(&a, '8');
        assert_eq!(a, derived_uid("Pod", "default", "web"));
        assert_ne!(a, derived_uid("Pod", "default", "web2"));
        assert_ne!(a, derived_uid("Pod", "web", "default"));
        assert_ne!(a, derived_uid("ConfigMap", "default", "web"));
    }
}
