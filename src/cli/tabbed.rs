//! Text in aligned columns the way `kubectl describe` writes it (Go's tabwriter with
//! padding 2): a line's cells are separated by tabs, and the cells of one column are as
//! wide as the widest of their block (the consecutive lines that have a cell in that
//! column; a line without one ends the block), plus two spaces. The last cell of a line
//! is not aligned.

/// Padding after an aligned cell.
const PADDING: usize = 2;

/// Lines of tab-separated cells, laid out by [`Tabbed::render`].
#[derive(Debug, Default)]
pub struct Tabbed {
    lines: Vec<Vec<String>>,
}

impl Tabbed {
    /// Adds `text` (cells separated by tabs) at indentation `level` (two spaces each).
    pub fn line(&mut self, level: usize, text: &str) {
        let mut cells: Vec<String> = text.split('\t').map(String::from).collect();
        if let Some(first) = cells.first_mut() {
            first.insert_str(0, &"  ".repeat(level));
        }
        self.lines.push(cells);
    }

    /// Adds `key:` and `value` as two cells at indentation `level`.
    pub fn field(&mut self, level: usize, key: &str, value: &str) {
        let mut cell = "  ".repeat(level);
        cell.push_str(key);
        cell.push(':');
        self.lines.push(vec![cell, value.to_string()]);
    }

    /// Adds the heading `title:` of a list, or `title: <none>` when it is `empty`;
    /// true when the list's lines are to follow.
    pub fn heading(&mut self, level: usize, title: &str, empty: bool) -> bool {
        match empty {
            true => self.field(level, title, "<none>"),
            false => self.line(level, &format!("{title}:")),
        }
        !empty
    }

    /// The text, each line ending in `\n`, without trailing spaces.
    pub fn render(&self) -> String {
        let mut widths = vec![Vec::new(); self.lines.len()];
        self.widths(0, 0, self.lines.len(), &mut widths);
        let mut out = String::new();
        for (cells, widths) in self.lines.iter().zip(&widths) {
            let mut line = String::new();
            for (i, cell) in cells.iter().enumerate() {
                line.push_str(cell);
                if let Some(w) = widths.get(i).filter(|_| i + 1 < cells.len()) {
                    let pad = w.saturating_sub(cell.chars().count());
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// Sets the width of column `col` for each block of lines `from..to` having that
    /// column, then of the next column within each block.
    fn widths(&self, col: usize, from: usize, to: usize, widths: &mut [Vec<usize>]) {
        let has = |i: usize| self.lines[i].len() > col + 1;
        let mut i = from;
        while i < to {
            if !has(i) {
                i += 1;
                continue;
            }
            let start = i;
            while i < to && has(i) {
                i += 1;
            }
            let block = &self.lines[start..i];
            let w = block.iter().map(|l| l[col].chars().count()).max();
            for line in &mut widths[start..i] {
                line.push(w.unwrap_or(0) + PADDING);
            }
            self.widths(col + 1, start, i, widths);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_align_until_a_line_without_the_column() {
        let mut t = Tabbed::default();
        t.line(0, "Name:\tweb");
        t.line(0, "Namespace:\tdefault");
        t.line(0, "Containers:");
        t.line(1, "app:");
        t.line(2, "Image:\tbusybox");
        t.line(2, "State:\tRunning");
        t.line(3, "Started:\tnow");
        t.line(2, "Restart Count:\t0");
        t.line(0, "Events:");
        t.line(1, "Type\tReason\tMessage");
        t.line(1, "Warning\tFailed\tno such host");
        assert_eq!(
            t.render(),
            "Name:       web\nNamespace:  default\nContainers:\n  app:\n    \
             Image:          busybox\n    State:          Running\n      \
             Started:      now\n    Restart Count:  0\nEvents:\n  \
             Type     Reason  Message\n  Warning  Failed  no such host\n"
        );
    }
}
