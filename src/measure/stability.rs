//! perf_analyzer's stability rule: the last three windows all have non-zero throughput and
//! their max/min ratios of throughput and of the stabilizing latency are within 1 + s/100.
//! The latency limit (`-l`) is judged here too, on each window as perf_analyzer does; the
//! `--slo` conditions on the merged windows a stable level reports (one bad second on a busy
//! machine does not fail a level), except that a window far over a condition ends the level
//! at once.

use super::slo::SloCheck;
use super::window::WindowStats;
use crate::config::SloCondition;

/// How many trailing windows the rule looks at, and are merged for the report.
pub const STABILITY_WINDOWS: usize = 3;

/// What the windows measured so far say about a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not stable yet: measure another window.
    Measuring,
    Stable,
    /// The stabilizing latency of one of the last windows reached `-l`.
    OverLatencyLimit,
    /// One of the last windows missed a `--slo` condition.
    MissedSlo,
}

/// The rule's parameters, taken from the flags.
#[derive(Debug, Clone)]
pub struct StabilityRule {
    /// `-s / 100`.
    pub threshold: f64,
    /// `--percentile`; the mean when `None`.
    pub percentile: Option<f64>,
    /// `-l` in µs.
    pub latency_limit_us: Option<f64>,
    /// `--slo`: every window must meet every condition.
    pub slo: Vec<SloCondition>,
}

impl StabilityRule {
    /// The rule a run's flags ask for (`-s`, `--percentile`, `-l`, `--slo`).
    pub fn for_run(measure: &crate::config::MeasureConfig) -> StabilityRule {
        StabilityRule {
            threshold: measure.stability_percentage / 100.0,
            percentile: measure.percentile,
            latency_limit_us: measure.latency_threshold_ms.map(|ms| ms * 1000.0),
            slo: measure.slo.clone(),
        }
    }

    pub fn judge(&self, windows: &[WindowStats]) -> Verdict {
        let last = &windows[windows.len().saturating_sub(STABILITY_WINDOWS)..];
        if let Some(limit) = self.latency_limit_us {
            let over = last
                .iter()
                .any(|w| w.ok > 0 && w.stabilizing_latency_us(self.percentile) >= limit);
            if over {
                return Verdict::OverLatencyLimit;
            }
        }
        let newest = windows.last();
        if newest.is_some_and(|w| self.slo.iter().any(|c| c.far_over(w))) {
            return Verdict::MissedSlo;
        }
        if last.len() < STABILITY_WINDOWS || last.iter().any(|w| w.throughput() <= 0.0) {
            return Verdict::Measuring;
        }
        let throughputs: Vec<f64> = last.iter().map(WindowStats::throughput).collect();
        let latencies: Vec<f64> = last
            .iter()
            .map(|w| w.stabilizing_latency_us(self.percentile))
            .collect();
        if !(within(&throughputs, self.threshold) && within(&latencies, self.threshold)) {
            Verdict::Measuring
        } else if self.misses_slo(&merge_last(windows, 1)) {
            Verdict::MissedSlo
        } else {
            Verdict::Stable
        }
    }

    /// True when the reported (merged) windows miss a `--slo` condition.
    pub fn misses_slo(&self, merged: &WindowStats) -> bool {
        self.slo.iter().any(|c| !c.met_by(merged))
    }
}

/// How far apart the last (up to three) windows are: the larger of max/min − 1 of their
/// throughputs and of their stabilizing latencies (0.04 for 4%), the figure the rule holds
/// against `-s`. None before two windows or when one had no throughput.
pub fn spread(windows: &[WindowStats], percentile: Option<f64>) -> Option<f64> {
    let last = &windows[windows.len().saturating_sub(STABILITY_WINDOWS)..];
    if last.len() < 2 || last.iter().any(|w| w.throughput() <= 0.0) {
        return None;
    }
    let ratio = |values: Vec<f64>| {
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        if min > 0.0 {
            max / min - 1.0
        } else {
            f64::INFINITY
        }
    };
    let throughputs = last.iter().map(WindowStats::throughput).collect();
    let latencies = last
        .iter()
        .map(|w| w.stabilizing_latency_us(percentile))
        .collect();
    Some(ratio(throughputs).max(ratio(latencies)))
}

/// max/min ≤ 1 + threshold (all values positive).
fn within(values: &[f64], threshold: f64) -> bool {
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    min > 0.0 && max / min <= 1.0 + threshold
}

