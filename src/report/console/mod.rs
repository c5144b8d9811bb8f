//! The console report: the measurement settings before a run, one block per load level as
//! it finishes, and the throughput-vs-latency summary at the end. The layout is
//! perf_analyzer's, line for line where it has one; what inferperf adds (error counts,
//! stability warnings, per-window detail with `-v`) comes as extra lines that do not change
//! the ones perf_analyzer users parse.
//!
//! Beside the level block, the console's other blocks, one file each: the open loop's
//! send figures ([`open_loop`]), where the time went ([`server`]), the engine's and the
//! GPUs' account ([`engine`], [`gpu`]), each `-u` server ([`replicas`]), a search's end
//! ([`search`]), load over time ([`timeline`]) and `inferperf sweep`'s table ([`sweep`]).

pub mod engine;
pub mod gpu;
pub mod open_loop;
pub mod replicas;
pub mod search;
pub mod server;
pub mod sweep;
pub mod timeline;

use crate::apis::Capabilities;
use crate::measure::level::{LevelEnd, LevelResult, LoadLevel};
use crate::measure::timeline::Bucket;
use crate::measure::window::WindowStats;
use crate::results::{LoadSettings, SegmentRecord, Settings};
use inferperf_wire::error::RunResult;
use inferperf_wire::model::ModelSpec;

use super::format::{
    format_rate, format_throughput, level_name_value, percentile_label, reported_percentiles,
    stabilizing_label, usec,
};
use super::{answers, Entry, Measured, Origin, Reporter, Run, Sent};

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
pub fn settings_block(s: &Settings) -> String {
    let mut lines = vec![
        "*** Measurement Settings ***".to_string(),
        format!("  Batch size: {}", s.batch_size),
        format!("  Service Kind: {}", s.service_kind.to_uppercase()),
    ];
    // Load over time is cut into 1-second buckets: windows and limits do not apply.
    if !s.is_timeline() {
        lines.extend(window_settings(s));
        lines.push(format!(
            "  Latency limit: {} msec",
            inferperf_wire::number::readable(s.latency_threshold_ms.unwrap_or(0.0))
        ));
    }
    lines.extend(load_limit(s));
    lines.extend(command_line_line(s));
    lines.extend(search_settings(s));
    lines.extend(replicas::settings_line(s));
    // The client is asynchronous whatever --sync/--async say (see --help).
    lines.push("  Using asynchronous calls for inference".to_string());
    if s.tls.is_some() {
        lines.push("  Using TLS to the server".to_string());
        lines.extend(s.tls_warnings().into_iter().map(|w| format!("  {w}")));
    }
    lines.push(String::new());
    join_lines(&lines)
}

/// Whose defaults filled in what the command line left out, on an AIPerf line.
fn command_line_line(s: &Settings) -> Option<String> {
    let record = s.command_line.as_ref().filter(|c| c.is_aiperf())?;
    let because = record.because.as_deref().unwrap_or("an AIPerf flag");
    Some(format!(
        "  Command line: AIPerf's (it names {because}, which only AIPerf has): AIPerf 0.13's defaults apply"
    ))
}

/// The search and the SLO, when given.
fn search_settings(s: &Settings) -> Vec<String> {
    let mut lines = Vec::new();
    if !s.slo.is_empty() {
        lines.push(format!(
            "  SLO: {} (judged on each level's reported windows)",
            slo_text(s)
        ));
    }
    if !s.goodput.is_empty() {
        lines.push(format!(
            "  Goodput limits: {} (ms; a request within all of them is good)",
            s.goodput.join(" ")
        ));
    }
    // A binary search bisects a concurrency or a rate range (the configuration refuses others).
    let range = match &s.load {
        LoadSettings::RequestRate {
            start, end, step, ..
        } => Some([*start, *end, *step].map(format_rate)),
        LoadSettings::Concurrency { start, end, step } => {
            Some([start, end, step].map(ToString::to_string))
        }
        _ => None,
    };
    if let (true, Some([start, end, step])) = (s.binary_search, range) {
        lines.push(format!(
            "  Binary search between {start} and {end}, to within {step}"
        ));
    }
    lines
}

/// How windows are cut and judged: the mode, the stabilizing latency and the window size.
fn window_settings(s: &Settings) -> Vec<String> {
    if let Some(n) = s.request_count {
        return vec![format!(
            "  Using exactly {n} requests in a single window (no stabilization)"
        )];
    }
    if let Some(ms) = s.benchmark_duration_ms {
        return vec![format!(
            "  Using a single window of {ms} msec (--benchmark-duration, no stabilization)"
        )];
    }
    if matches!(
        s.load,
        LoadSettings::FixedSchedule | LoadSettings::Periodic { .. }
    ) {
        return vec![
            "  Measured in one window from the first request to the last answer (no stabilization)"
                .into(),
        ];
    }
    let stabilizing = match s.percentile {
        Some(p) => format!("p{p}"),
        None => "average".to_string(),
    };
    let size = if s.measurement_mode == "count_windows" {
        format!(
            "  Minimum number of samples in each window: {}",
            s.measurement_request_count
        )
    } else {
        format!("  Measurement window: {} msec", s.measurement_interval_ms)
    };
    vec![
        format!("  Using \"{}\" mode for stabilization", s.measurement_mode),
        format!("  Stabilizing using {stabilizing} latency and throughput"),
        size,
    ]
}

