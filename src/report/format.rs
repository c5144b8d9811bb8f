//! Number and label formatting shared by the console and CSV reports, so that a value is
//! printed the same way everywhere and the way perf_analyzer users are used to reading it.

use crate::measure::level::{LevelResult, LoadLevel};
use crate::results::Settings;

/// Most decimals a throughput is printed with.
const MAX_THROUGHPUT_DECIMALS: usize = 4;

/// Significant digits of perf_analyzer's default stream precision.
const SIGNIFICANT_DIGITS: usize = 6;

/// The percentiles a report shows, ascending: the standard four, `--percentile` and those
/// of the `--slo` conditions, as the run recorded them.
pub fn reported_percentiles(settings: &Settings) -> Vec<f64> {
    settings.reported_percentiles.clone()
}

/// A rate as the reports print it, without a trailing ".0" for whole numbers (`100`,
/// `12.5`): as the CSV's first column has it.
pub fn format_rate(rate: f64) -> String {
    LoadLevel::Rate(rate).csv_value()
}

/// `p95 latency`, `p99.9 latency`: the label of a percentile in reports.
pub fn percentile_label(p: f64) -> String {
    format!("p{} latency", inferperf_wire::number::readable(p))
}

/// The name of the latency that stability and `-l` look at: `latency` (the mean) or
/// `p95 latency` (with `--percentile 95`).
pub fn stabilizing_label(settings: &Settings) -> String {
    match settings.percentile {
        Some(p) => percentile_label(p),
        None => "latency".to_string(),
    }
}

/// A time in µs as perf_analyzer prints it: an integer, truncated (negative or NaN give 0).
pub fn usec(value_us: f64) -> u64 {
    value_us as u64
}

/// A throughput the way perf_analyzer prints it (six significant digits, as a C++ stream
/// does), but never in scientific notation and with at most four decimals: `19.6095`,
/// `69.2`, `1234.57`, `250000`.
pub fn format_throughput(value: f64) -> String {
    if !value.is_finite() {
        return "0".to_string();
    }
    let whole_digits = integer_digits(value);
    let decimals = SIGNIFICANT_DIGITS
        .saturating_sub(whole_digits)
        .min(MAX_THROUGHPUT_DECIMALS);
    trim_decimals(format!("{value:.decimals$}"))
}

/// Digits before the decimal point (at least one).
fn integer_digits(value: f64) -> usize {
    let whole = value.abs().trunc();
    if whole < 1.0 {
        1
    } else {
        whole.log10().floor() as usize + 1
    }
}

/// Removes trailing zeros after a decimal point, and the point itself if nothing follows.
fn trim_decimals(text: String) -> String {
    if !text.contains('.') {
        return text;
    }
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A load level as the reports name it: `Concurrency: 4` style pairs need the name and the
/// value separately, so this gives both.
pub fn level_name_value(level: &LoadLevel) -> (&'static str, String) {
    match level {
        LoadLevel::Concurrency(c) => ("Concurrency", c.to_string()),
        LoadLevel::Rate(r) => ("Request Rate", format_rate(*r)),
    }
}

/// The name of the first column for these results: `Concurrency` when the run swept
/// concurrency, `Request Rate` for every other mode (as perf_analyzer names it).
pub fn mode_column(results: &[LevelResult]) -> &'static str {
    match results.first().map(|r| r.level) {
        Some(LoadLevel::Rate(_)) => "Request Rate",
        _ => "Concurrency",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::test_settings;

    #[test]
    fn throughput_uses_six_significant_digits_and_at_most_four_decimals() {
        assert_eq!(format_throughput(19.609_537), "19.6095");
        assert_eq!(format_throughput(69.2), "69.2");
        assert_eq!(format_throughput(1234.5678), "1234.57");
        assert_eq!(format_throughput(250_000.4), "250000");
        assert_eq!(format_throughput(1_234_567.8), "1234568");
        assert_eq!(format_throughput(0.123_456), "0.1235");
        assert_eq!(format_throughput(0.0), "0");
        assert_eq!(format_throughput(f64::NAN), "0");
    }

    #[test]
    fn percentiles_merge_in_order_without_duplicates() {
        let reported = |flags: &[&str]| {
            let mut args = vec!["-m", "test"];
            args.extend_from_slice(flags);
            reported_percentiles(&test_settings(&args))
        };
        assert_eq!(reported(&[]), vec![50.0, 90.0, 95.0, 99.0]);
        assert_eq!(
            reported(&["--percentile", "95"]),
            vec![50.0, 90.0, 95.0, 99.0]
        );
        assert_eq!(
            reported(&["--percentile", "75"]),
            vec![50.0, 75.0, 90.0, 95.0, 99.0]
        );
        assert_eq!(
            reported(&["--percentile", "99.9"]),
            vec![50.0, 90.0, 95.0, 99.0, 99.9]
        );
    }

    #[test]
    fn labels_drop_a_whole_number_fraction() {
        assert_eq!(percentile_label(95.0), "p95 latency");
        assert_eq!(percentile_label(99.9), "p99.9 latency");
        assert_eq!(usec(50_951.9), 50_951);
        assert_eq!(usec(-3.0), 0);
    }
}
