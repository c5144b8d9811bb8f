//! The console report: the measurement settings before a run, one block per load level as
//! it finishes, and the throughput-vs-latency summary at the end. The layout is
//! perf_analyzer's, line for line where it has one; what inferperf adds (error counts,
//! stability warnings, per-window detail with `-v`) comes as extra lines that do not change
//! the ones perf_analyzer users parse.

use crate::backend::capabilities;
use crate::config::{format_rate, LoadLevel};
use crate::config::{Config, Distribution, LoadMode, MeasurementMode, Protocol};
use crate::measure::level::{LevelEnd, LevelResult};
use crate::measure::window::WindowStats;
use crate::model::ModelSpec;

use super::format::{
    format_throughput, level_name_value, percentile_label, reported_percentiles, stabilizing_label,
    usec,
};
use super::{answers, server};

/// Joins report lines, each ending in a newline.
fn join_lines(lines: &[String]) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// perf_analyzer's `*** Measurement Settings ***` block, ending in an empty line.
pub fn settings_block(cfg: &Config, service_kind: &str) -> String {
    let mut lines = vec![
        "*** Measurement Settings ***".to_string(),
        format!("  Batch size: {}", cfg.batch_size),
        format!("  Service Kind: {service_kind}"),
    ];
    // Load over time is cut into 1-second buckets: windows and limits do not apply.
    if cfg.load.timeline().is_none() {
        lines.extend(window_settings(cfg));
        lines.push(format!(
            "  Latency limit: {} msec",
            crate::number::readable(cfg.latency_threshold_ms.unwrap_or(0.0))
        ));
    }
    lines.extend(load_limit(cfg));
    lines.extend(search_settings(cfg));
    lines.extend(super::replicas::settings_line(cfg));
    // The client is asynchronous whatever --sync/--async say (see --help).
    lines.push("  Using asynchronous calls for inference".to_string());
    if let Some(tls) = &cfg.tls {
        lines.push("  Using TLS to the server".to_string());
        lines.extend(tls.warnings().into_iter().map(|w| format!("  {w}")));
    }
    lines.push(String::new());
    join_lines(&lines)
}

/// The search and the SLO, when given.
fn search_settings(cfg: &Config) -> Vec<String> {
    let mut lines = Vec::new();
    if !cfg.slo.is_empty() {
        lines.push(format!(
            "  SLO: {} (judged on each level's reported windows)",
            slo_text(cfg)
        ));
    }
    if cfg.binary_search {
        let (start, end, step) = match &cfg.load {
            LoadMode::RequestRate { range, .. } => (
                format_rate(range.start),
                format_rate(range.end),
                format_rate(range.step),
            ),
            _ => {
                let c = cfg.concurrency;
                (c.start.to_string(), c.end.to_string(), c.step.to_string())
            }
        };
        lines.push(format!(
            "  Binary search between {start} and {end}, to within {step}"
        ));
    }
    lines
}

/// How windows are cut and judged: the mode, the stabilizing latency and the window size.
fn window_settings(cfg: &Config) -> Vec<String> {
    if let Some(n) = cfg.request_count {
        return vec![format!(
            "  Using exactly {n} requests in a single window (no stabilization)"
        )];
    }
    if let Some(duration) = cfg.benchmark_duration {
        return vec![format!(
            "  Using a single window of {} msec (--benchmark-duration, no stabilization)",
            duration.as_millis()
        )];
    }
    if matches!(cfg.load, LoadMode::FixedSchedule | LoadMode::Periodic(_)) {
        return vec![
            "  Measured in one window from the first request to the last answer (no stabilization)"
                .into(),
        ];
    }
    let stabilizing = match cfg.percentile {
        Some(p) => format!("p{p}"),
        None => "average".to_string(),
    };
    let (mode, size) = match cfg.measurement_mode {
        MeasurementMode::TimeWindows => (
            "time_windows",
            format!(
                "  Measurement window: {} msec",
                cfg.measurement_interval.as_millis()
            ),
        ),
        MeasurementMode::CountWindows => (
            "count_windows",
            format!(
                "  Minimum number of samples in each window: {}",
                cfg.measurement_request_count
            ),
        ),
    };
    vec![
        format!("  Using \"{mode}\" mode for stabilization"),
        format!("  Stabilizing using {stabilizing} latency and throughput"),
        size,
    ]
}

