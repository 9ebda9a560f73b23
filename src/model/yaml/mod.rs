//! A compact YAML reader for what people and Kubernetes tools write, into
//! `serde_json::Value`, so YAML goes through the same serde code as JSON.
//!
//! Covered: block mappings and sequences (including a sequence at its key's indentation,
//! as kubectl writes `containers:`), flow collections (`{a: b}`, `[x, y]`, over several
//! lines too), plain, single- and double-quoted scalars (multi-line, escapes), literal
//! and folded block scalars (`|`, `>-`, `|+2`), comments, several documents (`---`,
//! `...`). Plain scalars are resolved as kubectl does (go-yaml v2, YAML 1.1): `null`,
//! `~`, booleans including `yes`/`no`/`on`/`off`, integers (`0644` is octal, `0x1f`),
//! floats; anything else is a string.
//!
//! Refused, with the line and column: anchors, aliases and tags (no alias bombs, no
//! type tricks), complex keys (`? `), directives (`%YAML`), duplicate keys, tabs in
//! indentation, `.inf`/`.nan` (JSON cannot hold them). Input size, nesting depth and the
//! number of nodes are bounded ([`Limits`]), and the reader never recurses deeper than
//! `max_depth`, so hostile input costs bounded memory and time (one pass per line).
//!
//! Why not a crate: the YAML crates either are unmaintained, or carry a full YAML 1.2
//! event parser with anchors that would then be filtered out again; this file covers
//! kubeconfigs and manifests for a fraction of the flash.

use serde_json::{Map, Number, Value};
use std::fmt;

/// Bounds on one input.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest input in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of mappings and sequences.
    pub max_depth: usize,
    /// Most values (scalars, mappings, sequences) in the whole input.
    pub max_nodes: usize,
}

/// Bounds for manifests and kubeconfigs: 1 MiB (the manifest limit), 64 levels (a Pod
/// nests about 12), 100,000 values.
pub const LIMITS: Limits = Limits {
    max_bytes: 1 << 20,
    max_depth: 64,
    max_nodes: 100_000,
};

/// Why a document was refused, and where (1-based line and column, in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for YamlError {}

/// Reads every document of a stream. Documents that hold nothing (only comments, or a
/// bare `---`) are left out, as kubectl does.
pub fn parse_documents(text: &str, limits: &Limits) -> Result<Vec<Value>, YamlError> {
    if text.len() > limits.max_bytes {
        return Err(YamlError {
            line: 1,
            column: 1,
            message: format!(
                "input is {} bytes, more than the {} byte limit",
                text.len(),
                limits.max_bytes
            ),
        });
    }
    let normalized;
    let mut text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\r') {
        normalized = text.replace("\r\n", "\n");
        text = &normalized;
    }
    Parser {
        s: text,
        b: text.as_bytes(),
        pos: 0,
        depth: 0,
        nodes: 0,
        limits,
    }
    .stream()
}

/// Reads a stream that must hold at most one document (`Null` when it holds none).
pub fn parse_document(text: &str, limits: &Limits) -> Result<Value, YamlError> {
    let mut docs = parse_documents(text, limits)?;
    if docs.len() > 1 {
        return Err(YamlError {
            line: 1,
            column: 1,
            message: format!("expected one document, found {}", docs.len()),
        });
    }
    Ok(docs.pop().unwrap_or(Value::Null))
}

type Result<T, E = YamlError> = std::result::Result<T, E>;

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    /// Byte offset; always at an ASCII byte or a line start, so slices are valid.
    pos: usize,
    depth: usize,
    nodes: usize,
    limits: &'a Limits,
}

/// A YAML indentation; -1 is "outside any node".
type Indent = isize;

