//! AIPerf 0.13's exports of one level, `profile_export_aiperf.csv` and
//! `profile_export_aiperf.json`, with AIPerf's metric tags, row names, units, row order
//! (sorted by tag) and number format, filled with the inferperf figures that measure the
//! same thing. A metric inferperf does not measure (DNS lookups, bytes and chunks on the
//! wire, AIPerf's time-weighted "effective"/"active" figures) has no row, rather than a
//! made-up one; reasoning rows appear when the answers had reasoning.

use crate::measure::level::LoadLevel;
use crate::measure::level::{LevelEnd, LevelResult};
use crate::measure::window::WindowStats;
use crate::results::{LoadSettings, Settings};

use super::aiperf_level::level_metrics;
use super::aiperf_telemetry;
use super::json::{object, Json};
use super::{csv_row, iso_utc, Figure, Stats, LLM_PERCENTILES};

/// The layout version of AIPerf's JSON that this file follows.
const SCHEMA_VERSION: &str = "1.4";
/// The AIPerf release whose files these copy.
pub(crate) const AIPERF_VERSION: &str = "0.13.0";

/// The statistics columns of the CSV's first block, after `Metric`.
pub(crate) const CSV_STATS: [&str; 14] = [
    "avg", "min", "max", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std",
];

/// A per-request metric: AIPerf's tag, header and unit, and the inferperf figure behind it.
pub(super) struct RequestMetric {
    pub(super) tag: &'static str,
    pub(super) header: &'static str,
    pub(super) unit: &'static str,
    figure: Figure,
    /// The runs that have it.
    runs: Runs,
}

/// Which runs a per-request metric is reported for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runs {
    All,
    /// AIPerf has it only for streamed answers.
    Streaming,
}

const fn per_request(
    tag: &'static str,
    header: &'static str,
    unit: &'static str,
    figure: Figure,
    runs: Runs,
) -> RequestMetric {
    RequestMetric {
        tag,
        header,
        unit,
        figure,
        runs,
    }
}

/// AIPerf's per-request metrics that inferperf measures, in the order AIPerf's JSON lists
/// them (the CSV sorts them by tag). Request latency and time to first token start at the
/// send; Effective Latency starts at the scheduled send (inferperf's latency) and
/// Credit-to-Start is how late the send was — AIPerf's credit is the moment a request may go.
const REQUEST_METRICS: [RequestMetric; 23] = [
    per_request(
        "request_latency",
        "Request Latency",
        "ms",
        Figure::Service,
        Runs::All,
    ),
    per_request(
        "time_to_first_token",
        "Time to First Token",
        "ms",
        Figure::FirstToken,
        Runs::Streaming,
    ),
    per_request(
        "time_to_second_token",
        "Time to Second Token",
        "ms",
        Figure::SecondToken,
        Runs::Streaming,
    ),
    per_request(
        "inter_token_latency",
        "Inter Token Latency",
        "ms",
        Figure::InterToken,
        Runs::Streaming,
    ),
    per_request(
        "output_token_throughput_per_user",
        "Output Token Throughput Per User",
        "tokens/sec/user",
        Figure::PerUser,
        Runs::Streaming,
    ),
    per_request(
        "output_sequence_length",
        "Output Sequence Length",
        "tokens",
        Figure::OutputTokens,
        Runs::All,
    ),
    per_request(
        "input_sequence_length",
        "Input Sequence Length",
        "tokens",
        Figure::InputTokens,
        Runs::All,
    ),
    per_request(
        "inter_chunk_latency",
        "Inter Chunk Latency",
        "ms",
        Figure::InterChunk,
        Runs::Streaming,
    ),
    per_request(
        "http_req_receiving",
        "HTTP Receiving",
        "ms",
        Figure::Receiving,
        Runs::All,
    ),
    per_request(
        "http_req_connecting",
        "HTTP Connecting",
        "ms",
        Figure::Connecting,
        Runs::All,
    ),
    per_request(
        "http_req_sending",
        "HTTP Sending",
        "ms",
        Figure::Sending,
        Runs::All,
    ),
    per_request(
        "http_req_waiting",
        "HTTP Waiting (TTFB)",
        "ms",
        Figure::Waiting,
        Runs::All,
    ),
    per_request(
        "http_req_duration",
        "HTTP Duration (excl. conn)",
        "ms",
        Figure::Service,
        Runs::All,
    ),
    per_request(
        "credit_to_start_latency",
        "Credit-to-Start Latency",
        "ms",
        Figure::SendLag,
        Runs::All,
    ),
    per_request(
        "effective_latency",
        "Effective Latency (CO-aware)",
        "ms",
        Figure::Latency,
        Runs::All,
    ),
    per_request(
        "time_to_first_output_token",
        "Time to First Output Token",
        "ms",
        Figure::FirstOutput,
        Runs::Streaming,
    ),
    per_request(
        "reasoning_token_count",
        "Reasoning Token Count",
        "tokens",
        Figure::ReasoningTokens,
        Runs::All,
    ),
    per_request(
        "output_token_count",
        "Output Token Count",
        "tokens",
        Figure::ContentTokens,
        Runs::All,
    ),
    per_request(
        "usage_prompt_tokens",
        "Usage Prompt Tokens",
        "tokens",
        Figure::UsagePromptTokens,
        Runs::All,
    ),
    per_request(
        "usage_prompt_cache_read_tokens",
        "Usage Prompt Cache Read Tokens",
        "tokens",
        Figure::UsagePromptCacheRead,
        Runs::All,
    ),
    per_request(
        "usage_prompt_tokens_diff_pct",
        "Usage Prompt Diff",
        "%",
        Figure::UsagePromptDiff,
        Runs::All,
    ),
    per_request(
        "usage_completion_tokens_diff_pct",
        "Usage Completion Diff",
        "%",
        Figure::UsageCompletionDiff,
        Runs::All,
    ),
    per_request(
        "osl_mismatch_diff_pct",
        "OSL Mismatch Diff",
        "%",
        Figure::OslMismatchDiff,
        Runs::All,
    ),
];

