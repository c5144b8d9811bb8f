//! GenAI-Perf's exports of one level, `profile_export_genai_perf.csv` and
//! `profile_export_genai_perf.json`, in the layout, names, order and number format of
//! GenAI-Perf (`genai_perf/export_data/csv_exporter.py`, `json_exporter.py`,
//! `metrics/llm_metrics.py`, `metrics/statistics.py`), so that a script reading GenAI-Perf's
//! files reads these. The console table (`llm::console`) shows the same rows.

use crate::measure::level::LoadLevel;
use crate::measure::tokens::GoodputRule;
use crate::measure::window::WindowStats;
use crate::results::Settings;

use super::json::{object, Json};
use super::{csv_row, grouped_two_decimals, Figure, LLM_PERCENTILES};

/// The statistics columns of the CSV's first block, after `Metric`.
const CSV_STATS: [&str; 12] = [
    "avg", "min", "max", "p99", "p95", "p90", "p75", "p50", "p25", "p10", "p5", "p1",
];

/// A per-request metric as GenAI-Perf names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestMetric {
    /// The key in the JSON (`time_to_first_token`).
    pub key: &'static str,
    /// The row name in the CSV and on the console.
    pub name: &'static str,
    pub unit: &'static str,
    pub figure: Figure,
    /// Shown only when the run streams (GenAI-Perf skips them otherwise).
    pub streaming_only: bool,
}

const fn metric(
    key: &'static str,
    name: &'static str,
    unit: &'static str,
    figure: Figure,
    streaming_only: bool,
) -> RequestMetric {
    RequestMetric {
        key,
        name,
        unit,
        figure,
        streaming_only,
    }
}

/// GenAI-Perf's per-request metrics of a text generation, in its row order (its
/// `LLMMetrics.request_metrics`: the first two LLM metrics, request latency, the rest).
pub const GENERATION_METRICS: [RequestMetric; 7] = [
    metric(
        "time_to_first_token",
        "Time To First Token (ms)",
        "ms",
        Figure::FirstToken,
        true,
    ),
    metric(
        "time_to_second_token",
        "Time To Second Token (ms)",
        "ms",
        Figure::SecondToken,
        true,
    ),
    REQUEST_LATENCY,
    metric(
        "inter_token_latency",
        "Inter Token Latency (ms)",
        "ms",
        Figure::InterToken,
        true,
    ),
    metric(
        "output_token_throughput_per_user",
        "Output Token Throughput Per User (tokens/sec/user)",
        "tokens/sec/user",
        Figure::PerUser,
        true,
    ),
    metric(
        "output_sequence_length",
        "Output Sequence Length (tokens)",
        "tokens",
        Figure::OutputTokens,
        false,
    ),
    metric(
        "input_sequence_length",
        "Input Sequence Length (tokens)",
        "tokens",
        Figure::InputTokens,
        false,
    ),
];

/// Request latency, from the scheduled send (inferperf's rule; the actual send in closed
/// loop), the one per-request metric of every endpoint.
const REQUEST_LATENCY: RequestMetric = metric(
    "request_latency",
    "Request Latency (ms)",
    "ms",
    Figure::Latency,
    false,
);

/// The per-request metrics the CSV and the console show for this run: every generation
/// metric (the streaming ones only when streaming), or request latency for embeddings.
pub fn shown_metrics(settings: &Settings) -> Vec<RequestMetric> {
    if !generates(settings) {
        return vec![REQUEST_LATENCY];
    }
    GENERATION_METRICS
        .into_iter()
        .filter(|m| settings.streaming || !m.streaming_only)
        .collect()
}

/// Whether the run's endpoint generates text (not embeddings).
fn generates(settings: &Settings) -> bool {
    settings
        .llm_endpoint()
        .is_none_or(|endpoint| endpoint.generates())
}

/// A metric of the whole level, one value: (JSON key, row name, JSON unit, value).
pub struct SystemMetric {
    pub key: &'static str,
    pub name: &'static str,
    pub unit: &'static str,
    pub value: f64,
}

/// A system metric's row: GenAI-Perf's key, row name and unit, the runs that have it
/// (generating text, and the level's windows) and its value.
struct SystemRow {
    key: &'static str,
    name: &'static str,
    unit: &'static str,
    shown: fn(bool, &WindowStats) -> bool,
    value: fn(&WindowStats) -> f64,
}

