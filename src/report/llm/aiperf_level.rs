//! AIPerf's metrics of a whole level (`request_throughput`, `benchmark_duration`, the token
//! totals and throughputs, goodput, the error counts), one row each with its tag, header
//! and unit, which levels have it and how its value is read from the level's merged
//! windows; the JSON, the CSV and the timeslices iterate the rows.

use crate::measure::tokens::TokenStats;
use crate::measure::window::WindowStats;

use super::aiperf_telemetry;

/// A metric of the whole level, one value.
pub(super) struct LevelMetric {
    pub(super) tag: &'static str,
    pub(super) header: &'static str,
    pub(super) unit: &'static str,
    pub(super) value: f64,
}

/// What the level metrics are read from: the level's merged windows and their token
/// figures, with the sums several metrics share.
pub(super) struct Level<'w> {
    w: &'w WindowStats,
    tokens: Option<&'w TokenStats>,
    /// Input and output tokens of every request.
    isl: f64,
    osl: f64,
    secs: f64,
}

impl<'w> Level<'w> {
    fn of(w: &'w WindowStats) -> Level<'w> {
        let tokens = w.tokens.as_deref();
        Level {
            w,
            tokens,
            isl: tokens.map_or(0.0, |t| t.input_tokens.sum() as f64),
            osl: tokens.map_or(0.0, |t| t.output_tokens.sum() as f64),
            secs: w.duration.as_secs_f64(),
        }
    }

    fn per_second(&self, n: f64) -> f64 {
        if self.secs > 0.0 {
            n / self.secs
        } else {
            0.0
        }
    }

    /// The run counted tokens (every LLM endpoint: embeddings and rankings count input
    /// tokens).
    fn counts_tokens(&self) -> bool {
        self.tokens.is_some()
    }

    /// Requests generated text (not embeddings or rankings, which AIPerf's export gives
    /// input tokens only).
    fn generates(&self) -> bool {
        self.tokens.is_some_and(TokenStats::generates)
    }

    fn token(&self, read: fn(&TokenStats) -> f64) -> f64 {
        self.tokens.map_or(0.0, read)
    }
}

/// A metric of the whole level: AIPerf's tag, header and unit, the levels that have it and
/// its value.
struct LevelRow {
    tag: &'static str,
    header: &'static str,
    unit: &'static str,
    shown: fn(&Level) -> bool,
    value: fn(&Level) -> f64,
}

const fn level_row(
    tag: &'static str,
    header: &'static str,
    unit: &'static str,
    shown: fn(&Level) -> bool,
    value: fn(&Level) -> f64,
) -> LevelRow {
    LevelRow {
        tag,
        header,
        unit,
        shown,
        value,
    }
}

fn always(_: &Level) -> bool {
    true
}

/// AIPerf's level metrics in the order its JSON lists them (GPU power follows, from the
/// telemetry). Durations and throughputs are those of the measured windows (AIPerf's run is
/// one window from the first send to the last answer).
const LEVEL_ROWS: [LevelRow; 15] = [
    level_row(
        "request_throughput",
        "Request Throughput",
        "requests/sec",
        always,
        |l| l.w.throughput(),
    ),
    level_row("request_count", "Request Count", "requests", always, |l| {
        l.w.ok as f64
    }),
    level_row(
        "output_token_throughput",
        "Output Token Throughput",
        "tokens/sec",
        |l| l.generates(),
        |l| l.per_second(l.osl),
    ),
    level_row(
        "benchmark_duration",
        "Benchmark Duration",
        "sec",
        always,
        |l| l.secs,
    ),
    level_row(
        "total_isl",
        "Total Input Sequence Length",
        "tokens",
        |l| l.counts_tokens(),
        |l| l.isl,
    ),
    level_row(
        "total_osl",
        "Total Output Sequence Length",
        "tokens",
        |l| l.generates(),
        |l| l.osl,
    ),
    level_row(
        "osl_mismatch_count",
        "OSL Mismatch Count",
        "requests",
        |l| l.tokens.is_some_and(|t| t.asked_tokens > 0),
        |l| l.token(|t| t.osl_mismatch as f64),
    ),
    level_row(
        "total_reasoning_tokens",
        "Total Reasoning Tokens",
        "tokens",
        |l| l.tokens.is_some_and(|t| t.reasoning_tokens.sum() > 0),
        |l| l.token(|t| t.reasoning_tokens.sum() as f64),
    ),
    level_row(
        "goodput",
        "Goodput",
        "requests/sec",
        |l| l.w.goodput.is_set(),
        |l| l.w.goodput(),
    ),
    level_row(
        "good_request_count",
        "Good Request Count",
        "requests",
        |l| l.w.goodput.is_set(),
        |l| l.token(|t| t.good as f64),
    ),
    level_row(
        "request_error_rate",
        "Request Error Rate",
        "%",
        always,
        |l| l.w.error_rate() * 100.0,
    ),
    level_row(
        "completed_request_count",
        "Completed Requests (Success + Error)",
        "requests",
        always,
        |l| l.w.completed() as f64,
    ),
    level_row(
        "error_request_count",
        "Error Request Count",
        "requests",
        |l| l.w.error_count() > 0,
        |l| l.w.error_count() as f64,
    ),
    level_row(
        "total_token_throughput",
        "Total Token Throughput",
        "tokens/sec",
        |l| l.generates(),
        |l| l.per_second(l.isl + l.osl),
    ),
    level_row(
        "input_token_throughput",
        "Input Token Throughput",
        "tokens/sec",
        |l| l.counts_tokens(),
        |l| l.per_second(l.isl),
    ),
];

/// The level metrics of `w` that it has, in the order AIPerf's JSON lists them.
pub(super) fn level_metrics(w: &WindowStats) -> Vec<LevelMetric> {
    let level = Level::of(w);
    let rows = LEVEL_ROWS.iter().filter(|row| (row.shown)(&level));
    let mut metrics: Vec<LevelMetric> = rows
        .map(|row| LevelMetric {
            tag: row.tag,
            header: row.header,
            unit: row.unit,
            value: (row.value)(&level),
        })
        .collect();
    let power = aiperf_telemetry::power_metrics(w).into_iter();
    metrics.extend(power.map(|(tag, header, unit, value)| LevelMetric {
        tag,
        header,
        unit,
        value,
    }));
    metrics
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::llm::test_llm_window;

    fn rows(w: &WindowStats) -> Vec<(&'static str, String)> {
        let metrics = level_metrics(w).into_iter();
        metrics
            .map(|m| (m.tag, format!("{:.3}", m.value)))
            .collect()
    }

    #[test]
    fn each_level_metric_comes_when_the_level_has_it_in_aiperfs_order() {
        let plain = test_llm_window();
        let tags: Vec<_> = rows(&plain).into_iter().map(|(t, _)| t).collect();
        assert_eq!(
            tags,
            [
                "request_throughput",
                "request_count",
                "output_token_throughput",
                "benchmark_duration",
                "total_isl",
                "total_osl",
                "request_error_rate",
                "completed_request_count",
                "error_request_count",
                "total_token_throughput",
                "input_token_throughput",
            ]
        );
        let mut rich = test_llm_window();
        rich.goodput.ttft_ns = Some(1_000_000_000);
        let tokens = rich.tokens.as_mut().unwrap();
        tokens.asked_tokens = 80;
        tokens.osl_mismatch = 2;
        tokens.good = 3;
        tokens.reasoning_tokens.record(7);
        let expected = [
            ("request_throughput", "2.000"),
            ("request_count", "4.000"),
            ("output_token_throughput", "40.000"),
            ("benchmark_duration", "2.000"),
            ("total_isl", "400.000"),
            ("total_osl", "80.000"),
            ("osl_mismatch_count", "2.000"),
            ("total_reasoning_tokens", "7.000"),
            ("goodput", "1.500"),
            ("good_request_count", "3.000"),
            ("request_error_rate", "20.000"),
            ("completed_request_count", "5.000"),
            ("error_request_count", "1.000"),
            ("total_token_throughput", "240.000"),
            ("input_token_throughput", "200.000"),
        ];
        let expected: Vec<_> = expected.map(|(t, v)| (t, v.to_string())).into();
        assert_eq!(rows(&rich), expected);
    }
}
