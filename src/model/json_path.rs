//! Finds the JSON path (`spec.containers[1].ports[0].containerPort`) of the value at a
//! byte offset, so decode errors, which serde_json reports by line and column, can name
//! the field the way validation errors do. A small scanner, not a parser: it assumes the
//! text up to the offset is JSON-ish and never fails.

enum Frame {
    /// In an object: the last key seen, and whether a key (not a value) comes next.
    Object { key: Vec<u8>, want_key: bool },
    /// In an array: the index of the current element.
    Array(usize),
}

/// The byte offset of a serde_json (1-based line, column) position, clamped to the text.
pub fn offset_of(text: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match text[start..].iter().position(|&b| b == b'\n') {
            Some(p) => start += p + 1,
            None => return text.len(),
        }
    }
    (start + column).min(text.len())
}

/// Levels of nesting named in a path; deeper levels are only counted, so hostile
/// nesting costs neither memory nor a long message.
const MAX_FRAMES: usize = 16;

/// The path of the value being read at `at` (empty at the top level).
pub fn path_at(text: &[u8], at: usize) -> String {
    let mut stack: Vec<Frame> = Vec::new();
    // Levels below the named ones.
    let mut deeper = 0usize;
    let mut i = 0;
    let end = at.min(text.len());
    while i < end {
        match text[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                if let (0, Some(Frame::Object { key, want_key })) = (deeper, stack.last_mut()) {
                    if *want_key {
                        *key = text[start..i.min(text.len())].to_vec();
                    }
                }
            }
            b':' if deeper == 0 => {
                if let Some(Frame::Object { want_key, .. }) = stack.last_mut() {
                    *want_key = false;
                }
            }
            b',' if deeper == 0 => match stack.last_mut() {
                Some(Frame::Object { want_key, .. }) => *want_key = true,
                Some(Frame::Array(n)) => *n += 1,
                None => {}
            },
            b'{' | b'[' if stack.len() >= MAX_FRAMES => deeper += 1,
            b'{' => stack.push(Frame::Object {
                key: Vec::new(),
                want_key: true,
            }),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' if deeper > 0 => deeper -= 1,
            b'}' | b']' => {
                stack.pop();
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for f in &stack {
        match f {
            Frame::Object { key, want_key } if !want_key || !key.is_empty() => {
                if *want_key {
                    // Between members: the error is about the object itself.
                    break;
                }
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&String::from_utf8_lossy(key));
            }
            Frame::Object { .. } => break,
            Frame::Array(n) => path.push_str(&format!("[{n}]")),
        }
    }
    if deeper > 0 {
        path.push_str(&format!("...({deeper} more levels)"));
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_marker(doc: &str) -> String {
        let at = doc.find('@').unwrap();
        path_at(doc.as_bytes(), at)
    }

    #[test]
    fn paths_at_offsets() {
        assert_eq!(at_marker(r#"{"a":@1}"#), "a");
        assert_eq!(
            at_marker(
                r#"{"spec":{"containers":[{"name":"a"},{"ports":[{"x":1},{"containerPort":@}]}]}}"#
            ),
            "spec.containers[1].ports[1].containerPort"
        );
        assert_eq!(at_marker(r#"{"a":{"b":1},@"#), "");
        assert_eq!(at_marker(r#"{"a":"x\"y,{[","b":@"#), "b");
        assert_eq!(at_marker(r#"{"a":[1,2,@"#), "a[2]");
        assert_eq!(at_marker(r#"{"a":{"b":1,@"#), "a");
        let deep = format!("{{\"a\":{}@", "[".repeat(100));
        assert_eq!(
            path_at(deep.as_bytes(), deep.len() - 1),
            format!("a{}...(85 more levels)", "[0]".repeat(15))
        );
    }

    #[test]
    fn offsets_from_line_and_column() {
        let t = b"ab\ncd\nef";
        assert_eq!(offset_of(t, 1, 1), 1);
        assert_eq!(offset_of(t, 2, 1), 4);
        assert_eq!(offset_of(t, 9, 1), 8);
    }
}
