//! From what the run measured to the records of the results file: a window (or merged
//! windows) with its distributions and their histograms, a level with how and why it
//! ended, a timeline bucket, the model. Offsets are taken from the run's start.
//!
//! Beside it: [`restore`], the way back from a record to what was measured (with [`turns`],
//! a sessions run's figures by turn), and [`settings`], the settings block recorded from
//! the configuration.

pub(crate) mod restore;
pub(crate) mod settings;
mod turns;

use std::time::Instant;

use super::schema::*;
use crate::backend::ErrorKind;
use crate::measure::distribution::Distribution;
use crate::measure::level::{LevelEnd, LevelResult};
use crate::measure::server::engine_figures::{count_checks, EngineFigures};
use crate::measure::server::gpu_figures::GpuTelemetry;
use crate::measure::server::metrics::MetricsWindow;
use crate::measure::server::stats::{ModelCounters, ServerWindow, Timed};
use crate::measure::slo::SloCheck;
use crate::measure::stability::STABILITY_WINDOWS;
use crate::measure::timeline::Bucket;
use crate::measure::tokens::TokenStats;
use crate::measure::turns::TurnStats;
use crate::measure::window::WindowStats;
use inferperf_wire::model::{ModelSpec, Scheduler, TensorSpec};

/// The percentiles every distribution of the file lists besides those the run reports.
pub const FILE_PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

/// Units of the distributions.
const NS: &str = "ns";
const COUNT: &str = "count";
const MILLI_PER_S: &str = "milli_tokens_per_s";
/// Thousandths of a percent (the usage and length differences).
const MILLI_PCT: &str = "milli_pct";

/// The percentiles the distributions of a run's file list: those its reports show (for an
/// LLM run GenAI-Perf's too) and [`FILE_PERCENTILES`], ascending.
pub fn file_percentiles(settings: &Settings) -> Vec<f64> {
    let mut all = settings.kept_percentiles();
    for p in FILE_PERCENTILES {
        if !all.contains(&p) {
            all.push(p);
        }
    }
    all.sort_by(f64::total_cmp);
    all
}

/// The record of a window (or merged windows); `start` is the run's start.
pub fn window_record(w: &WindowStats, start: Instant, percentiles: &[f64]) -> WindowRecord {
    let offset = |t: Instant| t.saturating_duration_since(start).as_secs_f64();
    let secs = w.duration.as_secs_f64();
    let per_second = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
    let dist = |d: &Distribution, unit: &str| distribution_record(d, unit, percentiles);
    let cpu = w.client_cpu.as_secs_f64();
    WindowRecord {
        start_s: w.bounds.map(|b| offset(b.0)),
        end_s: w.bounds.map(|b| offset(b.1)),
        duration_s: secs,
        windows: w.windows,
        batch_size: w.batch_size,
        ok: w.ok,
        failed: w.error_count(),
        completed: w.completed(),
        sent: w.sent,
        throughput: w.throughput(),
        request_throughput: per_second(w.ok as f64),
        response_throughput: w.response_throughput(),
        sequences_ended: (w.sequences_ended > 0).then_some(w.sequences_ended),
        sequence_throughput: (w.sequences_ended > 0).then(|| w.sequence_throughput()),
        send_rate: w.send_rate(),
        error_rate: w.error_rate(),
        errors: w
            .errors
            .iter()
            .map(|(kind, &count)| error_record(w, *kind, count))
            .collect(),
        cancelled: w.cancelled,
        latency: dist(&w.latency, NS),
        service: dist(&w.service, NS),
        first_response: dist(&w.first_response, NS),
        inter_response: dist(&w.inter_response, NS),
        responses: dist(&w.responses, COUNT),
        send_lag: dist(&w.send_lag, NS),
        client: ClientRecord {
            cpu_s: cpu,
            cpu_cores: per_second(cpu),
            cpu_us_per_request: (w.completed() > 0 && cpu > 0.0)
                .then(|| cpu * 1e6 / w.completed() as f64),
            late_sends: w.late_sends,
            late_share: w.late_share(),
            max_concurrency_waits: w.cap_waits,
            max_concurrency_wait_s: w.cap_wait_ns as f64 / 1e9,
            send_ns_sum: saturate(w.send_sum_ns),
            receive_ns_sum: saturate(w.recv_sum_ns),
        },
        server: w.server.as_ref().map(server_record),
        metrics: w.metrics.as_ref().map(metrics_record),
        engine: w.metrics.as_ref().and_then(|m| engine_record(m, w)),
        gpu_telemetry: (w.metrics.as_ref())
            .and_then(|m| GpuTelemetry::of(m, w.output_token_count())),
        tokens: w
            .tokens
            .as_deref()
            .map(|t| tokens_record(t, w, percentiles)),
        turns: (w.turns.as_deref()).map(|t| turns_record(t, percentiles)),
        replicas: Vec::new(),
    }
}