impl<'a> Parser<'a> {
    // ---- positions and errors ----

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.b.get(at).copied()
    }

    fn line_start(&self, at: usize) -> usize {
        self.b[..at]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1)
    }

    fn column(&self, at: usize) -> Indent {
        (at - self.line_start(at)) as Indent
    }

    fn error_at(&self, at: usize, message: impl Into<String>) -> YamlError {
        let at = at.min(self.b.len());
        let start = self.line_start(at);
        YamlError {
            line: self.b[..at].iter().filter(|&&c| c == b'\n').count() + 1,
            column: String::from_utf8_lossy(&self.b[start..at]).chars().count() + 1,
            message: message.into(),
        }
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T> {
        Err(self.error_at(self.pos, message))
    }

    /// Whether `at` ends a line (newline or end of input).
    fn eol_at(&self, at: usize) -> bool {
        matches!(self.byte(at), None | Some(b'\n'))
    }

    /// Whether `at` is followed by whitespace or the end of the line.
    fn blank_at(&self, at: usize) -> bool {
        matches!(self.byte(at), None | Some(b'\n' | b' ' | b'\t'))
    }

    fn skip_inline_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// Moves to the start of the next line (or the end of input).
    fn next_line(&mut self) {
        match self.b[self.pos..].iter().position(|&c| c == b'\n') {
            Some(i) => self.pos += i + 1,
            None => self.pos = self.b.len(),
        }
    }

    /// After a node on this line: only spaces and a comment may follow.
    fn end_line(&mut self) -> Result<()> {
        self.skip_inline_space();
        match self.peek() {
            None | Some(b'\n' | b'#') => {
                self.next_line();
                Ok(())
            }
            _ => self.fail("unexpected text after the value"),
        }
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return self.fail(format!(
                "nested deeper than {} levels",
                self.limits.max_depth
            ));
        }
        Ok(())
    }

    fn count_node(&mut self) -> Result<()> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return self.fail(format!("more than {} values", self.limits.max_nodes));
        }
        Ok(())
    }

    /// Whether the line at `at` (a line start) is a document marker (`---`, `...`).
    fn marker_at(&self, at: usize) -> Option<u8> {
        let m = self.b.get(at..at + 3)?;
        (m == b"---" || m == b"...")
            .then_some(m[0])
            .filter(|_| self.blank_at(at + 3))
    }

    /// From a line start, skips blank and comment lines. Returns the indentation of the
    /// next content line (leaving `pos` at its start), or `None` at the end of input or
    /// at a document marker.
    fn next_content_line(&mut self) -> Result<Option<Indent>> {
        loop {
            if self.pos >= self.b.len() || self.marker_at(self.pos).is_some() {
                return Ok(None);
            }
            let start = self.pos;
            let mut at = start;
            while self.byte(at) == Some(b' ') {
                at += 1;
            }
            let mut content = at;
            while matches!(self.byte(content), Some(b' ' | b'\t')) {
                content += 1;
            }
            match self.byte(content) {
                None | Some(b'\n' | b'#') => self.next_line(),
                Some(_) if content != at => {
                    return Err(self.error_at(at, "tab in indentation (use spaces)"))
                }
                Some(_) => return Ok(Some((at - start) as Indent)),
            }
        }
    }

    // ---- documents ----

    fn stream(&mut self) -> Result<Vec<Value>> {
        let mut docs = Vec::new();
        loop {
            let content = self.next_content_line()?;
            if content.is_none() && self.pos >= self.b.len() {
                return Ok(docs);
            }
            if content.is_some() && self.peek() == Some(b'%') {
                return self.fail("directives (%YAML, %TAG) are not supported");
            }
            let value = match self.marker_at(self.pos) {
                Some(b'.') => {
                    self.next_line();
                    continue;
                }
                Some(_) => {
                    self.pos += 3;
                    self.skip_inline_space();
                    if matches!(self.peek(), None | Some(b'\n' | b'#')) {
                        self.next_line();
                        self.block(-1)?
                    } else {
                        self.inline_node(-1)?
                    }
                }
                None => self.block(-1)?,
            };
            if self.next_content_line()?.is_some() {
                return self.fail("unexpected text at this indentation");
            }
            if !value.is_null() {
                docs.push(value);
            }
        }
    }

    // ---- block nodes ----

    /// The node on the following lines, more indented than `parent`; `Null` if none.
    /// Starts and ends at a line start.
    fn block(&mut self, parent: Indent) -> Result<Value> {
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
        self.skip_inline_space();
        if matches!(self.peek(), None | Some(b'\n' | b'#')) {
            self.next_line();
            return self.block(indent);
        }
        let column = self.column(self.pos);
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
                let key = self.s[self.pos..end].trim_end().to_string();
                self.pos = end;
                key
            }
        };
        self.skip_inline_space();
        self.pos += 1; // the ':' is_key_line found
        Ok(key)
    }

    /// Refuses anchors, aliases and tags where a node starts.
    fn refuse_indicator(&self) -> Result<()> {
        match self.peek() {
            Some(b'&') => self.fail("anchors (&) are not supported"),
            Some(b'*') => self.fail("aliases (*) are not supported"),
            Some(b'!') => self.fail("tags (!) are not supported"),
            Some(b'@' | b'`') => self.fail("a plain value cannot start with @ or `"),
            _ => Ok(()),
        }
    }

    // ---- nodes that start on the current line ----

    /// A scalar, flow collection or block scalar at `pos`, inside a block at `parent`.
    /// Ends at the start of the following line.
    fn inline_node(&mut self, parent: Indent) -> Result<Value> {
        self.refuse_indicator()?;
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

    /// Where a plain scalar starting at `from` ends on its line, and whether it ended at
    /// a `: ` (a mapping key). In flow context `,[]{}` end it too.
    fn plain_end(&self, from: usize, flow: bool) -> (usize, bool) {
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
    fn plain_block(&mut self, parent: Indent) -> Result<Value> {
        self.count_node()?;
        let (end, key) = self.plain_end(self.pos, false);
        if key {
            self.pos = end;
            return self.fail("a mapping is not allowed here (\": \" inside a value; quote it)");
        }
        let (start, first) = (self.pos, self.s[self.pos..end].trim_end());
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
            if indent <= parent || self.byte(self.pos + indent as usize) == Some(b'#') {
                self.pos = resume;
                break;
            }
            self.pos += indent as usize;
            let (end, key) = self.plain_end(self.pos, false);
            if key {
                self.pos = end;
                return self
                    .fail("a mapping is not allowed here (\": \" inside a value; quote it)");
            }
            let t = text.get_or_insert_with(|| first.to_string());
            fold(t, blank_lines);
            t.push_str(self.s[self.pos..end].trim());
            self.pos = end;
            comment = self.peek() == Some(b'#');
            self.next_line();
        }
        Ok(match text {
            Some(t) => Value::String(t),
            None => resolve_plain(first).map_err(|m| self.error_at(start, m))?,
        })
    }

    /// For a continuation line at `pos` (a line start): `Some(None)` if blank,
    /// `Some(Some(indent))` if it has content, `None` at the end or a document marker.
    fn continuation_indent(&self) -> Option<Option<Indent>> {
        if self.pos >= self.b.len() || self.marker_at(self.pos).is_some() {
            return None;
        }
        let mut at = self.pos;
        while matches!(self.byte(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        if self.eol_at(at) {
            return Some(None);
        }
        let spaces = self.b[self.pos..at].iter().take_while(|&&c| c == b' ');
        Some(Some(spaces.count() as Indent))
    }

    /// A literal (`|`) or folded (`>`) block scalar; `pos` at the indicator.
    fn block_scalar(&mut self, parent: Indent, folded: bool) -> Result<Value> {
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
        while let Some(state) = self.continuation_indent() {
            let line_end = self.b[self.pos..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(self.b.len(), |i| self.pos + i);
            let want = match (state, indent) {
                (None, _) => {
                    lines.push("");
                    self.pos = (line_end + 1).min(self.b.len());
                    continue;
                }
                (Some(i), None) if i > parent => *indent.insert(i),
                (Some(_), None) => break,
                (Some(_), Some(want)) => want,
            };
            let spaces = self.b[self.pos..line_end]
                .iter()
                .take_while(|&&c| c == b' ')
                .count() as Indent;
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
        for (i, line) in body.iter().enumerate() {
            if line.is_empty() {
                blank += 1;
                continue;
            }
            let more = line.starts_with([' ', '\t']);
            if i > 0 {
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

    // ---- quoted scalars ----

    /// A single- or double-quoted scalar at `pos`, possibly over several lines.
    fn quoted(&mut self) -> Result<Value> {
        self.count_node()?;
        let open = self.pos;
        let q = self.b[open];
        self.pos += 1;
        let mut out = String::new();
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
                b'\\' if q == b'"' => self.escape(&mut out)?,
                b'\n' => {
                    let kept = out.trim_end_matches([' ', '\t']).len();
                    out.truncate(kept);
                    self.fold_break(&mut out);
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
                // An escaped line break joins the lines without a space.
                self.skip_inline_space();
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

    // ---- flow collections ----

    /// A flow node (`[...]`, `{...}`, a quoted or plain scalar) at `pos`.
    fn flow_node(&mut self) -> Result<Value> {
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

/// Joins folded lines: a single line break is a space, `blank` blank lines are newlines.
fn fold(out: &mut String, blank: usize) {
    if blank == 0 {
        out.push(' ');
    } else {
        out.extend(std::iter::repeat_n('\n', blank));
    }
}

/// The value of a plain scalar, as go-yaml v2 (kubectl) resolves it.
fn resolve_plain(text: &str) -> Result<Value, String> {
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
            Some(Err(())) => {
                return Err(format!(
                    "{text:?} is not a finite number (JSON cannot hold it; quote it for a string)"
                ))
            }
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

#[cfg(test)]
mod tests;
