//! Pretty JSON text from compact JSON text, byte for byte what serde_json's
//! `to_string_pretty` writes (two-space indent, `": "` after keys, `{}` and `[]` for empty
//! containers).
//!
//! Why not `to_string_pretty`: serde's serializers are generic, so every type serialized
//! both compactly (spec hashes, status files) and prettily (store files, `get -o json`,
//! `check-config`) carries two copies of its whole serializer in the binary, about 11 KB
//! for the Pod alone on aarch64. Serializing compactly once and re-indenting the text
//! keeps one copy; the re-indenting is this one small loop.

/// Re-indents `compact`, the output of `serde_json::to_vec` (no whitespace outside
/// strings), as serde_json's pretty printer would have written it.
pub fn pretty(compact: &[u8]) -> String {
    let mut out = Vec::with_capacity(compact.len() + compact.len() / 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while let Some(&b) = compact.get(i) {
        i += 1;
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                out.push(b);
            }
            b'{' | b'[' => {
                out.push(b);
                let close = if b == b'{' { b'}' } else { b']' };
                if compact.get(i) == Some(&close) {
                    // Empty: serde_json writes `{}` / `[]` with nothing between.
                    out.push(close);
                    i += 1;
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(b);
            }
            b',' => {
                out.push(b);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(b),
        }
    }
    // Only ASCII punctuation and whitespace were added to UTF-8 input.
    String::from_utf8(out).unwrap_or_default()
}

fn newline(out: &mut Vec<u8>, depth: usize) {
    out.push(b'\n');
    for _ in 0..depth {
        out.extend_from_slice(b"  ");
    }
}

#[cfg(test)]
mod tests {
    use super::pretty;
    use serde_json::json;

    /// The same text as serde_json's pretty printer, for documents with every shape.
    #[test]
    fn matches_serde_json_pretty() {
        let docs = [
            json!({}),
            json!([]),
            json!({"a": [], "b": {}, "c": [{}], "d": [[]], "e": [1, 2, {"f": null}]}),
            json!({"s": "with {braces}, [brackets]: and \"quotes\" \\ too", "n": -1.5e10}),
            json!({"nested": {"deep": {"deeper": [true, false, "x,y:z"]}}, "u": "é\u{1}"}),
            json!([1, "two", [3, [4, {}]], {"k": {"k": {}}}]),
            json!("just a string, with: punctuation"),
            json!(42),
        ];
        for doc in docs {
            let compact = serde_json::to_vec(&doc).unwrap();
            let want = serde_json::to_string_pretty(&doc).unwrap();
            assert_eq!(pretty(&compact), want, "for {doc}");
        }
    }

    /// Struct fields keep their declaration order (no map in between).
    #[test]
    fn matches_serde_json_pretty_for_a_struct() {
        let cfg = crate::config::Config::default();
        let compact = serde_json::to_vec(&cfg).unwrap();
        assert_eq!(
            pretty(&compact),
            serde_json::to_string_pretty(&cfg).unwrap()
        );
    }
}
