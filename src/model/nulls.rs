//! `null` object members read as absent, as Go's JSON decoder reads them (YAML-to-JSON
//! tools write `env: null` for an empty `env:`; kubectl writes `creationTimestamp: null`).
//!
//! Done once on the text instead of per field in serde: each `"key": null` member (and
//! one comma next to it) is overwritten with spaces, newlines kept, so line and column
//! numbers in later errors still point into the original. A generic per-field wrapper
//! cost about 50 KB of code; this is one small loop. `null` inside arrays is left alone.

/// Blanks every `"key": null` object member in place. Never fails: text that is not
/// valid JSON is left for the parser to refuse.
pub fn blank_null_members(text: &mut [u8]) {
    // For each open object: where the comma before the current member is, and whether a
    // member was blanked with no comma before it (so the comma after it must go).
    struct Obj {
        comma: Option<usize>,
        drop_next_comma: bool,
    }
    // None for an array level.
    let mut stack: Vec<Option<Obj>> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                let start = i;
                i = skip_string(text, i);
                if let Some(Some(obj)) = stack.last_mut() {
                    if let Some(end) = null_value_after_key(text, i) {
                        let from = obj.comma.unwrap_or(start);
                        obj.drop_next_comma = obj.comma.is_none();
                        obj.comma = None;
                        blank(&mut text[from..end]);
                        i = end;
                        continue;
                    }
                    // Not null: skip past the value's start; the scan continues inside it.
                    obj.comma = None;
                }
                continue;
            }
            b',' => {
                if let Some(Some(obj)) = stack.last_mut() {
                    if obj.drop_next_comma {
                        text[i] = b' ';
                        obj.drop_next_comma = false;
                    } else {
                        obj.comma = Some(i);
                    }
                }
            }
            b'{' => stack.push(Some(Obj {
                comma: None,
                drop_next_comma: false,
            })),
            b'[' => stack.push(None),
            b'}' | b']' => {
                stack.pop();
            }
            _ => {
                if let Some(Some(obj)) = stack.last_mut() {
                    if !text[i].is_ascii_whitespace() && text[i] != b':' {
                        obj.drop_next_comma = false;
                    }
                }
            }
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
    fn lines_are_kept_and_garbage_survives() {
        let s = "{\"a\":\n null,\n\"b\": 1}";
        let mut b = s.as_bytes().to_vec();
        blank_null_members(&mut b);
        assert_eq!(b.iter().filter(|&&c| c == b'\n').count(), 2);
        for junk in [
            "{\"a\": nul",
            "\"",
            "{\"a\":",
            "}}]]",
            "{\"a\" null}",
            "{,,\"a\":null",
        ] {
            let mut b = junk.as_bytes().to_vec();
            blank_null_members(&mut b);
        }
    }
}
