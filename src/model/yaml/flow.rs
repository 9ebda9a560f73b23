//! Flow collections, `[a, b]` and `{k: v}`, nested and over several lines, as
//! hand-written kubeconfigs and manifests use them (`args: ["-c", "sleep 1"]`).
//! Entries are flow nodes: collections, quoted or plain scalars (ended by `,[]{}`).

use super::plain::resolve_plain;
use super::{Parser, Result};
use serde_json::{Map, Value};

impl Parser<'_> {
    /// A flow node (`[...]`, `{...}`, a quoted or plain scalar) at `pos`.
    pub(super) fn flow_node(&mut self) -> Result<Value> {
        self.refuse_indicator()?;
        match self.peek() {
            Some(b'[') => self.flow_sequence(),
            Some(b'{') => self.flow_mapping(),
            Some(b'"' | b'\'') => self.quoted(),
            _ => {
                self.count_node()?;
                let start = self.pos;
                let (end, _) = self.plain_end(start, true);
                let text = self.s[start..end].trim_end();
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
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n') => self.pos += 1,
                Some(b'#') => self.next_line(),
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
                _ => self.s[key_at..self.pos].trim_end().to_string(),
            };
            if map.contains_key(&key) {
                return Err(self.error_at(key_at, format!("duplicate key {key:?}")));
            }
            self.skip_flow_space()?;
            let value = if self.peek() == Some(b':') {
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
