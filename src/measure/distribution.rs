//! One figure's distribution over a window — a latency, a gap between answers, a count of
//! answers: an HDR histogram while windows may still be merged, and once a window is only
//! reported, just the percentiles the reports show (and, when the run writes a results file,
//! the histogram in HdrHistogram's V2 compressed format, a few hundred bytes). Its count,
//! sum and extremes are kept either way, so means survive compaction and merging is exact.

use std::borrow::Cow;

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
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
    /// The dropped histogram in HdrHistogram's V2 compressed format, base64, when the
    /// compaction asked to keep it (see [`Compaction`]).
    encoded: Option<Box<str>>,
}

/// What a window keeps when its histograms are dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compaction {
    /// The percentiles the reports show, ascending.
    pub percentiles: Vec<f64>,
    /// Whether each histogram is kept encoded (HdrHistogram's V2 compressed format, a few
    /// hundred bytes), so that a results file can still hold it: only when one is written.
    pub keep_histograms: bool,
}

impl Compaction {
    /// What the windows of a level keep while it is measured: the percentiles its reports
    /// show, and the histograms when the run writes a results file (`--report-dir`,
    /// `--results-file`), which records the level only once it is done. `llm`: the run is
    /// an LLM run, whose reports show more percentiles.
    pub fn for_run(
        measure: &crate::config::MeasureConfig,
        llm: bool,
        keep_histograms: bool,
    ) -> Compaction {
        Compaction {
            percentiles: measure.kept_percentiles(llm),
            keep_histograms,
        }
    }

    /// Keeps these percentiles and no histogram.
    pub fn percentiles(keep: &[f64]) -> Compaction {
        Compaction {
            percentiles: keep.to_vec(),
            keep_histograms: false,
        }
    }
}

/// The figures of a distribution a histogram does not hold exactly: with the histogram,
/// all that is needed to rebuild it (see [`Distribution::rebuild`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exact {
    pub count: u64,
    pub sum: u128,
    pub sum_sq: f64,
    /// The extremes (`min` is `u64::MAX` when nothing was recorded).
    pub min: u64,
    pub max: u64,
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
            encoded: None,
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

    /// Drops the histogram, keeping the values at the percentiles of `keep`, the count, the
    /// sum and, if `keep` asks, the histogram encoded: a window that will only be reported
    /// then costs a few hundred bytes. Compacting again without keeping histograms drops an
    /// encoded one.
    pub fn compact(&mut self, keep: &Compaction) {
        if self.kept.is_some() {
            if !keep.keep_histograms {
                self.encoded = None;
            }
            return;
        }
        if keep.keep_histograms {
            self.encoded = Some(encode(&self.histogram).into_boxed_str());
        }
        let points = keep
            .percentiles
            .iter()
            .map(|&p| (p, self.percentile(p)))
            .collect();
        self.kept = Some(points);
        self.histogram = Histogram::new_with_bounds(1, 2, 0).expect("static bounds are valid");
    }

    /// Whether the histogram was dropped (only the kept percentiles answer).
    pub fn is_compacted(&self) -> bool {
        self.kept.is_some()
    }

    /// The histogram in HdrHistogram's V2 compressed format (V2 + DEFLATE, base64, as
    /// HdrHistogram's `encodeIntoCompressedByteBuffer` and its log files): encoded now, or
    /// as kept by [`Distribution::compact`]; `None` when it was dropped without.
    pub fn histogram_v2(&self) -> Option<Cow<'_, str>> {
        match (&self.kept, &self.encoded) {
            (_, Some(text)) => Some(Cow::Borrowed(text)),
            (Some(_), None) => None,
            (None, None) => Some(Cow::Owned(encode(&self.histogram))),
        }
    }

    /// Bytes held by the encoded histogram of a compacted distribution.
    pub fn encoded_len(&self) -> usize {
        self.encoded.as_ref().map_or(0, |text| text.len())
    }

    /// The figures the histogram does not hold exactly.
    pub fn exact(&self) -> Exact {
        Exact {
            count: self.count,
            sum: self.sum,
            sum_sq: self.sum_sq,
            min: self.min,
            max: self.max,
        }
    }

    /// A distribution from a histogram in HdrHistogram's V2 compressed format (base64;
    /// plain V2 is read too) and the exact figures that go with it: it answers every
    /// percentile and merges like the one that was encoded. The error says what is wrong.
    pub fn rebuild(histogram_v2: &str, exact: Exact) -> Result<Distribution, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(histogram_v2.trim())
            .map_err(|e| format!("the histogram is not base64 ({e})"))?;
        let mut histogram: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("the histogram is not in HdrHistogram's V2 format ({e:?})"))?;
        if histogram.len() != exact.count {
            return Err(format!(
                "the histogram holds {} values, its count says {}",
                histogram.len(),
                exact.count
            ));
        }
        histogram.auto(true);
        Ok(Distribution {
            histogram,
            count: exact.count,
            sum: exact.sum,
            sum_sq: exact.sum_sq,
            min: exact.min,
            max: exact.max,
            kept: None,
            encoded: None,
        })
    }

    /// The histogram itself (empty once compacted).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.histogram
    }

    /// Distinct values the histogram tells apart (how much memory it holds).
    pub fn resolution(&self) -> usize {
        self.histogram.distinct_values()
    }
}

