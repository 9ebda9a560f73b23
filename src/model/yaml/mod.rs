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
//! indentation, `.inf`/`.nan` (JSON cannot hold them), control characters (NUL, a bare
//! CR, ...: not YAML). Input size, nesting depth and the
//! number of nodes are bounded ([`Limits`]), and the reader never recurses deeper than
//! `max_depth`, so hostile input costs bounded memory and time (one pass per line).
//!
//! Why not a crate: the YAML crates either are unmaintained, or carry a full YAML 1.2
//! event parser with anchors that would then be filtered out again; this module covers
//! kubeconfigs and manifests for a fraction of the flash.
//!
//! One `Parser` over the text, its methods split by what they read: `scanner`
//! (positions, lines, indentation, bounds), `block` (indentation-nested sequences and
//! mappings), `plain`, `quoted` and `block_scalar` (the three scalar styles), `flow`
//! (`[...]` and `{...}`). This file holds the entry points and the document stream.

use serde_json::Value;
use std::fmt;

mod block;
mod block_scalar;
mod emit;
mod flow;
mod plain;
mod quoted;
mod scanner;

pub use emit::to_yaml;

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
    /// The line of the error (from 1).
    pub line: usize,
    /// The column of the error (from 1).
    pub column: usize,
    /// What is wrong.
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
    let mut parser = Parser {
        s: text,
        b: text.as_bytes(),
        pos: 0,
        depth: 0,
        nodes: 0,
        limits,
        flow_floor: 0,
    };
    let unprintable = text.char_indices().find(|&(_, c)| !printable(c));
    if let Some((at, c)) = unprintable {
        return Err(parser.error_at(at, format!("the character {c:?} is not allowed in YAML")));
    }
    parser.stream()
}

/// YAML's printable characters (`c-printable`, as go-yaml checks them too): no control
/// characters but tab and line breaks; a CR only inside a CR LF, which reading turned
/// into an LF already.
fn printable(c: char) -> bool {
    match c {
        '\t' | '\n' | '\u{85}' => true,
        '\0'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}' => false,
        _ => true,
    }
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

/// The value of a plain scalar's text as this reader resolves it (go-yaml v2's rules);
/// `None` for what it refuses (infinities, NaN). Public for the differential fuzz
/// target, which compares this reader with a YAML 1.2 parser scalar by scalar.
pub fn resolve_plain_scalar(text: &str) -> Option<Value> {
    plain::resolve_plain(text).ok()
}

type Result<T, E = YamlError> = std::result::Result<T, E>;

/// The reader's state over one input; its methods are spread over this module's files.
struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    /// Byte offset; always at an ASCII byte or a line start, so slices are valid.
    pos: usize,
    depth: usize,
    nodes: usize,
    limits: &'a Limits,
    /// The least column a later line of a flow collection or quoted value may start
    /// at: the enclosing block's (YAML parsers refuse less, as saphyr does).
    flow_floor: Indent,
}

/// YAML's white space inside a line: space and tab only (Unicode spaces are text).
const YAML_BLANK: [char; 2] = [' ', '\t'];

/// A YAML indentation; -1 is "outside any node".
type Indent = isize;

impl Parser<'_> {
    /// Every document up to the end of input: `---` starts one (its node may follow on
    /// the same line), `...` ends one, empty ones are dropped.
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
                    self.pos += 3;
                    self.skip_inline_space();
                    if !matches!(self.peek(), None | Some(b'\n' | b'#')) {
                        return self.fail("content after the document end marker (...)");
                    }
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
}

/// Joins folded lines: a single line break is a space, `blank` blank lines are newlines.
fn fold(out: &mut String, blank: usize) {
    if blank == 0 {
        out.push(' ');
    } else {
        out.extend(std::iter::repeat_n('\n', blank));
    }
}

#[cfg(test)]
mod tests;
