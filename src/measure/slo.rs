//! Judging windows against `--slo` conditions: the figure a condition looks at, whether a
//! window meets it, and whether a window is so far over it that the level ends at once.

use super::distribution::Distribution;
use super::window::WindowStats;
pub use crate::config::SloCondition;
use crate::config::{SloFigure, SloMetric};

/// A single window this many times over a limit ends its level at once: the level is
/// clearly overloaded, and measuring it to the end would only grow the backlog.
pub const FAR_OVER: f64 = 2.0;

/// What a condition says about a window.
pub trait SloCheck {
    /// The figure this condition looks at, in µs.
    fn value_us(&self, w: &WindowStats) -> f64;
    /// True when the window's figure is within the limit. A window without a successful
    /// request has no latency to judge and does not break the condition.
    fn met_by(&self, w: &WindowStats) -> bool;
    /// True when the window is more than [`FAR_OVER`] times over the limit.
    fn far_over(&self, w: &WindowStats) -> bool;
}

impl SloCheck for SloCondition {
    fn value_us(&self, w: &WindowStats) -> f64 {
        let distribution: Option<&Distribution> = match self.figure {
            SloFigure::Latency => Some(&w.latency),
            SloFigure::Ttft => Some(&w.first_response),
            SloFigure::Itl => w.tokens.as_ref().map(|t| &t.inter_token),
        };
        let Some(d) = distribution else {
            return 0.0;
        };
        let ns = match self.metric {
            SloMetric::Mean => d.mean(),
            SloMetric::Percentile(p) => d.percentile(p),
        };
        ns / 1000.0
    }

    fn met_by(&self, w: &WindowStats) -> bool {
        if w.ok == 0 {
            return true;
        }
        let value = self.value_us(w);
        if self.strict {
            value < self.limit_us
        } else {
            value <= self.limit_us
        }
    }

    fn far_over(&self, w: &WindowStats) -> bool {
        w.ok > 0 && self.value_us(w) > FAR_OVER * self.limit_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(text: &str) -> SloCondition {
        crate::config::parse_slo(&[text.to_string()]).unwrap()[0]
    }

    #[test]
    fn a_condition_judges_a_window() {
        use crate::measure::sample::Sample;
        use std::time::{Duration, Instant};
        let t = Instant::now();
        let samples: Vec<Sample> = (1..=100)
            .map(|ms| Sample::once(t, t, t + Duration::from_millis(ms)))
            .collect();
        let w = WindowStats::from_samples(&samples, Duration::from_secs(1), 1);
        assert!(cond("p99<=100ms").met_by(&w));
        assert!(!cond("p99<=90ms").met_by(&w));
        assert!(cond("avg<=51ms").met_by(&w));
        assert!(!cond("avg<50ms").met_by(&w));
        assert!(cond("p50<=1ms").met_by(&WindowStats::new(1)));
    }
}