/// `histogram` in HdrHistogram's V2 compressed format, base64.
fn encode(histogram: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Writing into a Vec cannot fail, and a histogram of u64 counts always encodes.
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        .expect("a histogram encodes into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
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
        a.compact(&Compaction::percentiles(&[50.0, 99.0]));
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

    fn latencies(seed: u64, n: u64) -> Distribution {
        let mut d = Distribution::default();
        let mut x = seed;
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            d.record(50_000 + (x >> 40) % 5_000_000);
        }
        d
    }

    #[test]
    fn an_encoded_histogram_rebuilds_the_same_distribution() {
        let a = latencies(1, 10_000);
        let text = a.histogram_v2().unwrap().into_owned();
        assert!(
            text.starts_with("HISTF"),
            "V2 compressed cookie: {text:.12}"
        );
        let back = Distribution::rebuild(&text, a.exact()).unwrap();
        assert_eq!(back.histogram(), a.histogram());
        for p in [1.0, 50.0, 90.0, 99.0, 99.9, 99.99] {
            assert_eq!(back.percentile(p), a.percentile(p), "p{p}");
        }
        assert_eq!((back.mean(), back.std()), (a.mean(), a.std()));
        assert_eq!((back.min(), back.max()), (a.min(), a.max()));
        // Rebuilt distributions merge as the originals do, growing past their bounds.
        let b = latencies(2, 5_000);
        let mut merged = a.clone();
        merged.merge(&b);
        let mut rebuilt = back;
        rebuilt.merge(&Distribution::rebuild(&b.histogram_v2().unwrap(), b.exact()).unwrap());
        let mut huge = Distribution::default();
        huge.record(MAX_TRACKED);
        rebuilt.merge(&Distribution::rebuild(&huge.histogram_v2().unwrap(), huge.exact()).unwrap());
        merged.merge(&huge);
        assert_eq!(rebuilt.histogram(), merged.histogram());
        assert_eq!(rebuilt.percentile(99.9), merged.percentile(99.9));
        assert_eq!(rebuilt.count(), 15_001);
    }

    #[test]
    fn a_compacted_distribution_keeps_its_histogram_only_when_asked() {
        let mut plain = latencies(3, 1000);
        let mut kept = plain.clone();
        let before = plain.histogram_v2().unwrap().into_owned();
        plain.compact(&Compaction::percentiles(&[50.0]));
        assert!(plain.histogram_v2().is_none());
        assert_eq!(plain.encoded_len(), 0);
        kept.compact(&Compaction {
            percentiles: vec![50.0],
            keep_histograms: true,
        });
        assert_eq!(kept.histogram_v2().unwrap(), before);
        assert!(kept.encoded_len() < 2048, "{} bytes", kept.encoded_len());
        let back = Distribution::rebuild(&before, kept.exact()).unwrap();
        assert_eq!(back.percentile(50.0), kept.percentile(50.0));
        assert!(
            back.percentile(99.9) > 0.0,
            "every percentile answers again"
        );
        // Once the histogram is written elsewhere, compacting again lets it go.
        kept.compact(&Compaction::percentiles(&[50.0]));
        assert_eq!(kept.encoded_len(), 0);
        assert_eq!(back.percentile(50.0), kept.percentile(50.0));
    }

    #[test]
    fn a_bad_histogram_is_refused_with_a_reason() {
        let exact = Distribution::default().exact();
        let not_base64 = Distribution::rebuild("%%%", exact).unwrap_err();
        assert!(not_base64.contains("base64"), "{not_base64}");
        let not_hdr = Distribution::rebuild("aGVsbG8gd29ybGQ=", exact).unwrap_err();
        assert!(not_hdr.contains("V2"), "{not_hdr}");
        let d = latencies(4, 10);
        let wrong_count = Distribution::rebuild(&d.histogram_v2().unwrap(), exact).unwrap_err();
        assert!(wrong_count.contains("10 values"), "{wrong_count}");
    }
}