/// The record of a level's window with each `-u` server's share, named by its URL.
fn window_with_replicas(
    w: &WindowStats,
    urls: &[String],
    start: Instant,
    percentiles: &[f64],
) -> WindowRecord {
    let mut record = window_record(w, start, percentiles);
    record.replicas = (w.replicas.iter().zip(urls))
        .map(|(r, url)| ReplicaRecord {
            url: url.clone(),
            ok: r.ok,
            failed: r.failed,
            throughput: w.replica_throughput(r),
            latency: distribution_record(&r.latency, NS, percentiles),
        })
        .collect();
    record
}

/// A distribution's record. A compacted one answers the percentiles it did not keep from
/// its encoded histogram; a percentile nothing can answer is left out.
pub fn distribution_record(
    d: &Distribution,
    unit: &str,
    percentiles: &[f64],
) -> DistributionRecord {
    let histogram = d.histogram_v2().map(|h| h.into_owned());
    let rebuilt = match (&histogram, d.is_compacted()) {
        (Some(text), true) => Distribution::rebuild(text, d.exact()).ok(),
        _ => None,
    };
    let source = rebuilt.as_ref().unwrap_or(d);
    let points = percentiles
        .iter()
        .map(|&p| (p, source.percentile(p)))
        .filter(|(_, value)| value.is_finite())
        .collect();
    let exact = d.exact();
    DistributionRecord {
        unit: unit.to_string(),
        count: exact.count,
        sum: saturate(exact.sum),
        sum_of_squares: exact.sum_sq,
        mean: d.mean(),
        std: d.std(),
        min: d.min() as u64,
        max: exact.max,
        percentiles: Percentiles(points),
        histogram,
    }
}

fn saturate(value: u128) -> u64 {
    value.min(u64::MAX as u128) as u64
}

fn error_record(w: &WindowStats, kind: ErrorKind, count: u64) -> ErrorRecord {
    let (class, code) = match kind {
        ErrorKind::HttpStatus(status) => ("http_status", Some(status as i64)),
        ErrorKind::GrpcCode(code) => ("grpc_code", Some(code as i64)),
        ErrorKind::Timeout => ("timeout", None),
        ErrorKind::Connection => ("connection", None),
        ErrorKind::BadResponse(_) => ("bad_response", None),
        ErrorKind::Validation => ("validation", None),
        ErrorKind::StreamError => ("stream_error", None),
        // Counted apart (`cancelled`), never among the errors; named should one come here.
        ErrorKind::Cancelled => ("cancelled", None),
    };
    ErrorRecord {
        kind: kind.to_string(),
        class: class.to_string(),
        code,
        count,
        first_note: w
            .notes
            .iter()
            .find(|n| n.kind == kind)
            .map(|n| n.text.clone()),
    }
}