/// perf_analyzer's line on the gaps between requests, with gamma's shape when it has one.
fn distribution_line(distribution: &str, smoothness: Option<f64>) -> String {
    match smoothness {
        Some(s) => {
            format!("  Using {distribution} distribution (smoothness {s}) on request generation")
        }
        None => format!("  Using {distribution} distribution on request generation"),
    }
}

/// The highest concurrency the sweep may reach (`end` 0 means no fixed limit).
fn load_limit(s: &Settings) -> Vec<String> {
    let mut lines = match &s.load {
        LoadSettings::Concurrency { end: 0, .. } => {
            vec!["  Concurrency limit: none (increase until the latency limit is reached)".into()]
        }
        LoadSettings::Concurrency { start, end, .. } => vec![format!(
            "  Concurrency limit: {} concurrent requests",
            start.max(end)
        )],
        LoadSettings::RequestRate {
            start,
            end,
            distribution,
            arrival_smoothness,
            ..
        } => {
            let limit = match *end {
                0.0 => "none (increase until the latency limit is reached)".to_string(),
                end => format!("{} requests per seconds", format_rate(start.max(end))),
            };
            vec![
                format!("  Request Rate limit: {limit}"),
                distribution_line(distribution, *arrival_smoothness),
            ]
        }
        LoadSettings::Intervals { count, .. } => vec![format!(
            "  Using the {count} request intervals of --request-intervals, looped"
        )],
        LoadSettings::FixedSchedule => {
            vec!["  Replaying the input data's timestamps once (--fixed-schedule)".into()]
        }
        LoadSettings::Periodic {
            start,
            end,
            step,
            request_period,
        } => vec![format!(
            "  Periodic concurrency: {start} streamed requests, then {step} more each time every request of the latest set has had {request_period} answers, up to {end} in all"
        )],
        LoadSettings::Timeline {
            kind,
            distribution,
            arrival_smoothness,
            segments,
        } => {
            let mut lines = vec![format!(
                "  Load over time: {}, reported per second",
                plan_text(kind, segments)
            )];
            if kind == "rate" {
                lines.push(distribution_line(distribution, *arrival_smoothness));
            }
            lines
        }
    };
    if let Some(cap) = s.max_concurrency {
        lines.push(format!(
            "  At most {cap} requests in flight (--max-concurrency)"
        ));
    }
    lines
}

/// A load plan in words: `rate 100 for 10s, 100..1000 for 5s`.
fn plan_text(kind: &str, segments: &[SegmentRecord]) -> String {
    let parts: Vec<String> = segments
        .iter()
        .map(|s| {
            let value = if s.from == s.to {
                format!("{}", s.from)
            } else {
                format!("{}..{}", s.from, s.to)
            };
            format!("{value} for {}s", s.duration_s)
        })
        .collect();
    format!("{kind} {}", parts.join(", "))
}

/// The report of one load level: heading, client statistics, errors, per-window detail
/// (with `-v`) and a warning when the numbers are not from a stable measurement.
pub fn level_block(s: &Settings, model: &ModelSpec, r: &LevelResult) -> String {
    let w = &r.merged;
    let mut lines = vec![level_heading(s, &r.level), "  Client: ".to_string()];
    lines.extend(client_lines(s, model, w));
    lines.extend(replicas::replica_lines(s, w));
    let open_loop = matches!(r.level, LoadLevel::Rate(_));
    if let LoadLevel::Rate(rate) = r.level {
        lines.extend(open_loop::open_loop_lines(s, rate, w));
    }
    lines.extend(error_line(w));
    lines.extend(cancelled_line(s, w));
    lines.extend(answers::note_lines(r));
    lines.extend(server::client_cost_lines(s, w, open_loop));
    if let Some(stats) = &w.server {
        lines.extend(server::server_lines(stats));
        lines.extend(replicas::first_server_note(s));
    }
    if let (Some(recorded), Some(metrics)) = (&s.metrics, &w.metrics) {
        let specs = s.metric_specs();
        lines.extend(super::metrics::metrics_lines(recorded, &specs, metrics));
    }
    if let Some(metrics) = &w.metrics {
        lines.extend(engine::engine_lines(metrics, w));
        lines.extend(gpu::gpu_lines(metrics, w));
    }
    // The split sets one server's figures against every server's latency: not with several.
    if s.servers().len() < 2 {
        lines.extend(server::time_split_line(w));
    }
    if s.outputs.verbose >= 1 {
        lines.extend(window_lines(s, &r.windows));
    }
    lines.extend(end_line(s, r));
    join_lines(&lines)
}

