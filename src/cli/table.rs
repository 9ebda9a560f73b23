//! Plain-text tables for CLI output: a header row and left-aligned columns separated by
//! three spaces, as kubectl and crictl print them. Widths count characters, not bytes.

/// Rows of cells under a header, rendered with [`Table::render`].
#[derive(Debug)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

const GAP: &str = "   ";

impl Table {
    /// A table with these column headers.
    pub fn new(header: &[&str]) -> Table {
        Table {
            rows: vec![header.iter().map(|h| h.to_string()).collect()],
        }
    }

    /// Adds a row; missing cells print empty, extra cells are kept.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The rows under the header.
    pub fn rows(&self) -> &[Vec<String>] {
        self.rows.get(1..).unwrap_or_default()
    }

    /// The table as lines ending in `\n`, without trailing spaces.
    pub fn render(&self) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; cols];
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str(GAP);
                }
                line.push_str(cell);
                let pad = widths.get(i).copied().unwrap_or(0) - cell.chars().count();
                line.extend(std::iter::repeat_n(' ', pad));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_to_the_widest_cell() {
        let mut t = Table::new(&["ID", "NAME"]);
        t.row(vec!["abc123".into(), "web".into()]);
        t.row(vec!["d".into(), "ünïcode".into()]);
        assert_eq!(
            t.render(),
            "ID       NAME\nabc123   web\nd        ünïcode\n"
        );
    }

    #[test]
    fn short_and_long_rows_do_not_panic() {
        let mut t = Table::new(&["A", "B"]);
        t.row(vec!["x".into()]);
        t.row(vec!["1".into(), "2".into(), "3".into()]);
        assert_eq!(t.render(), "A   B\nx\n1   2   3\n");
    }
}