fn server_record(s: &ServerWindow) -> ServerRecord {
    let b = s.breakdown();
    ServerRecord {
        model: counters_record(&s.model),
        composing: s.composing.iter().map(counters_record).collect(),
        bls: s.bls,
        answers: s.answers.map(|a| AnswerCountsRecord {
            status_2xx: a.ok,
            status_4xx: a.client_errors,
            status_5xx: a.server_errors,
        }),
        breakdown_us: BreakdownRecord {
            request: b.request,
            queue: b.queue,
            compute_input: b.compute_input,
            compute_infer: b.compute_infer,
            compute_output: b.compute_output,
            cache_hit: b.cache_hit,
            cache_miss: b.cache_miss,
            overhead: (b.request - b.accounted()).max(0.0),
        },
    }
}

fn counters_record(m: &ModelCounters) -> CountersRecord {
    let timed = |t: Timed| TimedRecord {
        count: t.count,
        ns: t.ns,
    };
    CountersRecord {
        name: m.name.clone(),
        version: m.version.clone(),
        inference_count: m.inference_count,
        execution_count: m.execution_count,
        success: timed(m.success),
        fail: timed(m.fail),
        queue: timed(m.queue),
        compute_input: timed(m.compute_input),
        compute_infer: timed(m.compute_infer),
        compute_output: timed(m.compute_output),
        cache_hit: timed(m.cache_hit),
        cache_miss: timed(m.cache_miss),
    }
}

/// The engine's figures of a window, with its counts beside the client's.
fn engine_record(m: &MetricsWindow, w: &WindowStats) -> Option<EngineRecord> {
    let figures = EngineFigures::of(m)?;
    let counts = count_checks(&figures, w);
    Some(EngineRecord { figures, counts })
}

fn metrics_record(m: &MetricsWindow) -> MetricsRecord {
    use crate::config::MetricAggregation;
    MetricsRecord {
        scrapes: m.scrapes,
        failed_scrapes: m.failed_scrapes,
        read_late_s: m.read_late_s,
        last_error: m.last_error.clone(),
        series: m
            .series
            .iter()
            .map(|(key, s)| {
                let record = SeriesRecord {
                    count: s.count,
                    sum: s.sum,
                    max: s.max,
                    first: s.first,
                    increase: s.increase,
                    seconds: s.seconds,
                    avg: s.value(MetricAggregation::Avg),
                    rate: s.value(MetricAggregation::Rate),
                };
                (key.clone(), record)
            })
            .collect(),
    }
}

fn tokens_record(t: &TokenStats, w: &WindowStats, percentiles: &[f64]) -> TokensRecord {
    let dist = |d: &Distribution, unit: &str| distribution_record(d, unit, percentiles);
    TokensRecord {
        output_tokens: dist(&t.output_tokens, COUNT),
        input_tokens: dist(&t.input_tokens, COUNT),
        second_token: dist(&t.second_token, NS),
        inter_token: dist(&t.inter_token, NS),
        per_user_throughput: dist(&t.per_user_milli, MILLI_PER_S),
        http_connecting: dist(&t.connecting, NS),
        http_sending: dist(&t.sending, NS),
        http_waiting: dist(&t.waiting, NS),
        http_receiving: dist(&t.receiving, NS),
        output_token_throughput: w.token_throughput(),
        goodput: w.goodput(),
        good: t.good,
        counted_by_usage: t.by_usage,
        counted_by_tokenizer: t.by_tokenizer,
        not_counted: t.by_nothing,
        unstreamed: t.unstreamed,
        reasoning_tokens: dist(&t.reasoning_tokens, COUNT),
        content_tokens: dist(&t.content_tokens, COUNT),
        first_output: dist(&t.first_output, NS),
        usage_input_tokens: dist(&t.usage_input_tokens, COUNT),
        usage_cached_tokens: (t.usage_cached_tokens.count() > 0)
            .then(|| dist(&t.usage_cached_tokens, COUNT)),
        usage_prompt_diff: dist(&t.usage_prompt_diff, MILLI_PCT),
        usage_completion_diff: dist(&t.usage_completion_diff, MILLI_PCT),
        osl_mismatch: t.osl_mismatch,
        osl_mismatch_diff: dist(&t.osl_mismatch_diff, MILLI_PCT),
        asked_tokens: t.asked_tokens,
        asked_produced: t.asked_produced,
        coalesced: t.coalesced,
        counted_with: t.counted_with.as_deref().map(str::to_string),
    }
}

