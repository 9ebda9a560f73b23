//! The exit status a runtime's streaming server sends on the exec stream's error
//! channel (`cri::stream_channels::outcome`, a JSON `metav1.Status`). Properties: no
//! panic, also on deep nesting and huge numbers; an exit code is only read from
//! "Success" (0) or from the message of the first ExitCode cause of a "Failure".
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tinylet::cri::stream_channels::{outcome, Outcome};

fuzz_target!(|input: &[u8]| {
    let Ok(Outcome::Exited(code)) = outcome(input) else {
        return;
    };
    // As a plain value (not always possible: a number out of f64's range in a field the
    // status ignores is skipped there, refused here).
    let Ok(v) = serde_json::from_slice::<Value>(input) else {
        return;
    };
    if v["status"] == "Success" {
        assert_eq!(code, 0);
        return;
    }
    assert_eq!(v["status"], "Failure");
    let causes = v["details"]["causes"].as_array().expect("causes");
    let first = causes
        .iter()
        .find(|c| c["reason"] == "ExitCode")
        .expect("an ExitCode cause");
    let said = first["message"]
        .as_str()
        .and_then(|m| m.parse::<i32>().ok());
    assert_eq!(said, Some(code));
});