/// The reported figures of a level: its last (up to three) windows merged.
pub fn merge_last(windows: &[WindowStats], batch_size: u32) -> WindowStats {
    let last = &windows[windows.len().saturating_sub(STABILITY_WINDOWS)..];
    WindowStats::merged(last, batch_size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sample::Sample;
    use std::time::{Duration, Instant};

    fn window(requests: u64, latency_us: u64) -> WindowStats {
        let t = Instant::now();
        let samples: Vec<Sample> = (0..requests)
            .map(|_| Sample::once(t, t, t + Duration::from_micros(latency_us)))
            .collect();
        WindowStats::from_samples(&samples, Duration::from_secs(1), 1)
    }

    const RULE: StabilityRule = StabilityRule {
        threshold: 0.10,
        percentile: None,
        latency_limit_us: None,
        slo: Vec::new(),
    };

    #[test]
    fn three_close_windows_are_stable() {
        let w = [window(100, 1000), window(105, 1050), window(109, 1000)];
        assert_eq!(RULE.judge(&w[..2]), Verdict::Measuring);
        assert_eq!(RULE.judge(&w), Verdict::Stable);
    }

    #[test]
    fn a_spread_over_threshold_or_a_zero_window_is_not_stable() {
        let spread = [window(100, 1000), window(100, 1000), window(111, 1000)];
        assert_eq!(RULE.judge(&spread), Verdict::Measuring);
        let slow = [window(100, 1000), window(100, 1200), window(100, 1000)];
        assert_eq!(RULE.judge(&slow), Verdict::Measuring);
        let zero = [window(100, 1000), window(0, 0), window(100, 1000)];
        assert_eq!(RULE.judge(&zero), Verdict::Measuring);
        // Only the last three windows count.
        let later = [
            window(10, 1000),
            window(100, 1000),
            window(100, 1000),
            window(100, 1000),
        ];
        assert_eq!(RULE.judge(&later), Verdict::Stable);
    }

    #[test]
    fn latency_limit_stops_early() {
        let rule = StabilityRule {
            latency_limit_us: Some(900.0),
            ..RULE
        };
        assert_eq!(rule.judge(&[window(100, 1000)]), Verdict::OverLatencyLimit);
    }

    #[test]
    fn a_window_that_misses_the_slo_stops_the_level() {
        let rule = StabilityRule {
            slo: crate::config::parse_slo(&["p99<=1100us".into()]).unwrap(),
            ..RULE
        };
        // One slow window among stable ones: judged on the merged windows, which meet it.
        let w = [window(100, 1000), window(100, 1000), window(100, 1000)];
        assert_eq!(rule.judge(&w), Verdict::Stable);
        let slow = [window(100, 1000), window(1, 1200), window(100, 1000)];
        assert_eq!(rule.judge(&slow[..2]), Verdict::Measuring);
        // Stable, but the merged windows miss it.
        let w = [window(100, 1150), window(100, 1150), window(100, 1150)];
        assert_eq!(rule.judge(&w), Verdict::MissedSlo);
        // Far over in a single window: stop at once.
        assert_eq!(rule.judge(&[window(100, 2300)]), Verdict::MissedSlo);
    }

    #[test]
    fn spread_is_the_wider_of_throughput_and_latency() {
        assert_eq!(spread(&[window(100, 1000)], None), None);
        let w = [window(100, 1000), window(105, 1000), window(100, 1100)];
        let s = spread(&w, None).unwrap();
        assert!((s - 0.10).abs() < 1e-9, "{s}");
        // It agrees with the rule: within -s exactly when judged stable.
        let rule = StabilityRule {
            threshold: 0.11,
            ..RULE
        };
        assert_eq!(rule.judge(&w), Verdict::Stable);
        let rule = StabilityRule {
            threshold: 0.09,
            ..RULE
        };
        assert_eq!(rule.judge(&w), Verdict::Measuring);
        // Only the last three count; a window without throughput has no spread.
        let later = [window(10, 1000), window(100, 1000), window(100, 1000)];
        assert!(spread(&later[1..], None).unwrap().abs() < 1e-9);
        assert_eq!(spread(&[window(100, 1000), window(0, 0)], None), None);
    }

    #[test]
    fn merge_takes_the_last_three() {
        let w = [
            window(1, 1),
            window(100, 1000),
            window(100, 1000),
            window(100, 1000),
        ];
        let merged = merge_last(&w, 1);
        assert_eq!(merged.ok, 300);
        assert_eq!(merged.windows, 3);
    }
}