/// The highest concurrency the sweep may reach (`end` 0 means no fixed limit).
fn load_limit(cfg: &Config) -> Vec<String> {
    let range = cfg.concurrency;
    let mut lines = match &cfg.load {
        LoadMode::Concurrency if range.end == 0 => {
            vec!["  Concurrency limit: none (increase until the latency limit is reached)".into()]
        }
        LoadMode::Concurrency => vec![format!(
            "  Concurrency limit: {} concurrent requests",
            range.start.max(range.end)
        )],
        LoadMode::RequestRate {
            range,
            distribution,
        } => {
            let limit = match range.end {
                0.0 => "none (increase until the latency limit is reached)".to_string(),
                end => format!("{} requests per seconds", format_rate(range.start.max(end))),
            };
            vec![
                format!("  Request Rate limit: {limit}"),
                format!(
                    "  Using {} distribution on request generation",
                    distribution_name(*distribution)
                ),
            ]
        }
        LoadMode::Intervals { gaps } => vec![format!(
            "  Using the {} request intervals of --request-intervals, looped",
            gaps.len()
        )],
        LoadMode::FixedSchedule => {
            vec!["  Replaying the input data's timestamps once (--fixed-schedule)".into()]
        }
        LoadMode::Periodic(p) => vec![format!(
            "  Periodic concurrency: {} streamed requests, then {} more each time every request of the latest set has had {} answers, up to {} in all",
            p.start, p.step, p.period, p.end
        )],
        LoadMode::Timeline { plan, distribution } => {
            let mut lines = vec![format!(
                "  Load over time: {}, reported per second",
                plan.describe()
            )];
            if plan.kind == crate::config::TimelineKind::Rate {
                lines.push(format!(
                    "  Using {} distribution on request generation",
                    distribution_name(*distribution)
                ));
            }
            lines
        }
    };
    if let Some(cap) = cfg.max_concurrency {
        lines.push(format!(
            "  At most {cap} requests in flight (--max-concurrency)"
        ));
    }
    lines
}

fn distribution_name(distribution: Distribution) -> &'static str {
    match distribution {
        Distribution::Constant => "constant",
        Distribution::Poisson => "poisson",
    }
}

/// The report of one load level: heading, client statistics, errors, per-window detail
/// (with `-v`) and a warning when the numbers are not from a stable measurement.
pub fn level_block(cfg: &Config, model: &ModelSpec, r: &LevelResult) -> String {
    let w = &r.merged;
    let mut lines = vec![level_heading(cfg, &r.level), "  Client: ".to_string()];
    lines.extend(client_lines(cfg, model, w));
    lines.extend(super::replicas::replica_lines(cfg, w));
    let open_loop = matches!(r.level, LoadLevel::Rate(_));
    if let LoadLevel::Rate(rate) = r.level {
        lines.extend(super::open_loop::open_loop_lines(cfg, rate, w));
    }
    lines.extend(error_line(w));
    lines.extend(answers::note_lines(r));
    lines.extend(server::client_cost_lines(cfg, w, open_loop));
    if let Some(stats) = &w.server {
        lines.extend(server::server_lines(stats));
        lines.extend(super::replicas::first_server_note(cfg));
    }
    if let (Some(metrics_cfg), Some(metrics)) = (&cfg.metrics, &w.metrics) {
        lines.extend(super::metrics::metrics_lines(metrics_cfg, metrics));
    }
    // The split sets one server's figures against every server's latency: not with several.
    if cfg.urls.len() < 2 {
        lines.extend(server::time_split_line(w));
    }
    if cfg.verbose >= 1 {
        lines.extend(window_lines(cfg, &r.windows));
    }
    lines.extend(end_line(cfg, r));
    join_lines(&lines)
}

/// `Request concurrency: 4` or `Request Rate: 100` (or the sets of a periodic run).
fn level_heading(cfg: &Config, level: &LoadLevel) -> String {
    if let LoadMode::Periodic(p) = cfg.load {
        return format!(
            "Periodic concurrency: {}:{}:{} (a new set every {} answers)",
            p.start, p.end, p.step, p.period
        );
    }
    match level {
        LoadLevel::Concurrency(c) => format!("Request concurrency: {c}"),
        LoadLevel::Rate(rate) => format!("Request Rate: {}", format_rate(*rate)),
    }
}

