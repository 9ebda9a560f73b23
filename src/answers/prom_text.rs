//! The Prometheus text format 0.0.4, written by hand: metric families, samples with
//! escaped label values, seconds from nanoseconds in integer arithmetic, histograms.
//! Both endpoints' metrics are written with it (`/metrics`, `/metrics/resource`).

use crate::metrics::Histogram;
use std::fmt::Write;

/// The text format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The text being written.
pub struct Text(pub String);

impl Text {
    /// A metric family's HELP and TYPE lines.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = write!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
    }

    /// One sample of `name` with `labels`.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: u64) {
        self.series(name, labels);
        let _ = writeln!(self.0, " {value}");
    }

    /// A sample in seconds, from nanoseconds (integer formatting only).
    pub fn seconds(&mut self, name: &str, labels: &[(&str, &str)], nanos: u64) {
        self.series(name, labels);
        let (s, n) = (nanos / 1_000_000_000, nanos % 1_000_000_000);
        let _ = writeln!(self.0, " {s}.{n:09}");
    }

    /// `name{k="v",...}` with the values escaped.
    fn series(&mut self, name: &str, labels: &[(&str, &str)]) {
        self.0.push_str(name);
        for (i, (k, v)) in labels.iter().enumerate() {
            self.0.push(if i == 0 { '{' } else { ',' });
            let _ = write!(self.0, "{k}=\"");
            for c in v.chars() {
                match c {
                    '\\' => self.0.push_str("\\\\"),
                    '"' => self.0.push_str("\\\""),
                    '\n' => self.0.push_str("\\n"),
                    c => self.0.push(c),
                }
            }
            self.0.push('"');
        }
        if !labels.is_empty() {
            self.0.push('}');
        }
    }

    /// A histogram's buckets (cumulative), sum and count.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) {
        let bucket = format!("{name}_bucket");
        for (le, n) in h.cumulative().chain([("+Inf", h.count)]) {
            let mut with_le = labels.to_vec();
            with_le.push(("le", le));
            self.sample(&bucket, &with_le, n);
        }
        self.seconds(&format!("{name}_sum"), labels, h.sum_nanos);
        self.sample(&format!("{name}_count"), labels, h.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn samples_escape_label_values_and_histograms_are_cumulative() {
        let mut t = Text(String::new());
        t.sample("m", &[("a", "x\"y\\z\nw"), ("b", "c")], 15);
        t.seconds("s", &[], 1_500_000_000);
        assert_eq!(t.0, "m{a=\"x\\\"y\\\\z\\nw\",b=\"c\"} 15\ns 1.500000000\n");
        let mut h = Histogram::default();
        h.observe(Duration::from_millis(20));
        h.observe(Duration::from_secs(60));
        let mut t = Text(String::new());
        t.histogram("d", &[("op", "v")], &h);
        assert!(t.0.starts_with("d_bucket{op=\"v\",le=\"0.005\"} 0\n"));
        assert!(t.0.contains("d_bucket{op=\"v\",le=\"0.025\"} 1\n"));
        assert!(t.0.contains(
            "d_bucket{op=\"v\",le=\"+Inf\"} 2\nd_sum{op=\"v\"} 60.020000000\nd_count{op=\"v\"} 2\n"
        ));
    }
}
