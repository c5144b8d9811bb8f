//! The measure section of the configuration: how windows are taken (by time or by count),
//! when a level is stable, what limits a level (latency threshold, SLO) and which server
//! metrics are scraped alongside.

use std::time::Duration;

use super::parse::*;
use super::{bounds, metrics, repeats};
use super::{
    parse_slo, GpuTelemetry, MeasurementMode, MetricsConfig, ServiceKind, SloCondition, SloMetric,
    TlsSettings, LLM_PERCENTILES, STANDARD_PERCENTILES,
};
use crate::cli::ProfileArgs;
use inferperf_wire::error::RunResult;

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

/// What AIPerf's flags say of the measurement beside perf_analyzer's: read while they are
/// lowered (`config::aiperf`), taken by [`MeasureConfig::parse`].
#[derive(Debug)]
pub(super) struct AiperfMeasure {
    /// `--goodput`'s limits.
    pub goodput: GoodputLimits,
    pub benchmark_duration: Option<Duration>,
    /// `--benchmark-grace-period` (AIPerf's default 30 s; `None`: every answer).
    pub benchmark_grace: Option<Duration>,
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

impl MeasureConfig {
    /// The measurement's flags: windows, stability, limits, the scraped pages (an
    /// `https://` page with the server's TLS settings, `target_tls`) and repeated runs.
    pub(super) fn parse(
        args: &ProfileArgs,
        aiperf: &AiperfMeasure,
        kind: ServiceKind,
        target_tls: Option<&TlsSettings>,
    ) -> RunResult<MeasureConfig> {
        let mut config = MeasureConfig {
            measurement_mode: parse_measurement_mode(&args.measurement_mode)?,
            measurement_interval: bounds::window_ms(args.measurement_interval)?,
            measurement_request_count: positive(
                args.measurement_request_count,
                "--measurement-request-count",
            )?,
            stability_percentage: parse_stability(args.stability_percentage)?,
            max_trials: positive(args.max_trials as u64, "-r")? as u32,
            percentile: args.percentile.map(parse_percentile).transpose()?,
            latency_threshold_ms: parse_latency_threshold(args.latency_threshold)?,
            slo: parse_slo(&args.slo)?,
            goodput: aiperf.goodput.clone(),
            benchmark_duration: aiperf.benchmark_duration,
            benchmark_grace: aiperf.benchmark_grace,
            metrics: metrics::parse_metrics(args, kind)?,
            gpu_telemetry: metrics::parse_gpu_telemetry(args)?,
            repeats: repeats::parse(&args.aiperf_repeats)?,
        };
        config.pages_over_tls(target_tls);
        Ok(config)
    }

    /// A page scraped over HTTPS is read with the server's TLS settings (else the system's
    /// roots).
    fn pages_over_tls(&mut self, target_tls: Option<&TlsSettings>) {
        let dcgm = match self.gpu_telemetry.as_mut() {
            Some(GpuTelemetry::Dcgm(page)) => Some(page),
            _ => None,
        };
        for metrics in self.metrics.iter_mut().chain(dcgm) {
            if metrics.url.starts_with("https://") {
                metrics.tls = Some(
                    target_tls
                        .cloned()
                        .unwrap_or_else(TlsSettings::system_default),
                );
            }
        }
    }
}
