//! The CRI `runtime.v1` messages, generated at build time from
//! `proto/runtime/v1/api.proto` by build.rs (protox + prost-build).
//!
//! Field names follow the proto (snake_case); enums are Rust enums with `i32` fields in
//! the messages (`ContainerState::try_from(status.state)`), and `map<>` fields are
//! `BTreeMap<String, String>`.

#![allow(clippy::all, missing_docs)]

include!(concat!(env!("OUT_DIR"), "/runtime.v1.rs"));

#[cfg(test)]
mod tests {
    //! Spot checks that the generated code puts fields on upstream's wire numbers.
    use super::*;
    use prost::Message;

    /// Field `n` as a varint key with wire type `t`.
    fn key(n: u8, t: u8) -> u8 {
        (n << 3) | t
    }

    #[test]
    fn scalar_fields_use_upstream_numbers() {
        let st = ContainerStatus {
            exit_code: 3,
            ..Default::default()
        };
        assert_eq!(st.encode_to_vec(), vec![key(7, 0), 3]);
        let sc = LinuxContainerSecurityContext {
            no_new_privs: true,
            ..Default::default()
        };
        assert_eq!(sc.encode_to_vec(), vec![key(11, 0), 1]);
    }

    #[test]
    fn security_profiles_and_proc_paths_use_upstream_numbers() {
        let sc = LinuxContainerSecurityContext {
            masked_paths: vec!["/a".into()],
            // RuntimeDefault is 0: an empty but present message, as kubelet sends it.
            seccomp: Some(SecurityProfile::default()),
            apparmor: Some(SecurityProfile {
                profile_type: security_profile::ProfileType::Unconfined as i32,
                localhost_ref: String::new(),
            }),
            ..Default::default()
        };
        let apparmor_key = [0x82, 0x01]; // field 16, length-delimited: a two-byte varint
        let mut want = vec![key(13, 2), 2, b'/', b'a', key(15, 2), 0];
        want.extend(apparmor_key);
        want.extend([2, key(1, 0), 1]);
        assert_eq!(sc.encode_to_vec(), want);
    }

    #[test]
    fn nested_and_map_fields_use_upstream_numbers() {
        let f = ContainerFilter {
            state: Some(ContainerStateValue {
                state: ContainerState::ContainerExited as i32,
            }),
            ..Default::default()
        };
        assert_eq!(f.encode_to_vec(), vec![key(2, 2), 2, key(1, 0), 2]);
        let mut sel = PodSandboxFilter::default();
        sel.label_selector.insert("a".into(), "b".into());
        // map entry = message { key = 1; value = 2 } at field 3
        assert_eq!(
            sel.encode_to_vec(),
            vec![key(3, 2), 6, key(1, 2), 1, b'a', key(2, 2), 1, b'b']
        );
    }

    #[test]
    fn unknown_fields_from_a_newer_runtime_are_skipped() {
        // ContainerStatus with image_id (17, not in our schema) and exit_code 3.
        let mut wire = vec![0x8a, 0x01, 2, b'i', b'd'];
        wire.extend([key(7, 0), 3]);
        let st = ContainerStatus::decode(wire.as_slice()).expect("decodes");
        assert_eq!(st.exit_code, 3);
    }
}
