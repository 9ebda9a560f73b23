//! A latency histogram in Prometheus' shape, with fixed buckets.

use std::time::Duration;

/// Upper bounds in seconds: Prometheus' default buckets, which kubelet uses for its
/// runtime operation and relist durations.
pub const BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Observations per bucket (not cumulative; the text format adds them up), their count
/// and sum.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// `buckets[i]`: observations in `(BUCKETS[i-1], BUCKETS[i]]`.
    pub buckets: [u64; 11],
    /// All observations (those above the last bound included).
    pub count: u64,
    /// Their sum in seconds.
    pub sum: f64,
}

impl Histogram {
    /// Adds one observation.
    pub fn observe(&mut self, d: Duration) {
        let s = d.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|b| s <= *b) {
            self.buckets[i] += 1;
        }
        self.count += 1;
        self.sum += s;
    }

    /// The cumulative count of each bucket (`le` order), as the text format wants.
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        BUCKETS
            .iter()
            .zip(self.buckets.iter())
            .scan(0, |acc, (b, n)| {
                *acc += n;
                Some((*b, *acc))
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
        assert!((h.sum - 20.312).abs() < 1e-9);
    }
}