/// The per-request metrics with values in `w` (the streaming ones only when streaming).
pub(super) fn request_rows<'w>(
    settings: &Settings,
    w: &'w WindowStats,
) -> Vec<(&'static RequestMetric, Stats<'w>)> {
    REQUEST_METRICS
        .iter()
        .filter(|m| match m.runs {
            Runs::All => true,
            Runs::Streaming => settings.streaming,
        })
        .filter_map(|m| m.figure.stats(w).map(|stats| (m, stats)))
        .collect()
}

/// `Header (unit)`, without the unit when it is `count` or `requests`, as AIPerf's CSV
/// names a row.
fn row_name(header: &str, unit: &str) -> String {
    match unit {
        "count" | "requests" => header.to_string(),
        _ => format!("{header} ({unit})"),
    }
}

/// `profile_export_aiperf.csv`: per-request metrics sorted by tag, an empty line, the level
/// metrics sorted by tag; numbers with two decimals; lines end in `\r\n`.
pub fn csv(settings: &Settings, w: &WindowStats) -> String {
    let mut header = vec!["Metric"];
    header.extend(CSV_STATS);
    let mut out = csv_row(&header);
    let mut rows = request_rows(settings, w);
    rows.sort_by_key(|(m, _)| m.tag);
    for (m, stats) in rows {
        let mut row = vec![row_name(m.header, m.unit)];
        row.extend(
            CSV_STATS
                .iter()
                .map(|&stat| format!("{:.2}", stat_value(&stats, stat))),
        );
        out.push_str(&csv_row(&row));
    }
    out.push_str("\r\n");
    out.push_str(&csv_row(&["Metric", "Value"]));
    let mut metrics = level_metrics(w);
    metrics.sort_by_key(|m| m.tag);
    for m in metrics {
        out.push_str(&csv_row(&[
            row_name(m.header, m.unit),
            format!("{:.2}", m.value),
        ]));
    }
    out.push_str(&super::turns::csv_rows(w));
    out
}

/// One statistic by its CSV column name.
pub(super) fn stat_value(stats: &Stats<'_>, stat: &str) -> f64 {
    match stat {
        "avg" => stats.avg(),
        "min" => stats.min(),
        "max" => stats.max(),
        "sum" => stats.sum(),
        "std" => stats.std(),
        p => stats.percentile(p[1..].parse().unwrap_or(50.0)),
    }
}

/// What names the run in AIPerf's JSON: its id and the command line that started it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunLabels {
    /// Twelve hex digits, as AIPerf's benchmark ids are.
    pub benchmark_id: String,
    pub cli_command: String,
    /// Where the artifacts go.
    pub artifact_dir: String,
}