/// Request count, throughput, latency figures (every answer's, when streaming) and the
/// protocol time split; for an LLM run, GenAI-Perf's table in place of the latency lines.
fn client_lines(cfg: &Config, model: &ModelSpec, w: &WindowStats) -> Vec<String> {
    let mut lines = vec![
        format!("    Request count: {}", w.ok),
        format!(
            "    Throughput: {} infer/sec",
            format_throughput(w.throughput())
        ),
    ];
    lines.extend(answers::response_throughput_line(model, w));
    if model.is_sequence() {
        lines.push(format!(
            "    Sequences/s: {} ({} sequences ended)",
            format_throughput(w.sequence_throughput()),
            w.sequences_ended
        ));
    }
    if cfg.llm().is_some() {
        // GenAI-Perf's table stands for the latency lines of a tensor run.
        lines.extend(super::llm::console::llm_lines(cfg, w));
        return lines;
    }
    lines.push(format!(
        "    Avg latency: {} usec (standard deviation {} usec)",
        usec(w.mean_latency_us()),
        usec(w.std_latency_us())
    ));
    for p in reported_percentiles(cfg) {
        lines.push(format!(
            "    {}: {} usec",
            percentile_label(p),
            usec(w.percentile_us(p))
        ));
    }
    lines.extend(answers::stream_lines(cfg, w));
    lines.push(protocol_time_line(cfg, w));
    lines
}

/// `Avg HTTP time: …` or `Avg gRPC time: …`, split into client send/receive and the wait
/// for the answer; `-v` shows send and receive separately, as perf_analyzer does.
fn protocol_time_line(cfg: &Config, w: &WindowStats) -> String {
    let (send, recv, wait) = (
        usec(w.avg_send_us()),
        usec(w.avg_recv_us()),
        usec(w.avg_wait_us()),
    );
    // The protocol time starts at the actual send (in open loop the latency starts earlier,
    // at the scheduled send; in closed loop the two are the same).
    let total = usec(w.mean_service_us());
    let verbose = cfg.verbose >= 1;
    // An in-process call marshals like gRPC: the request is copied, the answer encoded.
    let api = capabilities(cfg.service_kind());
    let in_process = api.in_process.is_some();
    let marshals = cfg.protocol == Protocol::Grpc || in_process;
    let split = match (marshals, verbose) {
        (false, false) => {
            format!("send/recv {} usec + response wait {wait} usec", send + recv)
        }
        (false, true) => {
            format!("send {send} usec + response wait {wait} usec + receive {recv} usec")
        }
        (true, false) => format!(
            "(un)marshal request/response {} usec + response wait {wait} usec",
            send + recv
        ),
        (true, true) => {
            format!("marshal {send} usec + response wait {wait} usec + unmarshal {recv} usec")
        }
    };
    let name = match (api.call_name, cfg.protocol) {
        (Some(name), _) => name,
        (None, Protocol::Http) => "HTTP",
        (None, Protocol::Grpc) => "gRPC",
    };
    format!("    Avg {name} time: {total} usec ({split})")
}

/// `Errors: 12 (3.40%): HTTP 500 × 10, timeout × 2`, most frequent kind first; nothing when
/// every request succeeded.
fn error_line(w: &WindowStats) -> Option<String> {
    let count = w.error_count();
    if count == 0 {
        return None;
    }
    let mut kinds: Vec<_> = w.errors.iter().filter(|(_, &n)| n > 0).collect();
    kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let by_kind: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} × {n}")).collect();
    Some(format!(
        "    Errors: {count} ({:.2}%): {}",
        w.error_rate() * 100.0,
        by_kind.join(", ")
    ))
}

/// One line per measured window: its throughput and stabilizing latency.
fn window_lines(cfg: &Config, windows: &[WindowStats]) -> Vec<String> {
    let label = stabilizing_label(cfg);
    windows
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let mut line = format!(
                "    Window {}: {} infer/sec, {label} {} usec",
                i + 1,
                format_throughput(w.throughput()),
                usec(w.stabilizing_latency_us(cfg.percentile))
            );
            let errors = w.error_count();
            if errors > 0 {
                line.push_str(&format!(", {errors} errors"));
            }
            line
        })
        .collect()
}

