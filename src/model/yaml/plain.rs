//! Plain (unquoted) scalars: where one ends (at `: `, ` #`, and in flow context at
//! `,[]{}`), how it continues on more indented lines, and what it means: resolved as
//! go-yaml v2 (kubectl) does, YAML 1.1's null, booleans (`yes`, `off`, ...), octal
//! `0644`, hex, binary and floats; `.inf` and `.nan` refused because JSON cannot hold
//! them.

use super::{fold, Indent, Parser, Result, YAML_BLANK};
use serde_json::{Number, Value};

impl Parser<'_> {
    /// Where a plain scalar starting at `from` ends on its line, and whether it ended at
    /// a `: ` (a mapping key). In flow context `,[]{}` end it too.
    pub(super) fn plain_end(&self, from: usize, flow: bool) -> (usize, bool) {
        let mut at = from;
        while let Some(c) = self.byte(at) {
            match c {
                b'\n' => break,
                b':' if self.blank_at(at + 1)
                    || (flow && matches!(self.byte(at + 1), Some(b',' | b']' | b'}'))) =>
                {
                    return (at, true)
                }
                b'#' if at > from && matches!(self.b[at - 1], b' ' | b'\t') => break,
                b',' | b'[' | b']' | b'{' | b'}' if flow => break,
                _ => {}
            }
            at += 1;
        }
        (at, false)
    }

    /// A plain scalar in block context, continued on following lines that are more
    /// indented than `parent` (joined by a space; blank lines become newlines).
    pub(super) fn plain_block(&mut self, parent: Indent) -> Result<Value> {
        self.count_node()?;
        let (end, key) = self.plain_end(self.pos, false);
        if key {
            self.pos = end;
            return self.fail("a mapping is not allowed here (\": \" inside a value; quote it)");
        }
        let (start, first) = (self.pos, self.s[self.pos..end].trim_end_matches(YAML_BLANK));
        let mut text: Option<String> = None;
        self.pos = end;
        let mut comment = self.peek() == Some(b'#');
        self.next_line();
        // A comment ends a plain scalar: no continuation after it.
        while !comment {
            let resume = self.pos;
            let mut blank_lines = 0;
            let indent = loop {
                match self.continuation_indent() {
                    Some(None) => {
                        blank_lines += 1;
                        self.next_line();
                    }
                    Some(Some(i)) => break i,
                    None => break -1,
                }
            };
            let content = self.b[self.pos..]
                .iter()
                .find(|&&c| c != b' ' && c != b'\t');
            if indent <= parent || content == Some(&b'#') {
                self.pos = resume;
                break;
            }
            self.pos += indent as usize;
            let (end, key) = self.plain_end(self.pos, false);
            if key {
                // Far more often a key indented too deep than a value with ": " in it.
                return self.fail(
                    "bad indentation: a key deeper than the keys of its mapping (align it \
                     with them; if \": \" belongs to a multi-line value, quote the value)",
                );
            }
            let t = text.get_or_insert_with(|| first.to_string());
            fold(t, blank_lines);
            t.push_str(self.s[self.pos..end].trim_matches(YAML_BLANK));
            self.pos = end;
            comment = self.peek() == Some(b'#');
            self.next_line();
        }
        Ok(match text {
            Some(t) => Value::String(t),
            None => resolve_plain(first).map_err(|m| self.error_at(start, m))?,
        })
    }
}

/// A plain scalar that reads as an infinity or NaN, which JSON cannot hold (the text).
#[derive(Debug)]
pub(super) struct NotFinite(String);

impl std::fmt::Display for NotFinite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} is not a finite number (JSON cannot hold it; quote it for a string)",
            self.0
        )
    }
}

impl std::error::Error for NotFinite {}

/// The message of a YAML error at the scalar's position.
impl From<NotFinite> for String {
    fn from(e: NotFinite) -> String {
        e.to_string()
    }
}

/// The value of a plain scalar, as go-yaml v2 (kubectl) resolves it.
pub(super) fn resolve_plain(text: &str) -> Result<Value, NotFinite> {
    Ok(match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Value::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Value::Bool(false)
        }
        _ => match number(text) {
            Some(Ok(n)) => Value::Number(n),
            Some(Err(())) => return Err(NotFinite(text.to_string())),
            None => Value::String(text.to_string()),
        },
    })
}

/// A YAML 1.1 integer or float; `Some(Err)` for infinities and NaN; `None` for text.
fn number(text: &str) -> Option<Result<Number, ()>> {
    let (neg, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = digits.to_ascii_lowercase();
    if lower == ".inf" || (lower == ".nan" && digits.len() == text.len()) {
        return Some(Err(()));
    }
    let radix = |p: &str, r| {
        let d = digits.strip_prefix(p)?;
        let v = i128::from_str_radix(d, r)
            .ok()
            .filter(|_| !d.starts_with(['+', '-']))?;
        Some(if neg { -v } else { v })
    };
    let int = if digits.len() > 1
        && digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        radix("0", 8)
    } else {
        radix("0x", 16)
            .or_else(|| radix("0o", 8))
            .or_else(|| radix("0b", 2))
            .or_else(|| {
                digits
                    .bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| text.parse::<i128>().ok())?
            })
    };
    if let Some(v) = int {
        if let Ok(v) = i64::try_from(v) {
            return Some(Ok(v.into()));
        }
        if let Ok(v) = u64::try_from(v) {
            return Some(Ok(v.into()));
        }
    }
    let float_shaped = !digits.is_empty()
        && digits.bytes().any(|b| b.is_ascii_digit())
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && digits.as_bytes()[0] != b'e'
        && digits.as_bytes()[0] != b'E';
    let f: f64 = text.parse().ok().filter(|_| float_shaped)?;
    Some(Number::from_f64(f).ok_or(()))
}
