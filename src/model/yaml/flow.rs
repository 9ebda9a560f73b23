//! Flow collections, `[a, b]` and `{k: v}`, nested and over several lines, as
//! hand-written kubeconfigs and manifests use them (`args: ["-c", "sleep 1"]`).
//! Entries are flow nodes: collections, quoted or plain scalars (ended by `,[]{}`).

use super::plain::resolve_plain;
use super::{Indent, Parser, Result, YAML_BLANK};
use serde_json::{Map, Value};

impl Parser<'_> {
    /// A flow node (`[...]`, `{...}`, a quoted or plain scalar) at `pos`.
    pub(super) fn flow_node(&mut self) -> Result<Value> {
        self.refuse_indicator()?;
        let lone = matches!(
            self.byte(self.pos + 1),
            Some(b',' | b'[' | b']' | b'{' | b'}')
        );
        if matches!(self.peek(), Some(b'-' | b'?' | b':')) && lone {
            return self.fail("a lone -, ? or : is not a value (quote it)");
        }
        match self.peek() {
            Some(b'[') => self.flow_sequence(),
            Some(b'{') => self.flow_mapping(),
            Some(b'"' | b'\'') => self.quoted(),
            _ => {
                self.count_node()?;
                let start = self.pos;
                let (end, _) = self.plain_end(start, true);
                let text = self.s[start..end].trim_end_matches(YAML_BLANK);
                if text.is_empty() {
                    return self.fail("expected a value");
                }
                self.pos = end;
                resolve_plain(text).map_err(|m| self.error_at(start, m))
            }
        }
    }

    /// Skips spaces, line breaks and comments inside a flow collection.
    fn skip_flow_space(&mut self) -> Result<()> {
        let mut later_line = false;
        loop {
            match self.peek() {
                Some(b' ' | b'\t') => self.pos += 1,
                Some(b'\n') => {
                    self.pos += 1;
                    later_line = true;
                }
                Some(b'#') => {
                    self.next_line();
                    later_line = true;
                }
                Some(c) if later_line => {
                    self.refuse_marker()?;
                    // Not left of the block it belongs to; a plain scalar right of it.
                    let plain = !b"[]{},\"'".contains(&c);
                    let floor = self.flow_floor + Indent::from(plain);
                    if self.column(self.pos) < floor {
                        return self
                            .fail("a flow collection's line is less indented than its block");
                    }
                    return Ok(());
                }
                Some(_) => return Ok(()),
                None => return self.fail("flow collection ([...] or {...}) is never closed"),
            }
        }
    }

    fn flow_sequence(&mut self) -> Result<Value> {
        self.enter()?;
        self.count_node()?;
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_flow_space()?;
            if self.peek() == Some(b']') {
                break;
            }
            items.push(self.flow_node()?);
            self.skip_flow_space()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => break,
                _ => return self.fail("expected \",\" or \"]\""),
            }
        }
        self.pos += 1;
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn flow_mapping(&mut self) -> Result<Value> {
        self.enter()?;
        self.count_node()?;
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.skip_flow_space()?;
            if self.peek() == Some(b'}') {
                break;
            }
            let key_at = self.pos;
            let key = match self.flow_node()? {
                Value::String(s) => s,
                Value::Array(_) | Value::Object(_) => {
                    return Err(self.error_at(key_at, "a key must be a scalar"))
                }
                _ => self.s[key_at..self.pos]
                    .trim_end_matches(YAML_BLANK)
                    .to_string(),
            };
            if map.contains_key(&key) {
                return Err(self.error_at(key_at, format!("duplicate key {key:?}")));
            }
            self.skip_flow_space()?;
            let value = if self.peek() == Some(b':') {
                // Only after a quoted key may a value touch the ':' (`{"a":b}`).
                let quoted = matches!(self.b[key_at], b'"' | b'\'');
                let apart = self.blank_at(self.pos + 1)
                    || matches!(self.byte(self.pos + 1), Some(b',' | b'}' | b']'));
                if !quoted && !apart {
                    return self.fail("\":\" after a key must be followed by a space");
                }
                self.pos += 1;
                self.skip_flow_space()?;
                match self.peek() {
                    Some(b',' | b'}') => Value::Null,
                    _ => self.flow_node()?,
                }
            } else {
                Value::Null
            };
            map.insert(key, value);
            self.skip_flow_space()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => break,
                _ => return self.fail("expected \",\" or \"}\""),
            }
        }
        self.pos += 1;
        self.depth -= 1;
        Ok(Value::Object(map))
    }
}
