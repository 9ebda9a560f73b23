//! A latency histogram in Prometheus' shape, with fixed buckets. Integers only (the sum
//! in nanoseconds): the binary carries no float formatting for it.

use std::time::Duration;

/// Upper bounds in nanoseconds: Prometheus' default buckets (5 ms to 10 s), which kubelet
/// uses for its runtime operation and relist durations.
pub const BUCKETS: [u64; 11] = [
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// [`BUCKETS`] as the text format's `le` values.
pub const BUCKET_LABELS: [&str; 11] = [
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
];

/// Observations per bucket (not cumulative; the text format adds them up), their count
/// and sum.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// `buckets[i]`: observations in `(BUCKETS[i-1], BUCKETS[i]]`.
    pub buckets: [u64; 11],
    /// All observations (those above the last bound included).
    pub count: u64,
    /// Their sum in nanoseconds.
    pub sum_nanos: u64,
}

impl Histogram {
    /// Adds one observation.
    pub fn observe(&mut self, d: Duration) {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if let Some(i) = BUCKETS.iter().position(|b| n <= *b) {
            self.buckets[i] += 1;
        }
        self.count += 1;
        self.sum_nanos = self.sum_nanos.saturating_add(n);
    }

    /// The cumulative count of each bucket with its `le`, as the text format wants.
    pub fn cumulative(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        BUCKET_LABELS
            .iter()
            .zip(self.buckets.iter())
            .scan(0, |acc, (le, n)| {
                *acc += n;
                Some((*le, *acc))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_that_holds_them() {
        let mut h = Histogram::default();
        for ms in [1, 5, 6, 300, 20_000] {
            h.observe(Duration::from_millis(ms));
        }
        assert_eq!(h.count, 5);
        let cum: Vec<u64> = h.cumulative().map(|(_, n)| n).collect();
        assert_eq!(cum, [2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4]);
        assert_eq!(h.sum_nanos, 20_312_000_000);
    }
}
