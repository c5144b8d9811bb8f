//! The `llm` engines' request timings as Prometheus histograms, with vLLM's bucket
//! boundaries: time to first token (arrival to the first event), the gap between a
//! sequence's events, and arrival to the last event — what a client that reads an engine's
//! own latency histograms compares its figures with. Each observation is one atomic add;
//! the page is written from a snapshot.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// vLLM's buckets of `time_to_first_token_seconds`.
const TTFT_BOUNDS: [f64; 22] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
/// vLLM's buckets of `inter_token_latency_seconds`.
const ITL_BOUNDS: [f64; 19] = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
/// vLLM's buckets of `e2e_request_latency_seconds`.
const E2E_BOUNDS: [f64; 21] = [
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// One histogram: a count per bucket (the last for above every bound), and the sum.
#[derive(Debug)]
pub(crate) struct LatencyHistogram {
    bounds: &'static [f64],
    counts: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
}

impl LatencyHistogram {
    fn new(bounds: &'static [f64]) -> LatencyHistogram {
        LatencyHistogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    pub(crate) fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let bucket = self.bounds.partition_point(|&b| b < seconds);
        self.counts[bucket].fetch_add(1, Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(ns, Relaxed);
    }

    /// Writes the family `name` for one model: cumulative buckets, `+Inf`, sum and count.
    pub(crate) fn write(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (i, count) in self.counts.iter().enumerate() {
            cumulative += count.load(Relaxed);
            let le = match self.bounds.get(i) {
                Some(bound) => bound.to_string(),
                None => "+Inf".to_string(),
            };
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
        }
        let sum = self.sum_ns.load(Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {cumulative}");
    }
}

/// An `llm` model's three timing histograms.
#[derive(Debug)]
pub(crate) struct EngineTimings {
    pub ttft: LatencyHistogram,
    pub itl: LatencyHistogram,
    pub e2e: LatencyHistogram,
}

impl Default for EngineTimings {
    fn default() -> Self {
        EngineTimings {
            ttft: LatencyHistogram::new(&TTFT_BOUNDS),
            itl: LatencyHistogram::new(&ITL_BOUNDS),
            e2e: LatencyHistogram::new(&E2E_BOUNDS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_with_an_inf_bucket_sum_and_count() {
        let timings = EngineTimings::default();
        for ms in [3, 4, 30, 3000] {
            timings.ttft.observe(Duration::from_millis(ms));
        }
        let mut out = String::new();
        timings.ttft.write(&mut out, "t", "model_name=\"m\"");
        for line in [
            "t_bucket{model_name=\"m\",le=\"0.001\"} 0",
            "t_bucket{model_name=\"m\",le=\"0.005\"} 2",
            "t_bucket{model_name=\"m\",le=\"0.04\"} 3",
            "t_bucket{model_name=\"m\",le=\"2.5\"} 3",
            "t_bucket{model_name=\"m\",le=\"5\"} 4",
            "t_bucket{model_name=\"m\",le=\"+Inf\"} 4",
            "t_sum{model_name=\"m\"} 3.037",
            "t_count{model_name=\"m\"} 4",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} in\n{out}");
        }
    }

    #[test]
    fn a_value_on_a_bound_falls_in_that_bucket() {
        let timings = EngineTimings::default();
        timings.itl.observe(Duration::from_millis(10));
        let mut out = String::new();
        timings.itl.write(&mut out, "i", "m=\"x\"");
        assert!(out.contains("i_bucket{m=\"x\",le=\"0.01\"} 1"), "{out}");
    }
}
