//! Block structure, the way indentation nests nodes: sequences (`- x`, also at their
//! key's indentation as kubectl writes them), mappings (`key: value`, duplicate keys
//! refused), and the dispatch of a value on its key's line to a flow collection, a
//! quoted, plain or block scalar. Every method starts and ends at a line start, and the
//! depth of nesting is counted rather than left to the call stack's size.

use super::{Indent, Parser, Result, YAML_BLANK};
use serde_json::{Map, Value};

impl Parser<'_> {
    /// The node on the following lines, more indented than `parent`; `Null` if none.
    /// Starts and ends at a line start.
    pub(super) fn block(&mut self, parent: Indent) -> Result<Value> {
        match self.next_content_line()? {
            Some(indent) if indent > parent => {
                self.pos += indent as usize;
                self.block_here(parent, indent)
            }
            _ => Ok(Value::Null),
        }
    }

    /// The node starting at `pos`, at column `indent`, inside `parent`.
    fn block_here(&mut self, parent: Indent, indent: Indent) -> Result<Value> {
        if self.is_dash() {
            self.sequence(indent)
        } else if self.is_key_line()? {
            self.mapping(indent)
        } else {
            self.inline_node(parent)
        }
    }

    /// `pos` is at a block sequence entry's `-`.
    fn is_dash(&self) -> bool {
        self.peek() == Some(b'-') && self.blank_at(self.pos + 1)
    }

    /// A block sequence at `indent`, `pos` at its first `-`.
    fn sequence(&mut self, indent: Indent) -> Result<Value> {
        self.enter()?;
        self.count_node()?;
        let mut items = Vec::new();
        loop {
            self.pos += 1; // the '-'
            items.push(self.entry_value(indent)?);
            match self.next_content_line()? {
                Some(i) if i == indent => {
                    let start = self.pos;
                    self.pos += i as usize;
                    if !self.is_dash() {
                        self.pos = start;
                        break;
                    }
                }
                Some(i) if i > indent => {
                    self.pos += i as usize;
                    return self.fail("bad indentation: expected a sequence entry (\"- \")");
                }
                _ => break,
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    /// The value after a sequence entry's `-` (entry at column `indent`).
    fn entry_value(&mut self, indent: Indent) -> Result<Value> {
        let after_dash = self.pos;
        self.skip_inline_space();
        if matches!(self.peek(), None | Some(b'\n' | b'#')) {
            self.next_line();
            return self.block(indent);
        }
        let column = self.column(self.pos);
        // A block nested on the entry's line is indented by what precedes it: spaces.
        let tabbed = self.b[after_dash..self.pos].contains(&b'\t');
        if tabbed && (self.is_dash() || self.is_key_line()?) {
            return self.fail("a tab in indentation (use spaces)");
        }
        self.block_here(indent, column)
    }

    /// A block mapping at `indent`, `pos` at its first key.
    fn mapping(&mut self, indent: Indent) -> Result<Value> {
        self.enter()?;
        self.count_node()?;
        let mut map = Map::new();
        loop {
            let key_at = self.pos;
            self.count_node()?;
            let key = self.key()?;
            if map.contains_key(&key) {
                return Err(self.error_at(key_at, format!("duplicate key {key:?}")));
            }
            let value = self.key_value(indent)?;
            map.insert(key, value);
            match self.next_content_line()? {
                Some(i) if i == indent => self.pos += i as usize,
                Some(i) if i > indent => {
                    self.pos += i as usize;
                    return self.fail("bad indentation: expected a key at the mapping's column");
                }
                _ => break,
            }
            if self.is_dash() {
                return self.fail("a sequence entry where a mapping key was expected");
            }
            if !self.is_key_line()? {
                return self.fail("expected a mapping key (\"key: value\")");
            }
        }
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    /// The value after `key:` of a mapping at `indent`.
    fn key_value(&mut self, indent: Indent) -> Result<Value> {
        self.skip_inline_space();
        if !matches!(self.peek(), None | Some(b'\n' | b'#')) {
            return self.inline_node(indent);
        }
        self.next_line();
        match self.next_content_line()? {
            Some(i) if i > indent => {
                self.pos += i as usize;
                self.block_here(indent, i)
            }
            Some(i) if i == indent => {
                // A sequence may sit at its key's indentation (kubectl writes it so).
                let start = self.pos;
                self.pos += i as usize;
                if self.is_dash() {
                    return self.sequence(indent);
                }
                self.pos = start;
                Ok(Value::Null)
            }
            _ => Ok(Value::Null),
        }
    }

    /// Whether the line from `pos` is `key: ...` (a plain or quoted key, then `:` and
    /// a space or the line's end).
    fn is_key_line(&mut self) -> Result<bool> {
        let start = self.pos;
        let end = match self.peek() {
            Some(b'?') if self.blank_at(self.pos + 1) => {
                return self.fail("complex keys (\"? \") are not supported")
            }
            // Flow collections and block scalars are values here, never keys.
            Some(b'[' | b'{' | b'|' | b'>') => return Ok(false),
            Some(q @ (b'"' | b'\'')) => {
                let found = self.scan_quoted_line(q);
                self.pos = start;
                match found {
                    Some(at) => at,
                    None => return Ok(false),
                }
            }
            _ => match self.plain_end(start, false) {
                (at, true) => at,
                _ => return Ok(false),
            },
        };
        let mut at = end;
        while matches!(self.byte(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        Ok(self.byte(at) == Some(b':') && self.blank_at(at + 1))
    }

    /// The end of a quoted scalar that closes on this line, if it does.
    fn scan_quoted_line(&mut self, q: u8) -> Option<usize> {
        let mut at = self.pos + 1;
        loop {
            match self.byte(at)? {
                b'\n' => return None,
                b'\\' if q == b'"' => at += 2,
                c if c == q => {
                    if q == b'\'' && self.byte(at + 1) == Some(b'\'') {
                        at += 2;
                    } else {
                        return Some(at + 1);
                    }
                }
                _ => at += 1,
            }
        }
    }

    /// A mapping key at `pos`; leaves `pos` after its `:`.
    fn key(&mut self) -> Result<String> {
        let key = match self.peek() {
            Some(b'"' | b'\'') => {
                let at = self.pos;
                match self.quoted()? {
                    Value::String(s) => s,
                    _ => return Err(self.error_at(at, "bad key")),
                }
            }
            _ => {
                self.refuse_indicator()?;
                let (end, _) = self.plain_end(self.pos, false);
                let key = self.s[self.pos..end]
                    .trim_end_matches(YAML_BLANK)
                    .to_string();
                self.pos = end;
                key
            }
        };
        self.skip_inline_space();
        self.pos += 1; // the ':' is_key_line found
        Ok(key)
    }

    /// A scalar, flow collection or block scalar at `pos`, inside a block at `parent`.
    /// Ends at the start of the following line.
    pub(super) fn inline_node(&mut self, parent: Indent) -> Result<Value> {
        self.refuse_indicator()?;
        self.flow_floor = parent.max(0);
        match self.peek() {
            Some(b'[' | b'{') => {
                let v = self.flow_node()?;
                self.end_line()?;
                Ok(v)
            }
            Some(b'"' | b'\'') => {
                let v = self.quoted()?;
                self.end_line()?;
                Ok(v)
            }
            Some(style @ (b'|' | b'>')) => self.block_scalar(parent, style == b'>'),
            _ => self.plain_block(parent),
        }
    }
}