/// The record of a window's figures by turn number (read back in `turns.rs`).
fn turns_record(t: &TurnStats, percentiles: &[f64]) -> TurnsRecord {
    TurnsRecord {
        by_turn: (t.by_turn.iter())
            .map(|(turn, f)| TurnRecord {
                turn: *turn,
                ok: f.ok,
                failed: f.failed,
                first_response: distribution_record(&f.first_response, NS, percentiles),
                input_tokens: distribution_record(&f.input_tokens, COUNT, percentiles),
            })
            .collect(),
        not_sent: t.not_sent,
    }
}

/// The record of a finished level.
pub fn level_record(settings: &Settings, r: &LevelResult, start: Instant) -> LevelRecord {
    let percentiles = file_percentiles(settings);
    let urls = settings.servers();
    let first_merged = r.windows.len().saturating_sub(STABILITY_WINDOWS);
    LevelRecord {
        load: r.level.into(),
        end: match r.end {
            LevelEnd::Stable => LevelEndRecord::Stable,
            LevelEnd::Unstable => LevelEndRecord::Unstable,
            LevelEnd::SingleWindow => LevelEndRecord::SingleWindow,
            LevelEnd::OverLatencyLimit => LevelEndRecord::OverLatencyLimit,
            LevelEnd::MissedSlo => LevelEndRecord::MissedSlo,
            LevelEnd::Interrupted => LevelEndRecord::Interrupted,
        },
        why: why(settings, r),
        stable: r.is_stable(),
        notes: r.notes.clone(),
        windows: r
            .windows
            .iter()
            .map(|w| window_with_replicas(w, urls, start, &percentiles))
            .collect(),
        merged_windows: (first_merged..r.windows.len()).collect(),
        merged: window_with_replicas(&r.merged, urls, start, &percentiles),
        slice_s: (!r.slices.is_empty()).then_some(r.slices.width.as_secs_f64()),
        slices: (r.slices.windows.iter())
            .map(|w| window_record(w, start, &percentiles))
            .collect(),
    }
}

/// The record of a timeline bucket, with each `-u` server's share.
pub fn bucket_record(
    b: &Bucket,
    urls: &[String],
    start: Instant,
    percentiles: &[f64],
) -> BucketRecord {
    BucketRecord {
        plan_offset_s: b.start.as_secs_f64(),
        target: b.target,
        after_end: b.after_end,
        window: window_with_replicas(&b.stats, urls, start, percentiles),
    }
}

