//! Literal (`|`) and folded (`>`) block scalars with their chomping (`-`, `+`) and
//! explicit indentation (`1`-`9`) indicators, as YAML 1.2 section 8.1 defines them:
//! certificates, scripts and config files embedded in manifests.

use super::{fold, Indent, Parser, Result};
use serde_json::Value;

impl Parser<'_> {
    /// A literal (`|`) or folded (`>`) block scalar; `pos` at the indicator.
    pub(super) fn block_scalar(&mut self, parent: Indent, folded: bool) -> Result<Value> {
        self.count_node()?;
        self.pos += 1;
        let (mut chomp, mut explicit) = (b' ', None);
        for _ in 0..2 {
            match self.peek() {
                Some(c @ (b'+' | b'-')) if chomp == b' ' => chomp = c,
                Some(c @ b'1'..=b'9') if explicit.is_none() => {
                    explicit = Some((c - b'0') as Indent)
                }
                _ => break,
            }
            self.pos += 1;
        }
        if !self.blank_at(self.pos) {
            return self.fail("expected a chomping (+ or -) or indentation (1-9) indicator");
        }
        self.end_line()?;
        let base = parent.max(0);
        let mut indent = explicit.map(|e| base + e);
        let mut lines: Vec<&str> = Vec::new(); // "" for a blank line
                                               // Spaces of the blank lines before the first line: not more than its own.
        let mut leading: Indent = 0;
        while let Some(state) = self.continuation_indent() {
            let line_end = self.b[self.pos..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(self.b.len(), |i| self.pos + i);
            let spaces = self.b[self.pos..line_end]
                .iter()
                .take_while(|&&c| c == b' ')
                .count() as Indent;
            // Before the indentation is known, a line with a tab past its spaces is the
            // first line of text, not a blank one (tabs are text, never indentation).
            let tabbed = self.b[self.pos + spaces as usize..line_end].contains(&b'\t');
            let state = match state {
                None if tabbed && indent.is_none() => Some(spaces),
                other => other,
            };
            let want = match (state, indent) {
                (None, _) => {
                    match indent {
                        None => leading = leading.max(spaces),
                        // White space past the indentation is text, even on a blank
                        // line.
                        // A tab within the indentation: not a blank line of this
                        // scalar (tabs never indent), so the scalar ended.
                        Some(want) if spaces < want && tabbed => break,
                        Some(want) if spaces >= want && line_end - self.pos > want as usize => {
                            lines.push(&self.s[self.pos + want as usize..line_end]);
                            self.pos = (line_end + 1).min(self.b.len());
                            continue;
                        }
                        Some(_) => {}
                    }
                    lines.push("");
                    self.pos = (line_end + 1).min(self.b.len());
                    continue;
                }
                (Some(i), None) if i > parent && leading > i => {
                    return self.fail(
                        "a block scalar's leading blank line is more indented than its text",
                    );
                }
                (Some(i), None) if i > parent => *indent.insert(i),
                (Some(_), None) => break,
                (Some(_), Some(want)) => want,
            };
            if spaces < want {
                break;
            }
            lines.push(&self.s[self.pos + want as usize..line_end]);
            self.pos = (line_end + 1).min(self.b.len());
        }
        let trailing = lines.iter().rev().take_while(|l| l.is_empty()).count();
        let body = &lines[..lines.len() - trailing];
        let mut out = String::new();
        let mut blank = 0;
        let mut prev_more = true;
        let mut started = false;
        for line in body {
            if line.is_empty() {
                blank += 1;
                continue;
            }
            let more = line.starts_with([' ', '\t']);
            if std::mem::replace(&mut started, true) {
                if !folded || prev_more || more {
                    out.extend(std::iter::repeat_n('\n', blank + 1));
                } else {
                    fold(&mut out, blank);
                }
            } else {
                out.extend(std::iter::repeat_n('\n', blank));
            }
            out.push_str(line);
            (blank, prev_more) = (0, more);
        }
        match chomp {
            b'-' => {}
            b'+' => out.extend(std::iter::repeat_n(
                '\n',
                trailing + usize::from(!body.is_empty()),
            )),
            _ if !body.is_empty() => out.push('\n'),
            _ => {}
        }
        Ok(Value::String(out))
    }
}
