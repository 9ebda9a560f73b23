//! Single- and double-quoted scalars, over several lines too (line breaks fold as in
//! plain scalars), with `''` in single quotes and YAML's escapes in double quotes
//! (`\n`, `\x41`, `\u263A`, `\U0001F600`, an escaped line break, ...). A bad escape
//! is refused with its position rather than kept as text.

use super::{fold, Parser, Result};
use serde_json::Value;

impl Parser<'_> {
    /// A single- or double-quoted scalar at `pos`, possibly over several lines.
    pub(super) fn quoted(&mut self) -> Result<Value> {
        self.count_node()?;
        let open = self.pos;
        let q = self.b[open];
        self.pos += 1;
        let mut out = String::new();
        // Up to here `out` is kept whole at a line break: escaped white space is text.
        let mut escaped_to = 0;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error_at(open, "quoted value is never closed"));
            };
            match c {
                b'\'' if q == b'\'' => {
                    self.pos += 1;
                    if self.peek() != Some(b'\'') {
                        break;
                    }
                    out.push('\'');
                    self.pos += 1;
                }
                b'"' if q == b'"' => {
                    self.pos += 1;
                    break;
                }
                b'\\' if q == b'"' => {
                    self.escape(&mut out)?;
                    escaped_to = out.len();
                }
                b'\n' => {
                    let kept = out.trim_end_matches([' ', '\t']).len().max(escaped_to);
                    out.truncate(kept);
                    self.fold_break(&mut out);
                    self.refuse_marker()?;
                    if self.peek().is_some() && self.column(self.pos) < self.flow_floor {
                        return self.fail("a quoted value's line is less indented than its block");
                    }
                }
                _ => {
                    // The byte at `pos` is literal (even a quote of the other kind).
                    let run = self.b[self.pos + 1..]
                        .iter()
                        .position(|&b| matches!(b, b'\'' | b'"' | b'\\' | b'\n'))
                        .map_or(self.b.len(), |i| self.pos + 1 + i);
                    out.push_str(&self.s[self.pos..run]);
                    self.pos = run;
                }
            }
        }
        Ok(Value::String(out))
    }

    /// At a line break inside a quoted scalar: one break becomes a space, each blank
    /// line a newline; the next line's leading spaces are dropped.
    fn fold_break(&mut self, out: &mut String) {
        let mut blank = 0;
        loop {
            self.pos += 1; // the '\n'
            self.skip_inline_space();
            if self.peek() != Some(b'\n') {
                break;
            }
            blank += 1;
        }
        fold(out, blank);
    }

    /// A double-quoted scalar's escape sequence at `pos`.
    fn escape(&mut self, out: &mut String) -> Result<()> {
        let at = self.pos;
        let Some(c) = self.byte(at + 1) else {
            return self.fail("quoted value is never closed");
        };
        self.pos += 2;
        let simple = match c {
            b'0' => '\0',
            b'a' => '\x07',
            b'b' => '\x08',
            b't' | b'\t' => '\t',
            b'n' => '\n',
            b'v' => '\x0b',
            b'f' => '\x0c',
            b'r' => '\r',
            b'e' => '\x1b',
            b' ' => ' ',
            b'"' => '"',
            b'/' => '/',
            b'\\' => '\\',
            b'N' => '\u{85}',
            b'_' => '\u{a0}',
            b'L' => '\u{2028}',
            b'P' => '\u{2029}',
            b'\n' => {
                // An escaped line break joins the lines without a space; blank lines
                // after it are still line breaks.
                self.skip_inline_space();
                while self.peek() == Some(b'\n') {
                    out.push('\n');
                    self.pos += 1;
                    self.skip_inline_space();
                }
                return Ok(());
            }
            b'x' | b'u' | b'U' => {
                let n = match c {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let hex = self.s.get(self.pos..self.pos + n).unwrap_or("");
                let ch = u32::from_str_radix(hex, 16)
                    .ok()
                    .filter(|_| hex.len() == n && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                    .and_then(char::from_u32);
                let Some(ch) = ch else {
                    return Err(self.error_at(at, format!("bad escape \\{}{hex}", c as char)));
                };
                self.pos += n;
                ch
            }
            _ => {
                let shown = self.s[at + 1..].chars().next().unwrap_or(' ');
                return Err(self.error_at(at, format!("unknown escape \\{shown}")));
            }
        };
        out.push(simple);
        Ok(())
    }
}
