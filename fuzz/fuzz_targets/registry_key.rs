//! Pull-secret registry keys against images (`model::wildcard`, `secret::pull_credentials`).
//! Input: pattern, a 0xff byte, text. Properties: the wildcard matcher agrees with a
//! dynamic-programming reference; the whole credential lookup never panics; both stay
//! fast (libFuzzer's -timeout catches a slow input).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tinylet::model::secret::{pull_credentials, Secret, TYPE_DOCKER_CONFIG_JSON};
use tinylet::model::wildcard;

/// `ok[j]`: the pattern so far matches `text[..j]`.
fn reference(pattern: &[u8], text: &[u8]) -> bool {
    let mut ok = vec![false; text.len() + 1];
    ok[0] = true;
    for &c in pattern {
        let mut next = vec![false; text.len() + 1];
        for j in 0..=text.len() {
            next[j] = match c {
                b'*' => ok[j] || (j > 0 && next[j - 1]),
                b'?' => j > 0 && ok[j - 1],
                _ => j > 0 && ok[j - 1] && text[j - 1] == c,
            };
        }
        ok = next;
    }
    ok[text.len()]
}

fuzz_target!(|data: &[u8]| {
    let (pattern, text) = match data.iter().position(|&b| b == 0xff) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let got = wildcard::matches(pattern, text);
    // The reference costs |pattern| x |text| allocations' worth; keep runs quick.
    if pattern.len() * text.len() <= 1 << 16 {
        assert_eq!(
            got,
            reference(pattern, text),
            "pattern {pattern:?} text {text:?}"
        );
    }
    let (Ok(key), Ok(image)) = (std::str::from_utf8(pattern), std::str::from_utf8(text)) else {
        return;
    };
    let config = serde_json::json!({"auths": {key: {"username": "u"}}});
    let mut secret = Secret {
        type_: TYPE_DOCKER_CONFIG_JSON.into(),
        ..Default::default()
    };
    secret
        .string_data
        .insert(".dockerconfigjson".into(), config.to_string());
    let found = pull_credentials(&[&secret], image);
    assert!(found.len() <= 1);
});
