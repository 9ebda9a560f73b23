//! Writes a `serde_json::Value` as block YAML, the way kubectl prints objects
//! (`get -o yaml`): mappings one key per line, sequences at their key's indentation.
//!
//! Strings are written plain only when plain text reads back as the same string (never
//! `yes`, `0644`, `null`, `a: b` or a leading `-`); everything else is written as a JSON
//! string, which is a valid YAML double-quoted scalar. So the output always reads back
//! through [`super::parse_document`] to the same value; the tests check that.

use serde_json::{Map, Value};

/// `value` as a YAML document (ends with a newline).
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(m) if !m.is_empty() => mapping(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => sequence(&mut out, a, 0),
        v => {
            scalar(&mut out, v);
            out.push('\n');
        }
    }
    out
}

/// The members of `m`, each on its own line at `indent`.
fn mapping(out: &mut String, m: &Map<String, Value>, indent: usize) {
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        string(out, k);
        out.push(':');
        match v {
            Value::Object(inner) if !inner.is_empty() => {
                out.push('\n');
                pad(out, indent + 2);
                mapping(out, inner, indent + 2);
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                pad(out, indent);
                sequence(out, items, indent);
            }
            v => {
                out.push(' ');
                scalar(out, v);
                out.push('\n');
            }
        }
    }
}

/// The items of `a`, each after `- ` at `indent`; a nested collection starts on the
/// dash's line, two columns in.
fn sequence(out: &mut String, a: &[Value], indent: usize) {
    for (i, v) in a.iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        out.push_str("- ");
        match v {
            Value::Object(m) if !m.is_empty() => mapping(out, m, indent + 2),
            Value::Array(items) if !items.is_empty() => sequence(out, items, indent + 2),
            v => {
                scalar(out, v);
                out.push('\n');
            }
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A scalar or an empty collection, on the current line.
fn scalar(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => string(out, s),
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
    }
}

/// `s` plain when that reads back as the same string, else double-quoted with JSON's
/// escapes (a subset of YAML's).
fn string(out: &mut String, s: &str) {
    if plain_is_safe(s) {
        out.push_str(s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Names, images, paths and URLs stay readable; anything YAML could read differently
/// (a number, a boolean, an indicator, `: ` or ` #`) is quoted, and so is a leading
/// digit with `-` or `:` (YAML 1.1 tools read `2026-12-01` as a date, `1:20` as 80).
fn plain_is_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    (first.is_ascii_alphanumeric() || first == '/')
        && !(first.is_ascii_digit() && s.contains(['-', ':']))
        && !s.ends_with(':')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:+@,".contains(c))
        && super::plain::resolve_plain(s).is_ok_and(|v| v.as_str() == Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::yaml::{parse_document, LIMITS};
    use serde_json::json;

    fn round_trip(v: &Value) -> String {
        let text = to_yaml(v);
        let back = parse_document(&text, &LIMITS).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(&back, v, "{text}");
        text
    }

    #[test]
    fn pods_read_back_as_written() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "labels": {"app": "web", "tier": "1"}, "annotations": {}},
            "spec": {
                "containers": [{
                    "name": "c", "image": "docker.io/library/nginx:1.25",
                    "command": ["sh", "-c", "echo hi; sleep 1"],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "A", "value": "line1\nline2"}],
                    "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                }],
                "volumes": [],
                "terminationGracePeriodSeconds": 30,
                "hostNetwork": false,
            },
            "status": null,
        });
        let text = round_trip(&pod);
        assert!(
            text.contains("\n  containers:\n  - command:\n    - sh\n"),
            "{text}"
        );
        assert!(
            text.contains("\n    image: docker.io/library/nginx:1.25\n"),
            "{text}"
        );
        assert!(text.contains("tier: \"1\"\n"), "{text}");
    }

    #[test]
    fn strings_yaml_would_misread_are_quoted() {
        let tricky = [
            "",
            "yes",
            "No",
            "on",
            "~",
            "null",
            "true",
            "0644",
            "0x1f",
            "1e3",
            "1.5",
            "-1",
            ".inf",
            "- x",
            "a: b",
            "a #b",
            "#x",
            "@x",
            "`x",
            "*x",
            "&x",
            "!x",
            "%x",
            "{x",
            "[x",
            "'q'",
            "\"q\"",
            " lead",
            "trail ",
            "tab\there",
            "a\\b",
            "x:",
            "héllo",
            "\u{1b}[31m",
            "---",
            "...",
            "?",
            "|",
            ">",
            "a,b",
            "=",
            "1:2",
        ];
        for s in tricky {
            round_trip(&json!({ s: s, "l": [s] }));
        }
        assert_eq!(to_yaml(&json!({"a": "yes"})), "a: \"yes\"\n");
        assert_eq!(to_yaml(&json!({"a": "web-1"})), "a: web-1\n");
        assert_eq!(
            to_yaml(&json!({"t": "2026-12-01T00:00:00Z"})),
            "t: \"2026-12-01T00:00:00Z\"\n"
        );
        assert_eq!(to_yaml(&json!({"m": "64Mi"})), "m: 64Mi\n");
    }

    #[test]
    fn numbers_empties_and_nesting() {
        round_trip(
            &json!({"i": -3, "u": u64::MAX, "f": 0.25, "big": 1e300, "t": true,
            "n": null, "e": {}, "a": [], "nested": [[1, [2, 3]], [], {}, {"k": [{"x": 1}]}]}),
        );
        round_trip(&json!([{"a": 1}, "b"]));
        round_trip(&json!("top"));
        round_trip(&json!({}));
    }
}