/// GenAI-Perf's system metrics in its row order: output token throughput (text
/// generation), request throughput, request goodput (with `--slo` limits on generation
/// figures) and request count. Throughputs are per second of the measured windows.
const SYSTEM_ROWS: [SystemRow; 4] = [
    SystemRow {
        key: "output_token_throughput",
        name: "Output Token Throughput (tokens/sec)",
        unit: "tokens/sec",
        shown: |generates, _| generates,
        value: WindowStats::token_throughput,
    },
    SystemRow {
        key: "request_throughput",
        name: "Request Throughput (per sec)",
        unit: "requests/sec",
        shown: |_, _| true,
        value: WindowStats::throughput,
    },
    SystemRow {
        key: "request_goodput",
        name: "Request Goodput (per sec)",
        unit: "requests/sec",
        shown: |_, w| w.goodput.is_set(),
        value: WindowStats::goodput,
    },
    SystemRow {
        key: "request_count",
        name: "Request Count (count)",
        unit: "count",
        shown: |_, _| true,
        value: |w| w.ok as f64,
    },
];

/// The system metrics `w` has, in GenAI-Perf's row order.
pub fn system_metrics(settings: &Settings, w: &WindowStats) -> Vec<SystemMetric> {
    let generates = generates(settings);
    let rows = SYSTEM_ROWS.iter().filter(|row| (row.shown)(generates, w));
    rows.map(|row| SystemMetric {
        key: row.key,
        name: row.name,
        unit: row.unit,
        value: (row.value)(w),
    })
    .collect()
}

/// A statistic of a metric as GenAI-Perf prints it (`1,234.56`), `N/A` when the metric has
/// no value (as GenAI-Perf's `fetch_stat` says of a metric it could not compute).
pub fn stat_cell(m: &RequestMetric, w: &WindowStats, stat: &str) -> String {
    let Some(stats) = m.figure.stats(w) else {
        return "N/A".to_string();
    };
    let value = match stat {
        "avg" => stats.avg(),
        "min" => stats.min(),
        "max" => stats.max(),
        p => match p.strip_prefix('p').and_then(|n| n.parse::<f64>().ok()) {
            Some(p) => stats.percentile(p),
            None => return "N/A".to_string(),
        },
    };
    grouped_two_decimals(value)
}

/// `profile_export_genai_perf.csv`: the per-request metrics, an empty line, the system
/// metrics; lines end in `\r\n` as Python's `csv` module writes them.
pub fn csv(settings: &Settings, w: &WindowStats) -> String {
    let mut header = vec!["Metric"];
    header.extend(CSV_STATS);
    let mut out = csv_row(&header);
    for m in shown_metrics(settings) {
        let mut row = vec![m.name.to_string()];
        row.extend(CSV_STATS.iter().map(|stat| stat_cell(&m, w, stat)));
        out.push_str(&csv_row(&row));
    }
    out.push_str("\r\n");
    out.push_str(&csv_row(&["Metric", "Value"]));
    for m in system_metrics(settings, w) {
        out.push_str(&csv_row(&[
            m.name.to_string(),
            grouped_two_decimals(m.value),
        ]));
    }
    out.push_str(&super::turns::csv_rows(w));
    out
}

/// `profile_export_genai_perf.json`: every metric with a value, in the order GenAI-Perf's
/// `Statistics` lists them, then `input_config`.
pub fn json(settings: &Settings, level: LoadLevel, w: &WindowStats) -> Json {
    let system = system_metrics(settings, w);
    let single = |key: &str| {
        system
            .iter()
            .find(|m| m.key == key)
            .map(|m| (m.key.to_string(), single_value(m.unit, m.value)))
    };
    let distribution = |m: &RequestMetric| {
        m.figure
            .stats(w)
            .map(|stats| (m.key.to_string(), distribution_json(m.unit, &stats)))
    };
    let metrics: Vec<RequestMetric> = match generates(settings) {
        true => GENERATION_METRICS.to_vec(),
        false => vec![REQUEST_LATENCY],
    };
    let by_key = |key: &str| metrics.iter().find(|m| m.key == key).and_then(distribution);
    let order = [
        single("request_throughput"),
        by_key("request_latency"),
        single("request_goodput"),
        single("request_count"),
        by_key("time_to_first_token"),
        by_key("time_to_second_token"),
        by_key("inter_token_latency"),
        single("output_token_throughput"),
        by_key("output_token_throughput_per_user"),
        by_key("output_sequence_length"),
        by_key("input_sequence_length"),
    ];
    let mut pairs: Vec<(String, Json)> = order.into_iter().flatten().collect();
    pairs.push(("input_config".into(), input_config(settings, level, w)));
    Json::Object(pairs)
}

