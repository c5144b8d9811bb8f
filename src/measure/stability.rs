//! perf_analyzer's stability rule: the last three windows all have non-zero throughput and
//! their max/min ratios of throughput and of the stabilizing latency are within 1 + s/100.
//! The latency limit (`-l`) is judged here too, on the same windows.

use super::window::WindowStats;

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
}

/// The rule's parameters, taken from the flags.
#[derive(Debug, Clone, Copy)]
pub struct StabilityRule {
    /// `-s / 100`.
    pub threshold: f64,
    /// `--percentile`; the mean when `None`.
    pub percentile: Option<f64>,
    /// `-l` in µs.
    pub latency_limit_us: Option<f64>,
}

impl StabilityRule {
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
        if last.len() < STABILITY_WINDOWS || last.iter().any(|w| w.throughput() <= 0.0) {
            return Verdict::Measuring;
        }
        let throughputs: Vec<f64> = last.iter().map(WindowStats::throughput).collect();
        let latencies: Vec<f64> = last
            .iter()
            .map(|w| w.stabilizing_latency_us(self.percentile))
            .collect();
        if within(&throughputs, self.threshold) && within(&latencies, self.threshold) {
            Verdict::Stable
        } else {
            Verdict::Measuring
        }
    }
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
            .map(|_| Sample {
                scheduled: t,
                sent: t,
                send_ns: 0,
                recv_ns: 0,
                done: t + Duration::from_micros(latency_us),
                error: None,
            })
            .collect();
        WindowStats::from_samples(&samples, Duration::from_secs(1), 1)
    }

    const RULE: StabilityRule = StabilityRule {
        threshold: 0.10,
        percentile: None,
        latency_limit_us: None,
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
