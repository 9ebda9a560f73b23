//! The scanner under the parser: positions and the line/column of errors, moving over
//! spaces, comments, line ends and document markers, the indentation of the next
//! content line (tabs refused there, as YAML requires), and the depth and node counts
//! that keep hostile input bounded ([`super::Limits`]). It reads bytes; every
//! position it leaves is at an ASCII byte or a line start, so slicing stays valid.

use super::{Indent, Parser, Result, YamlError};

impl Parser<'_> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    pub(super) fn byte(&self, at: usize) -> Option<u8> {
        self.b.get(at).copied()
    }

    fn line_start(&self, at: usize) -> usize {
        self.b[..at]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1)
    }

    pub(super) fn column(&self, at: usize) -> Indent {
        (at - self.line_start(at)) as Indent
    }

    pub(super) fn error_at(&self, at: usize, message: impl Into<String>) -> YamlError {
        let at = at.min(self.b.len());
        let start = self.line_start(at);
        YamlError {
            line: self.b[..at].iter().filter(|&&c| c == b'\n').count() + 1,
            column: String::from_utf8_lossy(&self.b[start..at]).chars().count() + 1,
            message: message.into(),
        }
    }

    pub(super) fn fail<T>(&self, message: impl Into<String>) -> Result<T> {
        Err(self.error_at(self.pos, message))
    }

    /// Whether `at` ends a line (newline or end of input).
    fn eol_at(&self, at: usize) -> bool {
        matches!(self.byte(at), None | Some(b'\n'))
    }

    /// Whether `at` is followed by whitespace or the end of the line.
    pub(super) fn blank_at(&self, at: usize) -> bool {
        matches!(self.byte(at), None | Some(b'\n' | b' ' | b'\t'))
    }

    pub(super) fn skip_inline_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// Moves to the start of the next line (or the end of input).
    pub(super) fn next_line(&mut self) {
        match self.b[self.pos..].iter().position(|&c| c == b'\n') {
            Some(i) => self.pos += i + 1,
            None => self.pos = self.b.len(),
        }
    }

    /// After a node on this line: only spaces and a comment may follow.
    pub(super) fn end_line(&mut self) -> Result<()> {
        let value_end = self.pos;
        self.skip_inline_space();
        match self.peek() {
            Some(b'#') if self.pos == value_end => {
                self.fail("a comment (#) must be separated from the value by a space")
            }
            None | Some(b'\n' | b'#') => {
                self.next_line();
                Ok(())
            }
            _ => self.fail("unexpected text after the value"),
        }
    }

    pub(super) fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return self.fail(format!(
                "nested deeper than {} levels",
                self.limits.max_depth
            ));
        }
        Ok(())
    }

    pub(super) fn count_node(&mut self) -> Result<()> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return self.fail(format!("more than {} values", self.limits.max_nodes));
        }
        Ok(())
    }

    /// Whether the line at `at` (a line start) is a document marker (`---`, `...`).
    pub(super) fn marker_at(&self, at: usize) -> Option<u8> {
        let m = self.b.get(at..at + 3)?;
        (m == b"---" || m == b"...")
            .then_some(m[0])
            .filter(|_| self.blank_at(at + 3))
    }

    /// From a line start, skips blank and comment lines. Returns the indentation of the
    /// next content line (leaving `pos` at its start), or `None` at the end of input or
    /// at a document marker.
    pub(super) fn next_content_line(&mut self) -> Result<Option<Indent>> {
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

    /// For a continuation line at `pos` (a line start): `Some(None)` if blank,
    /// `Some(Some(indent))` if it has content, `None` at the end or a document marker.
    pub(super) fn continuation_indent(&self) -> Option<Option<Indent>> {
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

    /// Refuses a document marker (`---`, `...`) at `pos` inside a value that goes on.
    pub(super) fn refuse_marker(&self) -> Result<()> {
        if self.column(self.pos) == 0 && self.marker_at(self.pos).is_some() {
            return self.fail("a document marker (--- or ...) inside a value");
        }
        Ok(())
    }

    /// Refuses anchors, aliases and tags where a node starts.
    pub(super) fn refuse_indicator(&self) -> Result<()> {
        match self.peek() {
            Some(b'&') => self.fail("anchors (&) are not supported"),
            Some(b'*') => self.fail("aliases (*) are not supported"),
            Some(b'!') => self.fail("tags (!) are not supported"),
            Some(b'-' | b'?') if self.blank_at(self.pos + 1) => {
                self.fail("a block entry (\"- \", \"? \") is not allowed here")
            }
            Some(c @ (b'@' | b'`' | b']' | b'}' | b',' | b'%')) => self.fail(format!(
                "a plain value cannot start with {:?} (quote the value)",
                char::from(c)
            )),
            _ => Ok(()),
        }
    }
}
