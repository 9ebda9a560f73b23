//! The few Prometheus text-format samples the fleet bench reads: one metric family's
//! samples with their labels (no escapes in the label values it reads).

use std::collections::BTreeMap;

/// Labels of one sample.
pub type Labels = BTreeMap<String, String>;

/// Every sample of metric `name` in `text`: its labels and value.
pub fn samples(text: &str, name: &str) -> Vec<(Labels, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = match rest.strip_prefix('{') {
                Some(r) => r.split_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            let value = value.split_whitespace().next()?.parse().ok()?;
            Some((parse_labels(labels), value))
        })
        .collect()
}

/// The one sample of `name` without labels, if any.
pub fn value(text: &str, name: &str) -> Option<f64> {
    samples(text, name)
        .into_iter()
        .find(|(l, _)| l.is_empty())
        .map(|(_, v)| v)
}

/// `a="x",b="y"` into a map.
fn parse_labels(s: &str) -> Labels {
    let mut out = Labels::new();
    let mut rest = s;
    while let Some((key, after)) = rest.split_once("=\"") {
        let Some((value, tail)) = after.split_once('"') else {
            break;
        };
        out.insert(key.trim_start_matches(',').to_string(), value.to_string());
        rest = tail;
    }
    out
}

/// Sums `samples` by the label values `keys` gives (joined with spaces).
pub fn sum_by(
    samples: &[(Labels, f64)],
    keys: impl Fn(&Labels) -> String,
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for (l, v) in samples {
        *out.entry(keys(l)).or_insert(0.0) += v;
    }
    out
}