/// `{unit, avg}`, as GenAI-Perf writes a system metric.
fn single_value(unit: &str, value: f64) -> Json {
    object([("unit", Json::from(unit)), ("avg", Json::from(value))])
}

/// `{unit, avg, p1 … p99, min, max, std}`, as GenAI-Perf writes a per-request metric.
fn distribution_json(unit: &str, stats: &super::Stats<'_>) -> Json {
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
    Json::Object(pairs)
}

/// The run's settings under the section names of GenAI-Perf's configuration (`model_names`,
/// `endpoint`, `perf_analyzer.stimulus`, `input`, `output`); only what inferperf has.
fn input_config(settings: &Settings, level: LoadLevel, w: &WindowStats) -> Json {
    let stimulus = match level {
        LoadLevel::Concurrency(c) => object([("concurrency", Json::from(c))]),
        LoadLevel::Rate(r) => object([("request_rate", Json::from(r))]),
    };
    let mut endpoint = vec![
        ("service_kind", Json::from("openai")),
        ("streaming", Json::from(settings.streaming)),
        ("url", Json::from(settings.url.as_str())),
    ];
    let mut input = vec![("goodput", goodput_json(&w.goodput))];
    if let (Some(llm), Some(kind)) = (&settings.llm, settings.llm_endpoint()) {
        endpoint.insert(0, ("type", Json::from(kind.kind_name())));
        let path = kind.path_of(&settings.model_name);
        endpoint.insert(1, ("custom", Json::from(path)));
        let extra = settings
            .llm_extra_inputs()
            .into_iter()
            .map(|(k, v)| (k, Json::from(&v)));
        input.push(("extra", Json::Object(extra.collect())));
        input.push(("num_dataset_entries", Json::from(llm.num_prompts as u64)));
        input.push((
            "output_tokens",
            object([
                (
                    "mean",
                    llm.output_tokens_mean.map_or(Json::Null, Json::from),
                ),
                ("deterministic", Json::from(llm.output_tokens_deterministic)),
                ("stddev", Json::from(llm.output_tokens_stddev)),
            ]),
        ));
        input.push(("random_seed", Json::from(settings.seed)));
        input.push((
            "synthetic_tokens",
            object([
                ("mean", Json::from(llm.input_tokens_mean)),
                ("stddev", Json::from(llm.input_tokens_stddev)),
            ]),
        ));
    }
    let artifact_dir = settings
        .llm
        .as_ref()
        .and_then(|l| l.artifact_dir.as_deref())
        .map_or(Json::Null, Json::from);
    object([
        (
            "model_names",
            Json::Array(vec![Json::from(settings.model_name.as_str())]),
        ),
        ("endpoint", object(endpoint)),
        (
            "perf_analyzer",
            object([
                ("stimulus", stimulus),
                (
                    "stability_percentage",
                    Json::from(settings.stability_percentage),
                ),
                (
                    "warmup_request_count",
                    Json::from(settings.warmup_request_count),
                ),
            ]),
        ),
        ("input", object(input)),
        ("output", object([("artifact_directory", artifact_dir)])),
        (
            "tokenizer",
            object([
                (
                    "name",
                    (settings.llm.as_ref().and_then(|l| l.tokenizer.as_deref()))
                        .map_or(Json::Null, Json::from),
                ),
                (
                    "counted_with",
                    (w.tokens.as_deref().and_then(|t| t.counted_with.as_deref()))
                        .map_or(Json::Null, Json::from),
                ),
            ]),
        ),
    ])
}

/// The goodput limits, in ms, under GenAI-Perf's `--goodput` keys.
fn goodput_json(rule: &GoodputRule) -> Json {
    let limits = [
        ("time_to_first_token", rule.ttft_ns),
        ("inter_token_latency", rule.itl_ns),
        ("request_latency", rule.latency_ns),
    ];
    object(
        limits
            .into_iter()
            .filter_map(|(key, ns)| ns.map(|ns| (key, Json::from(ns as f64 / 1e6)))),
    )
}

#[cfg(test)]
#[path = "genai_perf_tests.rs"]
mod tests;