/// Why a level ended as it did, in one sentence with the figures.
fn why(settings: &Settings, r: &LevelResult) -> String {
    let last = &r.windows[r.windows.len().saturating_sub(STABILITY_WINDOWS)..];
    let latency_name = match settings.percentile {
        Some(p) => format!("p{p} latency"),
        None => "mean latency".to_string(),
    };
    let latency = |w: &WindowStats| w.stabilizing_latency_us(settings.percentile);
    let spreads = || {
        let throughput = spread(last.iter().map(WindowStats::throughput));
        let latency = spread(last.iter().map(latency));
        format!("throughput varied {throughput:.1}% and {latency_name} {latency:.1}%")
    };
    let s = settings.stability_percentage;
    match r.end {
        LevelEnd::Stable => format!(
            "The last {} windows were within -s {s}%: {}.",
            last.len(),
            spreads()
        ),
        LevelEnd::SingleWindow => {
            "One window from the first send to the last answer, without a stability check."
                .to_string()
        }
        LevelEnd::Unstable if last.iter().any(|w| w.throughput() <= 0.0) => format!(
            "After {} windows (-r {}) one of the last {} had no successful request.",
            r.windows.len(),
            settings.max_trials,
            last.len()
        ),
        LevelEnd::Unstable => format!(
            "After {} windows (-r {}) the last {} were not within -s {s}%: {}.",
            r.windows.len(),
            settings.max_trials,
            last.len(),
            spreads()
        ),
        LevelEnd::OverLatencyLimit => {
            let worst = last
                .iter()
                .filter(|w| w.ok > 0)
                .map(latency)
                .fold(0.0, f64::max);
            format!(
                "The {latency_name} of a window reached -l {} ms ({}).",
                settings.latency_threshold_ms.unwrap_or(0.0),
                ms(worst)
            )
        }
        LevelEnd::MissedSlo => missed_slo(settings, r),
        LevelEnd::Interrupted => format!(
            "Stopped early (Ctrl-C, or --failed-request-threshold: see the notes) after {} window{}: the figures are those measured until then.",
            r.windows.len(),
            if r.windows.len() == 1 { "" } else { "s" }
        ),
    }
}

/// `Missed --slo p99<=50ms: p99 latency 63.20 ms.`, or the window far over a condition.
fn missed_slo(settings: &Settings, r: &LevelResult) -> String {
    let conditions = settings.slo_conditions();
    let missed: Vec<String> = conditions
        .iter()
        .filter(|(_, c)| !c.met_by(&r.merged))
        .map(|(text, c)| {
            let value = ms(c.value_us(&r.merged));
            format!("{text}: {} {value}", c.metric_label())
        })
        .collect();
    if !missed.is_empty() {
        return format!("Missed --slo {}.", missed.join("; "));
    }
    let newest = r.windows.last();
    let far = conditions.iter().find_map(|(text, c)| {
        let w = newest.filter(|w| c.far_over(w))?;
        Some((text, c, c.value_us(w)))
    });
    match far {
        Some((text, c, value)) => format!(
            "A window was over twice --slo {text} ({} {}), which ends the level at once.",
            c.metric_label(),
            ms(value)
        ),
        None => "Missed an --slo condition.".to_string(),
    }
}

/// max/min − 1 in percent (0 for fewer than two positive values).
fn spread(values: impl Iterator<Item = f64>) -> f64 {
    let (min, max) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if min > 0.0 && max.is_finite() {
        (max / min - 1.0) * 100.0
    } else {
        0.0
    }
}

fn ms(us: f64) -> String {
    format!("{:.2} ms", us / 1000.0)
}

/// The model's record.
pub fn model_record(m: &ModelSpec) -> ModelRecord {
    let tensors = |list: &[TensorSpec]| -> Vec<TensorRecord> {
        list.iter()
            .map(|t| TensorRecord {
                name: t.name.clone(),
                datatype: t.datatype.as_str().to_string(),
                shape: t.shape.clone(),
            })
            .collect()
    };
    ModelRecord {
        name: m.name.clone(),
        version: m.version.clone(),
        platform: m.platform.clone(),
        inputs: tensors(&m.inputs),
        outputs: tensors(&m.outputs),
        max_batch_size: (m.max_batch_size != u32::MAX).then_some(m.max_batch_size),
        scheduler: match m.scheduler {
            Scheduler::None => "none",
            Scheduler::Dynamic => "dynamic",
            Scheduler::Sequence => "sequence",
            Scheduler::Ensemble => "ensemble",
        }
        .to_string(),
        decoupled: m.decoupled,
        response_cache: m.response_cache,
        composing_models: m.composing_models.clone(),
        has_config: m.has_config,
        server_extensions: m.server_extensions.clone(),
    }
}