/// `Request concurrency: 4` or `Request Rate: 100` (or the sets of a periodic run).
fn level_heading(s: &Settings, level: &LoadLevel) -> String {
    if let LoadSettings::Periodic {
        start,
        end,
        step,
        request_period,
    } = s.load
    {
        return format!(
            "Periodic concurrency: {start}:{end}:{step} (a new set every {request_period} answers)"
        );
    }
    match level {
        LoadLevel::Concurrency(c) => format!("Request concurrency: {c}"),
        LoadLevel::Rate(rate) => format!("Request Rate: {}", format_rate(*rate)),
    }
}

/// Request count, throughput, latency figures (every answer's, when streaming) and the
/// protocol time split; for an LLM run, GenAI-Perf's table in place of the latency lines.
fn client_lines(s: &Settings, model: &ModelSpec, w: &WindowStats) -> Vec<String> {
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
    if s.llm.is_some() {
        // GenAI-Perf's table stands for the latency lines of a tensor run.
        lines.extend(super::llm::console::llm_lines(s, w));
        lines.extend(super::llm::turns::console_lines(w));
        return lines;
    }
    lines.push(format!(
        "    Avg latency: {} usec (standard deviation {} usec)",
        usec(w.mean_latency_us()),
        usec(w.std_latency_us())
    ));
    for p in reported_percentiles(s) {
        lines.push(format!(
            "    {}: {} usec",
            percentile_label(p),
            usec(w.percentile_us(p))
        ));
    }
    lines.extend(answers::stream_lines(s, w));
    lines.push(protocol_time_line(s, w));
    lines
}