/// Why the level ended, when that makes its numbers less than a stable measurement.
fn end_line(cfg: &Config, r: &LevelResult) -> Option<String> {
    match r.end {
        LevelEnd::Stable | LevelEnd::SingleWindow => None,
        LevelEnd::Unstable => Some(unstable_line(cfg, r)),
        LevelEnd::OverLatencyLimit => Some(over_limit_line(cfg, r)),
        LevelEnd::MissedSlo => Some(format!("  SLO missed: {}.", slo_text(cfg))),
        LevelEnd::Interrupted => Some(
            "  [WARNING] Interrupted: these numbers come from the windows finished before Ctrl-C."
                .to_string(),
        ),
    }
}

/// The warning for a level that never met the stability rule.
fn unstable_line(cfg: &Config, r: &LevelResult) -> String {
    let merged = r.merged.windows;
    let last = if merged == 1 {
        "the last window".to_string()
    } else {
        format!("the last {merged} windows")
    };
    let longer = match cfg.measurement_mode {
        MeasurementMode::TimeWindows => "a longer --measurement-interval",
        MeasurementMode::CountWindows => "a larger --measurement-request-count",
    };
    format!(
        "  [WARNING] Not stable after {} windows: these numbers come from {last}; try {longer} or a larger -s.",
        r.windows.len()
    )
}

/// The note for a level whose stabilizing latency reached `-l`: the highest value among
/// the reported windows, which is what the limit was checked against.
fn over_limit_line(cfg: &Config, r: &LevelResult) -> String {
    let reported = (r.merged.windows as usize).clamp(1, r.windows.len().max(1));
    let worst = r
        .windows
        .iter()
        .rev()
        .take(reported)
        .map(|w| w.stabilizing_latency_us(cfg.percentile))
        .fold(r.merged.stabilizing_latency_us(cfg.percentile), f64::max);
    format!(
        "  Latency limit reached: {} {} usec is at or above -l {} msec.",
        stabilizing_label(cfg),
        usec(worst),
        crate::number::readable(cfg.latency_threshold_ms.unwrap_or(0.0))
    )
}

/// The `--slo` conditions as the user wrote them.
fn slo_text(cfg: &Config) -> String {
    let conditions: Vec<String> = cfg.slo.iter().map(ToString::to_string).collect();
    conditions.join(", ")
}

/// perf_analyzer's closing summary: one line of throughput and latency per level, in the
/// order they were measured; levels without a stable measurement are marked.
pub fn summary_block(cfg: &Config, results: &[LevelResult]) -> String {
    let latency_name = match cfg.percentile {
        Some(p) => format!("p{p}"),
        None => "Average".to_string(),
    };
    let mut lines = vec![format!(
        "Inferences/Second vs. Client {latency_name} Batch Latency"
    )];
    lines.extend(results.iter().map(|r| summary_line(cfg, r)));
    join_lines(&lines)
}

/// `Concurrency: 1, throughput: 19.6095 infer/sec, latency 50951 usec`.
fn summary_line(cfg: &Config, r: &LevelResult) -> String {
    let (name, value) = level_name_value(&r.level);
    let mark = match r.end {
        LevelEnd::Stable | LevelEnd::SingleWindow => "",
        LevelEnd::Unstable => " (unstable)",
        LevelEnd::OverLatencyLimit => " (over latency limit)",
        LevelEnd::MissedSlo => " (missed SLO)",
        LevelEnd::Interrupted => " (interrupted)",
    };
    let sequences = match r.merged.sequences_ended {
        0 => String::new(),
        _ => format!(
            ", {} Sequences/s",
            format_throughput(r.merged.sequence_throughput())
        ),
    };
    format!(
        "{name}: {value}, throughput: {} infer/sec{sequences}, latency {} usec{mark}",
        format_throughput(r.merged.throughput()),
        usec(r.merged.stabilizing_latency_us(cfg.percentile))
    )
}

#[cfg(test)]
#[path = "console_tests.rs"]
mod tests;
