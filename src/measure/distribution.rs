//! One figure's distribution over a window — a latency, a gap between answers, a count of
//! answers: an HDR histogram while windows may still be merged, and once a window is only
//! reported, just the percentiles the reports show. Its count and sum are kept either way,
//! so means survive compaction and merging is exact.

use hdrhistogram::Histogram;

/// Highest value the histograms hold: one hour in nanoseconds (values above are clamped).
const MAX_TRACKED: u64 = 3_600_000_000_000;

/// The histograms start at their smallest (1 to 2048 at 3 significant digits, 16 KiB) and grow
/// to the largest value recorded, so a figure a run does not have (the gaps between answers
/// of unary requests) or that stays small (answers per request) costs little, and a window
/// of sub-millisecond latencies costs tens of KiB, not the 256 KiB of a histogram sized for
/// an hour.
fn new_histogram() -> Histogram<u64> {
    let mut histogram =
        Histogram::new_with_bounds(1, 2048, 3).expect("static histogram bounds are valid");
    histogram.auto(true);
    histogram
}

/// The values of one figure recorded in a window (or several merged windows).
#[derive(Debug, Clone)]
pub struct Distribution {
    histogram: Histogram<u64>,
    count: u64,
    sum: u128,
    /// Sum of squared values (for the standard deviation), and the exact extremes.
    sum_sq: f64,
    min: u64,
    max: u64,
    /// Set once the histogram was dropped: (percentile, value) for the percentiles kept.
    kept: Option<Vec<(f64, f64)>>,
}

impl Default for Distribution {
    fn default() -> Self {
        Distribution {
            histogram: new_histogram(),
            count: 0,
            sum: 0,
            sum_sq: 0.0,
            min: u64::MAX,
            max: 0,
            kept: None,
        }
    }
}

impl Distribution {
    /// Records one value (clamped to an hour in ns).
    pub fn record(&mut self, value: u64) {
        let value = value.min(MAX_TRACKED);
        let _ = self.histogram.record(value);
        self.count += 1;
        self.sum += value as u128;
        self.sum_sq += (value as f64) * (value as f64);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum of the values recorded.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// The mean of the values, 0 when there are none.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The smallest value recorded (0 when none).
    pub fn min(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.min as f64
        }
    }

    /// The largest value recorded (0 when none).
    pub fn max(&self) -> f64 {
        self.max as f64
    }

    /// The population standard deviation of the values (numpy's `std`; 0 with none).
    pub fn std(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.mean();
        (self.sum_sq / n - mean * mean).max(0.0).sqrt()
    }

    /// The value at percentile `p` (0 < p < 100): 0 when nothing was recorded, NaN (shown
    /// as such) when the distribution was compacted without keeping `p`.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        if let Some(kept) = &self.kept {
            return kept
                .iter()
                .find(|point| point.0 == p)
                .map_or(f64::NAN, |point| point.1);
        }
        self.histogram.value_at_quantile(p / 100.0) as f64
    }

    /// Adds another window's values; neither may be compacted.
    pub fn merge(&mut self, other: &Distribution) {
        debug_assert!(self.kept.is_none() && other.kept.is_none());
        // Both histograms grow as needed, so adding cannot fail.
        let _ = self.histogram.add(&other.histogram);
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Drops the histogram, keeping the values at the percentiles `keep`, the count and the
    /// sum: a window that will only be reported then costs a few hundred bytes.
    pub fn compact(&mut self, keep: &[f64]) {
        if self.kept.is_some() {
            return;
        }
        let points = keep.iter().map(|&p| (p, self.percentile(p))).collect();
        self.kept = Some(points);
        self.histogram = Histogram::new_with_bounds(1, 2, 0).expect("static bounds are valid");
    }

    /// Distinct values the histogram tells apart (how much memory it holds).
    pub fn resolution(&self) -> usize {
        self.histogram.distinct_values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_means_and_merging() {
        let mut a = Distribution::default();
        (1..=100).for_each(|v| a.record(v * 1000));
        let mut b = Distribution::default();
        b.record(0);
        assert_eq!(b.percentile(50.0), 0.0, "zero is a value too");
        b.merge(&a);
        assert_eq!(b.count(), 101);
        assert!((a.mean() - 50_500.0).abs() < 1e-9);
        assert!((a.percentile(99.0) - 99_000.0).abs() <= 99.0);
        let grown = a.resolution();
        a.compact(&[50.0, 99.0]);
        assert!((a.percentile(99.0) - 99_000.0).abs() <= 99.0);
        assert!(
            a.percentile(75.0).is_nan(),
            "a percentile not kept shows as such"
        );
        assert!((a.mean() - 50_500.0).abs() < 1e-9);
        assert!(a.resolution() < grown);
        assert_eq!(Distribution::default().percentile(99.0), 0.0);
        assert_eq!((b.min(), b.max()), (0.0, 100_000.0));
    }

    #[test]
    fn the_standard_deviation_is_numpys() {
        let mut d = Distribution::default();
        [2, 4, 4, 4, 5, 5, 7, 9]
            .into_iter()
            .for_each(|v| d.record(v));
        assert!((d.std() - 2.0).abs() < 1e-12);
        assert_eq!(Distribution::default().std(), 0.0);
    }
}
