//! The measure section of the configuration: how windows are taken (by time or by count),
//! when a level is stable, what limits a level (latency threshold, SLO) and which server
//! metrics are scraped alongside.

use std::time::Duration;

use super::{
    MeasurementMode, MetricsConfig, SloCondition, SloMetric, LLM_PERCENTILES, STANDARD_PERCENTILES,
};

/// The settings of the measurement box.
#[derive(Debug, Clone)]
pub struct MeasureConfig {
    pub measurement_mode: MeasurementMode,
    pub measurement_interval: Duration,
    pub measurement_request_count: u64,
    /// `-s` as a percentage (10 means max/min ≤ 1.10).
    pub stability_percentage: f64,
    pub max_trials: u32,
    /// `--percentile`, when latency is stabilized and limited by a percentile, not the mean.
    pub percentile: Option<f64>,
    /// `-l` in milliseconds; `None` for no limit.
    pub latency_threshold_ms: Option<f64>,
    /// `--slo` conditions; every window of a level that counts must meet them all.
    pub slo: Vec<SloCondition>,
    /// AIPerf's `--goodput`: per-request limits that count a request towards goodput,
    /// without judging the level (as `--slo` does), so they apply in every load mode.
    pub goodput: GoodputLimits,
    /// AIPerf's `--benchmark-duration`: each level is one window of this length, without
    /// stability check.
    pub benchmark_duration: Option<Duration>,
    /// AIPerf's `--benchmark-grace-period`: after `benchmark_duration`, how long the answers
    /// still due are waited for and counted (`None`: every one, at most the request timeout).
    pub benchmark_grace: Option<Duration>,
    /// Prometheus scraping (`--collect-metrics`, `--metric`), when asked for.
    pub metrics: Option<MetricsConfig>,
    /// `--gpu-telemetry`, when asked for.
    pub gpu_telemetry: Option<super::metrics::GpuTelemetry>,
    /// AIPerf's `--num-profile-runs` and its companions.
    pub repeats: super::repeats::Repeats,
}

/// AIPerf's `--goodput` limits in milliseconds (`None`: no limit on that figure), with
/// the pairs as given (`time_to_first_token:370`) for the reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoodputLimits {
    pub ttft_ms: Option<f64>,
    pub itl_ms: Option<f64>,
    pub latency_ms: Option<f64>,
    pub given: Vec<String>,
}

impl MeasureConfig {
    /// The percentiles the reports of this run show, ascending: the standard four plus
    /// `--percentile` and those of `--slo` conditions, each once.
    pub fn reported_percentiles(&self) -> Vec<f64> {
        let mut percentiles = STANDARD_PERCENTILES.to_vec();
        let slo = self.slo.iter().filter_map(|c| match c.metric {
            SloMetric::Percentile(p) => Some(p),
            SloMetric::Mean => None,
        });
        for p in self.percentile.into_iter().chain(slo) {
            if !percentiles.contains(&p) {
                percentiles.push(p);
            }
        }
        percentiles.sort_by(f64::total_cmp);
        percentiles
    }

    /// The percentiles a window keeps when its histograms are dropped: those reported, and
    /// for an LLM run (`llm`) GenAI-Perf's and AIPerf's too.
    pub fn kept_percentiles(&self, llm: bool) -> Vec<f64> {
        let mut kept = self.reported_percentiles();
        if llm {
            for p in LLM_PERCENTILES {
                if !kept.contains(&p) {
                    kept.push(p);
                }
            }
            kept.sort_by(f64::total_cmp);
        }
        kept
    }
}