/// `profile_export_aiperf.json`: AIPerf's header, every metric with a value as
/// `{unit, avg, p1…p99, min, max, std, count, sum}` (per request) or `{unit, avg}` (per
/// level), and the run's settings, outcome, errors and times.
pub fn json(settings: &Settings, r: &LevelResult, labels: &RunLabels) -> Json {
    let w = &r.merged;
    let mut pairs: Vec<(String, Json)> = vec![
        ("schema_version".into(), Json::from(SCHEMA_VERSION)),
        ("aiperf_version".into(), Json::from(AIPERF_VERSION)),
        (
            "generated_by".into(),
            Json::from(format!("inferperf {}", env!("CARGO_PKG_VERSION"))),
        ),
        (
            "benchmark_id".into(),
            Json::from(labels.benchmark_id.as_str()),
        ),
    ];
    let mut metrics: Vec<(&str, Json)> = request_rows(settings, w)
        .into_iter()
        .map(|(m, stats)| (m.tag, distribution_json(m.unit, &stats)))
        .collect();
    metrics.extend(level_metrics(w).into_iter().map(|m| {
        let value = object([("unit", Json::from(m.unit)), ("avg", Json::from(m.value))]);
        (m.tag, value)
    }));
    // AIPerf lists its headline metrics first, then the run, then the others.
    let (first, rest): (Vec<_>, Vec<_>) = metrics
        .into_iter()
        .partition(|(tag, _)| HEADLINE_ORDER.contains(tag));
    let mut first = first;
    first.sort_by_key(|(tag, _)| HEADLINE_ORDER.iter().position(|t| t == tag));
    pairs.extend(first.into_iter().map(|(tag, v)| (tag.to_string(), v)));
    let interrupted = r.end == LevelEnd::Interrupted;
    let counted_with = w.tokens.as_deref().and_then(|t| t.counted_with.as_deref());
    pairs.push((
        "input_config".into(),
        input_config(settings, r.level, labels, counted_with),
    ));
    pairs.push((
        "run_info".into(),
        object([
            ("benchmark_id", Json::from(labels.benchmark_id.as_str())),
            ("trial", Json::from(0u64)),
            ("cli_command", Json::from(labels.cli_command.as_str())),
        ]),
    ));
    pairs.push(("was_cancelled".into(), Json::from(interrupted)));
    pairs.push(("is_complete".into(), Json::from(!interrupted)));
    pairs.push(("error_summary".into(), error_summary(w)));
    if let Some(log) = &r.requests {
        let bounds = log.window_boundaries();
        if let (Some(&start), Some(&end)) = (bounds.first(), bounds.last()) {
            pairs.push(("start_time".into(), Json::from(iso_utc(start))));
            pairs.push(("end_time".into(), Json::from(iso_utc(end))));
        }
    }
    pairs.extend(rest.into_iter().map(|(tag, v)| (tag.to_string(), v)));
    if let Some(t) = aiperf_telemetry::telemetry_data(settings, w) {
        pairs.push(("telemetry_data".into(), t));
    }
    Json::Object(pairs)
}

/// The metrics AIPerf's JSON lists before `input_config`, in its order.
const HEADLINE_ORDER: [&str; 16] = [
    "request_throughput",
    "request_latency",
    "request_count",
    "time_to_first_token",
    "time_to_second_token",
    "inter_token_latency",
    "output_token_throughput",
    "output_token_throughput_per_user",
    "output_sequence_length",
    "input_sequence_length",
    "inter_chunk_latency",
    "benchmark_duration",
    "total_isl",
    "total_osl",
    "goodput",
    "good_request_count",
];

pub(super) fn distribution_json(unit: &str, stats: &Stats<'_>) -> Json {
    let mut pairs = vec![
        ("unit".to_string(), Json::from(unit)),
        ("avg".to_string(), Json::from(stats.avg())),
    ];
    for p in LLM_PERCENTILES {
        pairs.push((format!("p{p}"), Json::from(stats.percentile(p))));
    }
    pairs.push(("min".into(), Json::from(stats.min())));
    pairs.push(("max".into(), Json::from(stats.max())));
    pairs.push(("std".into(), Json::from(stats.std())));
    pairs.push(("count".into(), Json::from(stats.count())));
    pairs.push(("sum".into(), Json::from(stats.sum())));
    Json::Object(pairs)
}

