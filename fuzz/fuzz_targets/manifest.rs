//! Manifests (`model::parse_object`: JSON, defaulting, validation), as `apply`, the
//! store and the firmware directories read them. Properties: no panic; only valid JSON
//! is accepted; errors are few, short and free of control characters (one log line
//! each); an accepted object, written as the store writes it, parses back equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tinylet::model::{parse_object, MAX_ERRORS};

/// `model` clips each message at 512 bytes and says how long it was.
const MAX_MESSAGE: usize = 512 + 64;

fuzz_target!(|data: &[u8]| {
    match parse_object("f", data) {
        Ok(obj) => {
            // Input is never repaired: what is accepted is JSON as it stands. Syntax
            // only: JSON numbers have no range (RFC 8259), and a value of a field no
            // object has is skipped unread (1e400 there is accepted, as by the API
            // server), where serde_json's Value refuses what no f64 holds.
            if let Err(e) = std::str::from_utf8(data) {
                panic!("accepted, but not UTF-8: {e}");
            }
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(data) {
                panic!("accepted, but not JSON: {e}");
            }
            let text = obj.to_json_pretty();
            let again = parse_object("f", text.as_bytes())
                .unwrap_or_else(|e| panic!("own output refused: {e}\n{text}"));
            assert_eq!(again, obj, "round trip changed the object:\n{text}");
        }
        Err(e) => {
            assert!(!e.messages.is_empty());
            assert!(e.messages.len() <= MAX_ERRORS + 1, "{}", e.messages.len());
            for m in &e.messages {
                assert!(m.len() <= MAX_MESSAGE, "{} bytes: {m}", m.len());
                assert!(m.starts_with("f: "), "{m}");
                // One log line each: the input's control bytes come out escaped.
                assert!(!m.chars().any(char::is_control), "{m:?}");
            }
        }
    }
});