/// `Avg HTTP time: …` or `Avg gRPC time: …`, split into client send/receive and the wait
/// for the answer; `-v` shows send and receive separately, as perf_analyzer does.
fn protocol_time_line(s: &Settings, w: &WindowStats) -> String {
    let (send, recv, wait) = (
        usec(w.avg_send_us()),
        usec(w.avg_recv_us()),
        usec(w.avg_wait_us()),
    );
    // The protocol time starts at the actual send (in open loop the latency starts earlier,
    // at the scheduled send; in closed loop the two are the same).
    let total = usec(w.mean_service_us());
    let verbose = s.outputs.verbose >= 1;
    // An in-process call marshals like gRPC: the request is copied, the answer encoded.
    let api = Capabilities::named(&s.service_kind);
    let in_process = api.is_some_and(|api| api.in_process.is_some());
    let marshals = s.protocol == "grpc" || in_process;
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
    let name = match (api.and_then(|api| api.call_name), s.protocol.as_str()) {
        (Some(name), _) => name,
        (None, "grpc") => "gRPC",
        (None, _) => "HTTP",
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

/// `Cancelled: 40 (20.00%), closed 0.5 s after the send`: the requests cut off on purpose,
/// when cancellation was asked or some were, and their share of the requests that ended.
fn cancelled_line(s: &Settings, w: &WindowStats) -> Option<String> {
    if w.cancelled == 0 && s.request_cancellation.is_none() {
        return None;
    }
    let ended = w.completed() + w.cancelled;
    let share = w.cancelled as f64 * 100.0 / ended.max(1) as f64;
    let when = s.request_cancellation.as_ref().map_or(String::new(), |c| {
        format!(", closed {} s after the send", c.delay_s)
    });
    Some(format!(
        "    Cancelled: {} ({share:.2}%){when}",
        w.cancelled
    ))
}

/// One line per measured window: its throughput and stabilizing latency.
fn window_lines(s: &Settings, windows: &[WindowStats]) -> Vec<String> {
    let label = stabilizing_label(s);
    windows
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let mut line = format!(
                "    Window {}: {} infer/sec, {label} {} usec",
                i + 1,
                format_throughput(w.throughput()),
                usec(w.stabilizing_latency_us(s.percentile))
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
fn end_line(s: &Settings, r: &LevelResult) -> Option<String> {
    match r.end {
        LevelEnd::Stable | LevelEnd::SingleWindow => None,
        LevelEnd::Unstable => Some(unstable_line(s, r)),
        LevelEnd::OverLatencyLimit => Some(over_limit_line(s, r)),
        LevelEnd::MissedSlo => Some(format!("  SLO missed: {}.", slo_text(s))),
        LevelEnd::Interrupted => Some(
            "  [WARNING] Stopped early (Ctrl-C, or --failed-request-threshold): these numbers come from what was measured until then."
                .to_string(),
        ),
    }
}

/// The warning for a level that never met the stability rule.
fn unstable_line(s: &Settings, r: &LevelResult) -> String {
    let merged = r.merged.windows;
    let last = if merged == 1 {
        "the last window".to_string()
    } else {
        format!("the last {merged} windows")
    };
    let longer = match s.measurement_mode.as_str() {
        "count_windows" => "a larger --measurement-request-count",
        _ => "a longer --measurement-interval",
    };
    format!(
        "  [WARNING] Not stable after {} windows: these numbers come from {last}; try {longer} or a larger -s.",
        r.windows.len()
    )
}

/// The note for a level whose stabilizing latency reached `-l`: the highest value among
/// the reported windows, which is what the limit was checked against.
fn over_limit_line(s: &Settings, r: &LevelResult) -> String {
    let reported = (r.merged.windows as usize).clamp(1, r.windows.len().max(1));
    let worst = r
        .windows
        .iter()
        .rev()
        .take(reported)
        .map(|w| w.stabilizing_latency_us(s.percentile))
        .fold(r.merged.stabilizing_latency_us(s.percentile), f64::max);
    format!(
        "  Latency limit reached: {} {} usec is at or above -l {} msec.",
        stabilizing_label(s),
        usec(worst),
        inferperf_wire::number::readable(s.latency_threshold_ms.unwrap_or(0.0))
    )
}

/// The `--slo` conditions as the user wrote them.
fn slo_text(s: &Settings) -> String {
    s.slo.join(", ")
}

/// perf_analyzer's closing summary: one line of throughput and latency per level, in the
/// order they were measured; levels without a stable measurement are marked.
pub fn summary_block(s: &Settings, results: &[LevelResult]) -> String {
    let latency_name = match s.percentile {
        Some(p) => format!("p{p}"),
        None => "Average".to_string(),
    };
    let mut lines = vec![format!(
        "Inferences/Second vs. Client {latency_name} Batch Latency"
    )];
    lines.extend(results.iter().map(|r| summary_line(s, r)));
    join_lines(&lines)
}

/// `Concurrency: 1, throughput: 19.6095 infer/sec, latency 50951 usec`.
fn summary_line(s: &Settings, r: &LevelResult) -> String {
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
        usec(r.merged.stabilizing_latency_us(s.percentile))
    )
}

pub const REPORT: Entry = Entry {
    name: "console",
    is_on: |_, _| true,
    open: |_| Ok(Box::new(Console)),
};

/// perf_analyzer's report on standard output, as the run goes.
struct Console;

impl Reporter for Console {
    fn start(&mut self, run: &Run<'_>, _sent: Option<&Sent<'_>>) -> RunResult<()> {
        let s = run.settings();
        print!("{}", settings_block(s));
        // The model as discovered, when this process asked the server for it.
        if s.outputs.verbose > 0 && run.origin == Origin::Measured {
            print!("{}", model_lines(run.model));
        }
        if s.is_timeline() {
            print!("{}", super::timeline_header(s));
        }
        Ok(())
    }

    fn level(&mut self, run: &Run<'_>, level: &LevelResult) {
        print!("{}", level_block(run.settings(), run.model, level));
    }

    fn bucket(&mut self, run: &Run<'_>, bucket: &Bucket) {
        print!("{}", super::bucket_line(run.settings(), bucket));
    }

    fn finish(&mut self, run: &Run<'_>, measured: &Measured<'_>) -> RunResult<()> {
        let s = run.settings();
        match measured {
            Measured::Levels(levels) if !levels.is_empty() => {
                print!("{}", summary_block(s, levels));
                if let Some(block) = super::search_block(s, levels) {
                    println!();
                    print!("{block}");
                }
            }
            Measured::Timeline { buckets, total } if !buckets.is_empty() => {
                println!();
                print!("{}", super::timeline_summary(s, buckets, total));
            }
            _ => {}
        }
        Ok(())
    }
}

/// `-v`: the model's inputs, outputs and batch size, as the server described them.
fn model_lines(model: &ModelSpec) -> String {
    let mut lines = vec![format!("Model '{}' ({}):", model.name, model.platform)];
    for input in &model.inputs {
        lines.push(format!(
            "  input {} {} {:?}",
            input.name, input.datatype, input.shape
        ));
    }
    for output in &model.outputs {
        lines.push(format!(
            "  output {} {} {:?}",
            output.name, output.datatype, output.shape
        ));
    }
    let batch = match model.max_batch_size {
        u32::MAX => "unknown (no model configuration; batch dimension assumed)".into(),
        n => n.to_string(),
    };
    lines.push(format!("  max_batch_size: {batch}"));
    lines.push(String::new());
    join_lines(&lines)
}

#[cfg(test)]
mod tests;