/// The run's settings under AIPerf's section names (`models`, `endpoint`, `datasets`,
/// `phases`, `artifacts`); only what inferperf has.
pub(super) fn input_config(
    settings: &Settings,
    level: LoadLevel,
    labels: &RunLabels,
    counted_with: Option<&str>,
) -> Json {
    let mut endpoint = vec![(
        "urls",
        Json::Array(vec![Json::from(format!("http://{}", settings.url))]),
    )];
    let mut datasets = Vec::new();
    if let (Some(llm), Some(kind)) = (&settings.llm, settings.llm_endpoint()) {
        endpoint.push(("type", Json::from(kind.kind_name())));
        // The record holds `synthetic` or the prompts file's path.
        let source = match llm.prompt_source.as_str() {
            "synthetic" => "synthetic",
            _ => "file",
        };
        let osl = match llm.output_tokens_mean {
            Some(mean) => object([
                ("mean", Json::from(mean as f64)),
                ("stddev", Json::from(llm.output_tokens_stddev)),
            ]),
            None => Json::Null,
        };
        datasets.push(object([
            ("name", Json::from("main")),
            ("type", Json::from(source)),
            ("entries", Json::from(llm.num_prompts as u64)),
            (
                "prompts",
                object([
                    (
                        "isl",
                        object([
                            ("mean", Json::from(llm.input_tokens_mean as f64)),
                            ("stddev", Json::from(llm.input_tokens_stddev)),
                        ]),
                    ),
                    ("osl", osl),
                ]),
            ),
        ]));
    }
    if settings.streaming {
        endpoint.push(("streaming", Json::from(true)));
    }
    let mut phase = vec![
        ("name", Json::from("profiling")),
        ("kind", Json::from("profiling")),
        ("type", Json::from(phase_type(settings, level))),
    ];
    if let Some(n) = settings.request_count {
        phase.push(("requests", Json::from(n)));
    }
    phase.push(match level {
        LoadLevel::Concurrency(c) => ("concurrency", Json::from(c)),
        LoadLevel::Rate(rate) => ("rate", Json::from(rate)),
    });
    object([
        (
            "models",
            object([(
                "items",
                Json::Array(vec![object([(
                    "name",
                    Json::from(settings.model_name.as_str()),
                )])]),
            )]),
        ),
        ("endpoint", object(endpoint)),
        ("datasets", Json::Array(datasets)),
        (
            "tokenizer",
            object([
                (
                    "name",
                    settings
                        .llm
                        .as_ref()
                        .and_then(|l| l.tokenizer.as_deref())
                        .map_or(Json::Null, Json::from),
                ),
                ("counted_with", counted_with.map_or(Json::Null, Json::from)),
            ]),
        ),
        ("phases", Json::Array(vec![object(phase)])),
        (
            "artifacts",
            object([("dir", Json::from(labels.artifact_dir.as_str()))]),
        ),
    ])
}

/// AIPerf's name of the phase's timing: `concurrency`, or the arrival pattern of a rate.
fn phase_type(settings: &Settings, level: LoadLevel) -> &'static str {
    match (level, &settings.load) {
        (LoadLevel::Concurrency(_), _) => "concurrency",
        (_, LoadSettings::RequestRate { distribution, .. }) => match distribution.as_str() {
            "poisson" => "poisson",
            "gamma" => "gamma",
            _ => "constant",
        },
        (_, LoadSettings::FixedSchedule) => "fixed_schedule",
        (_, _) => "request_rate",
    }
}

/// AIPerf's `error_summary`: per kind of error, its details and count; the requests
/// cancelled on purpose are listed as AIPerf lists them (`RequestCancellationError`, 499),
/// though inferperf counts them apart from its errors.
fn error_summary(w: &WindowStats) -> Json {
    let mut errors = errors_by_kind(w);
    if w.cancelled > 0 {
        let details = error_details(&crate::backend::ErrorKind::Cancelled, None);
        errors.push(object([
            ("error_details", details),
            ("count", Json::from(w.cancelled)),
        ]));
    }
    Json::Array(errors)
}

/// Each kind of error with its details and count.
fn errors_by_kind(w: &WindowStats) -> Vec<Json> {
    let errors = w
        .errors
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(kind, &count)| {
            let message = w.notes.iter().find(|n| n.kind == *kind);
            let details = error_details(kind, message.map(|n| n.text.clone()));
            object([("error_details", details), ("count", Json::from(count))])
        });
    errors.collect()
}

/// AIPerf's details of an error: the HTTP code when there is one (499 for a request
/// cancelled on purpose, as AIPerf codes it), its type and the first message.
pub(super) fn error_details(kind: &crate::backend::ErrorKind, message: Option<String>) -> Json {
    use crate::backend::ErrorKind;
    let mut details = Vec::new();
    match kind {
        ErrorKind::HttpStatus(code) => details.push(("code", Json::from(*code as u64))),
        ErrorKind::Cancelled => details.push(("code", Json::from(499u64))),
        _ => {}
    }
    let (kind_name, default) = match kind {
        ErrorKind::Cancelled => (
            "RequestCancellationError".to_string(),
            "Request cancelled after being sent".to_string(),
        ),
        other => (other.to_string(), other.to_string()),
    };
    details.push(("type", Json::from(kind_name)));
    details.push(("message", Json::from(message.unwrap_or(default))));
    object(details)
}

#[cfg(test)]
#[path = "aiperf_tests.rs"]
mod tests;
