//! `null` object members read as absent, as Go's JSON decoder reads them (YAML-to-JSON
//! tools write `env: null` for an empty `env:`; kubectl writes `creationTimestamp: null`).
//!
//! The document is first parsed strictly as JSON (into `IgnoredAny`: no values are
//! built), so malformed text is refused as written and never repaired. Only then is each
//! `"key": null` member (and one comma next to it) overwritten with spaces, newlines
//! kept, so line and column numbers in later errors still point into the original. A
//! generic per-field wrapper cost about 50 KB of code; this is one small loop. `null`
//! inside arrays is left alone.

use serde::de::IgnoredAny;
use std::borrow::Cow;

/// `bytes` checked to be one JSON document, with its `"key": null` members blanked.
/// The error is serde_json's (with line and column) for text that is not JSON.
pub fn without_null_members(bytes: &[u8]) -> Result<Cow<'_, [u8]>, serde_json::Error> {
    if !bytes.windows(4).any(|w| w == b"null") {
        // Nothing to blank: the typed parse that follows is strict on its own.
        return Ok(Cow::Borrowed(bytes));
    }
    // Skipping values is iterative in serde_json (one byte of heap per nesting level),
    // so this costs no stack however deep the document is.
    serde_json::from_slice::<IgnoredAny>(bytes)?;
    let mut copy = bytes.to_vec();
    blank_null_members(&mut copy);
    Ok(Cow::Owned(copy))
}

/// Blanks every `"key": null` object member of `text`, which must be valid JSON.
///
/// In valid JSON the state of an object matters only between its members: once a
/// member's value starts, no comma is pending, so an object needs no saved state while
/// a nested value is scanned. The stack holds one flag per level (object or array).
fn blank_null_members(text: &mut [u8]) {
    // Within the innermost object: where the comma before the current member is, and
    // whether a member was blanked with no comma before it (so the comma after it must go).
    let mut comma: Option<usize> = None;
    let mut drop_next_comma = false;
    // true for an object level.
    let mut levels: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let in_object = levels.last() == Some(&true);
        match text[i] {
            b'"' => {
                let start = i;
                i = skip_string(text, i);
                if in_object {
                    if let Some(end) = null_value_after_key(text, i) {
                        let from = comma.unwrap_or(start);
                        drop_next_comma = comma.is_none();
                        comma = None;
                        blank(&mut text[from..end]);
                        i = end;
                        continue;
                    }
                    // Not null: the value follows; the scan continues inside it.
                    comma = None;
                }
                continue;
            }
            b',' if in_object => {
                if drop_next_comma {
                    text[i] = b' ';
                    drop_next_comma = false;
                } else {
                    comma = Some(i);
                }
            }
            open @ (b'{' | b'[') => {
                levels.push(open == b'{');
                comma = None;
                drop_next_comma = false;
            }
            b'}' | b']' => {
                levels.pop();
                comma = None;
                drop_next_comma = false;
            }
            _ => {}
        }
        i += 1;
    }
}

/// The index just past the string starting at `i` (an opening quote).
fn skip_string(text: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < text.len() && text[i] != b'"' {
        i += if text[i] == b'\\' { 2 } else { 1 };
    }
    (i + 1).min(text.len())
}

/// If a key ends at `i` and is followed by `: null` (then a delimiter), the index just
/// past `null`.
fn null_value_after_key(text: &[u8], mut i: usize) -> Option<usize> {
    let ws = |text: &[u8], mut i: usize| {
        while text.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    i = ws(text, i);
    if text.get(i) != Some(&b':') {
        return None;
    }
    i = ws(text, i + 1);
    let end = i + 4;
    let delimited = text
        .get(end)
        .is_none_or(|&c| c == b',' || c == b'}' || c.is_ascii_whitespace());
    (text.get(i..end) == Some(b"null") && delimited).then_some(end)
}

/// Spaces over `bytes`, keeping newlines so line numbers do not move.
fn blank(bytes: &mut [u8]) {
    for b in bytes {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &str) -> String {
        let mut b = s.as_bytes().to_vec();
        blank_null_members(&mut b);
        let out = String::from_utf8(b).unwrap();
        assert_eq!(out.len(), s.len());
        // The result is JSON with the same meaning minus the null members.
        if serde_json::from_str::<serde_json::Value>(s).is_ok() {
            let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
            assert!(!out.contains(": null"), "{out}");
            drop(v);
        }
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn null_members_go_with_one_comma() {
        assert_eq!(run(r#"{"a": null}"#), "{ }");
        assert_eq!(run(r#"{"a":1,"b":null}"#), r#"{"a":1 }"#);
        assert_eq!(run(r#"{"a":null,"b":1}"#), r#"{ "b":1}"#);
        assert_eq!(run(r#"{"a":null,"b":null,"c":null}"#), "{ }");
        assert_eq!(run(r#"{"a":1,"b":null,"c":2}"#), r#"{"a":1 ,"c":2}"#);
        assert_eq!(
            run("{\"x\": {\"e\": null, \"n\": [null, 1]},\n \"s\": \"null\", \"k\": nullx}"),
            r#"{"x": { "n": [null, 1]}, "s": "null", "k": nullx}"#
        );
        assert_eq!(
            run(r#"{"q\"":null, "r": "a\\", "t": null}"#),
            r#"{ "r": "a\\" }"#
        );
    }

    #[test]
    fn lines_are_kept() {
        let s = "{\"a\":\n null,\n\"b\": 1}";
        let out = without_null_members(s.as_bytes()).unwrap();
        assert_eq!(out.iter().filter(|&&c| c == b'\n').count(), 2);
        assert_eq!(out.len(), s.len());
    }

    #[test]
    fn text_without_null_is_borrowed_as_is() {
        let s = br#"{"a": 1, "b": [2]}"#;
        assert!(matches!(without_null_members(s), Ok(Cow::Borrowed(_))));
        // Malformed text without a null is left for the typed parse to refuse.
        assert!(without_null_members(b"{\"a\" 1}").is_ok());
    }

    /// Blanking a null member must never turn malformed text into JSON.
    #[test]
    fn malformed_json_is_refused_not_repaired() {
        for bad in [
            r#"{"spec":{"a":1} "status":null}"#,
            r#"{"a":1 "b":null}"#,
            r#"{"a":null "b":1}"#,
            r#"{"a":null,}"#,
            r#"{"a":null,,"b":1}"#,
            r#"{,"a":null}"#,
            r#"{"a":null}}"#,
            r#"{"a":null} {"b":null}"#,
            r#"[null,]"#,
            r#"{"a" null}"#,
            r#"{"a":null"#,
            "{\"a\":null, // comment\n}",
        ] {
            let e = without_null_members(bad.as_bytes()).expect_err(bad);
            assert!(e.line() >= 1, "{bad}: {e}");
        }
    }

    #[test]
    fn deep_valid_nesting_costs_no_stack() {
        let depth = 400_000;
        let doc = format!(
            r#"{{"x":null,"deep":{}{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let out = without_null_members(doc.as_bytes()).unwrap();
        assert!(!out.windows(4).any(|w| w == b"null"));
        serde_json::from_slice::<IgnoredAny>(&out).unwrap();
    }
}
