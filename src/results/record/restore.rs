//! From the results file back to what was measured: a [`WindowRecord`] becomes the
//! [`WindowStats`] it was written from (distributions rebuilt from their histograms, counts,
//! errors by kind, sums, client figures, server counters, metrics and token figures) and a
//! [`ModelRecord`] the [`ModelSpec`]. This exists so that whatever reads results files —
//! merging the shards of a run — hands the reports the same types a run hands them, and
//! every report is written by the one pipeline that writes it for a run.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::backend::statistics::AnswerCounts;
use crate::backend::{ErrorKind, Malformation};
use crate::measure::distribution::Distribution;
use crate::measure::replica::ReplicaWindow;
use crate::measure::sample::ErrorNote;
use crate::measure::server::engine_metrics::Engine;
use crate::measure::server::metrics::{MetricsWindow, SeriesStats};
use crate::measure::server::stats::{ModelCounters, ServerWindow, Timed};
use crate::measure::tokens::{GoodputRule, TokenStats};
use crate::measure::window::WindowStats;
use crate::results::schema::*;
use inferperf_wire::model::{ModelSpec, Scheduler, TensorSpec};

/// The window a record was written from. `bounds` places it on this process's clock (the
/// record's offsets are from its own run's start); `goodput` is the run's `--slo` rule.
/// An error names what in the record is wrong.
pub fn window_stats(
    record: &WindowRecord,
    bounds: Option<(Instant, Instant)>,
    goodput: GoodputRule,
) -> Result<WindowStats, String> {
    let mut w = WindowStats::with_goodput(record.batch_size, goodput);
    w.duration = inferperf_wire::number::saturating_secs(non_negative(record.duration_s));
    w.windows = record.windows;
    w.ok = record.ok;
    w.cancelled = record.cancelled;
    w.sequences_ended = record.sequences_ended.unwrap_or(0);
    w.sent = record.sent;
    w.bounds = bounds;
    restore_errors(&mut w, &record.errors, bounds.map(|b| b.0))?;
    w.latency = distribution(&record.latency, "latency")?;
    w.latency_sq_sum = record.latency.sum_of_squares;
    w.service = distribution(&record.service, "service")?;
    w.first_response = distribution(&record.first_response, "first_response")?;
    w.inter_response = distribution(&record.inter_response, "inter_response")?;
    w.responses = distribution(&record.responses, "responses")?;
    w.send_lag = distribution(&record.send_lag, "send_lag")?;
    restore_client(&mut w, &record.client);
    w.server = record.server.as_ref().map(server_window);
    w.metrics = (record.metrics.as_ref()).map(|m| metrics_window(m, record.engine.as_ref()));
    w.tokens = match &record.tokens {
        Some(t) => Some(Box::new(token_stats(t)?)),
        None => None,
    };
    w.turns = match &record.turns {
        Some(t) => Some(Box::new(super::turns::turn_stats(t)?)),
        None => None,
    };
    w.replicas = record
        .replicas
        .iter()
        .map(replica_window)
        .collect::<Result<_, _>>()?;
    Ok(w)
}

fn replica_window(record: &ReplicaRecord) -> Result<ReplicaWindow, String> {
    Ok(ReplicaWindow {
        ok: record.ok,
        failed: record.failed,
        latency: distribution(&record.latency, &format!("replicas ({})", record.url))?,
    })
}

fn non_negative(secs: f64) -> f64 {
    if secs.is_finite() {
        secs.max(0.0)
    } else {
        0.0
    }
}

/// A distribution from its histogram; an empty one written without a histogram is empty.
fn distribution(record: &DistributionRecord, name: &str) -> Result<Distribution, String> {
    if record.count == 0 && record.histogram.is_none() {
        return Ok(Distribution::default());
    }
    record
        .distribution()
        .map_err(|e| format!("{name}: {}", e.to_string().trim_end_matches('.')))
}

fn restore_client(w: &mut WindowStats, c: &ClientRecord) {
    w.client_cpu = inferperf_wire::number::saturating_secs(non_negative(c.cpu_s));
    w.late_sends = c.late_sends;
    w.cap_waits = c.max_concurrency_waits;
    w.cap_wait_ns = (non_negative(c.max_concurrency_wait_s) * 1e9) as u128;
    w.send_sum_ns = c.send_ns_sum as u128;
    w.recv_sum_ns = c.receive_ns_sum as u128;
}

/// The counts by kind, and the first note of each kind (dated at the window's start).
fn restore_errors(
    w: &mut WindowStats,
    errors: &[ErrorRecord],
    at: Option<Instant>,
) -> Result<(), String> {
    let at = at.unwrap_or_else(Instant::now);
    for record in errors {
        let kind = error_kind(record).ok_or_else(|| {
            format!(
                "the error kind '{}' (class {}) is not one inferperf knows",
                record.kind, record.class
            )
        })?;
        *w.errors.entry(kind).or_insert(0) += record.count;
        if let Some(text) = &record.first_note {
            w.notes.push(ErrorNote {
                at,
                kind,
                text: text.clone(),
            });
        }
    }
    Ok(())
}

/// The kind an error record names: by its class and code, a bad response by its label.
pub fn error_kind(record: &ErrorRecord) -> Option<ErrorKind> {
    let code = record.code;
    match record.class.as_str() {
        "http_status" => code
            .and_then(|c| u16::try_from(c).ok())
            .map(ErrorKind::HttpStatus),
        "grpc_code" => code
            .and_then(|c| i32::try_from(c).ok())
            .map(ErrorKind::GrpcCode),
        "timeout" => Some(ErrorKind::Timeout),
        "connection" => Some(ErrorKind::Connection),
        "validation" => Some(ErrorKind::Validation),
        "stream_error" => Some(ErrorKind::StreamError),
        "bad_response" => Malformation::ALL
            .into_iter()
            .map(ErrorKind::BadResponse)
            .find(|kind| kind.to_string() == record.kind),
        _ => None,
    }
}

fn server_window(s: &ServerRecord) -> ServerWindow {
    ServerWindow {
        model: counters(&s.model),
        composing: s.composing.iter().map(counters).collect(),
        bls: s.bls,
        answers: s.answers.map(|a| AnswerCounts {
            ok: a.status_2xx,
            client_errors: a.status_4xx,
            server_errors: a.status_5xx,
        }),
    }
}

fn counters(c: &CountersRecord) -> ModelCounters {
    let timed = |t: TimedRecord| Timed {
        count: t.count,
        ns: t.ns,
    };
    ModelCounters {
        name: c.name.clone(),
        version: c.version.clone(),
        inference_count: c.inference_count,
        execution_count: c.execution_count,
        success: timed(c.success),
        fail: timed(c.fail),
        queue: timed(c.queue),
        compute_input: timed(c.compute_input),
        compute_infer: timed(c.compute_infer),
        compute_output: timed(c.compute_output),
        cache_hit: timed(c.cache_hit),
        cache_miss: timed(c.cache_miss),
    }
}

/// A window's metrics read back; the engine they came from is in the window's engine
/// record.
fn metrics_window(m: &MetricsRecord, engine: Option<&EngineRecord>) -> MetricsWindow {
    let series: BTreeMap<String, SeriesStats> = m
        .series
        .iter()
        .map(|(key, s)| {
            let stats = SeriesStats {
                count: s.count,
                sum: s.sum,
                max: s.max,
                first: s.first,
                increase: s.increase,
                seconds: s.seconds,
            };
            (key.clone(), stats)
        })
        .collect();
    MetricsWindow {
        series,
        scrapes: m.scrapes,
        failed_scrapes: m.failed_scrapes,
        read_late_s: m.read_late_s,
        last_error: m.last_error.clone(),
        engine: (engine.and_then(|e| e.figures.engine.as_deref())).and_then(Engine::from_name),
    }
}

fn token_stats(t: &TokensRecord) -> Result<TokenStats, String> {
    Ok(TokenStats {
        output_tokens: distribution(&t.output_tokens, "tokens.output_tokens")?,
        input_tokens: distribution(&t.input_tokens, "tokens.input_tokens")?,
        second_token: distribution(&t.second_token, "tokens.second_token")?,
        inter_token: distribution(&t.inter_token, "tokens.inter_token")?,
        per_user_milli: distribution(&t.per_user_throughput, "tokens.per_user_throughput")?,
        connecting: distribution(&t.http_connecting, "tokens.http_connecting")?,
        sending: distribution(&t.http_sending, "tokens.http_sending")?,
        waiting: distribution(&t.http_waiting, "tokens.http_waiting")?,
        receiving: distribution(&t.http_receiving, "tokens.http_receiving")?,
        good: t.good,
        by_usage: t.counted_by_usage,
        by_tokenizer: t.counted_by_tokenizer,
        by_nothing: t.not_counted,
        unstreamed: t.unstreamed,
        reasoning_tokens: distribution(&t.reasoning_tokens, "tokens.reasoning_tokens")?,
        content_tokens: distribution(&t.content_tokens, "tokens.content_tokens")?,
        first_output: distribution(&t.first_output, "tokens.first_output")?,
        usage_input_tokens: distribution(&t.usage_input_tokens, "tokens.usage_input_tokens")?,
        usage_cached_tokens: match &t.usage_cached_tokens {
            Some(d) => distribution(d, "tokens.usage_cached_tokens")?,
            None => Default::default(),
        },
        usage_prompt_diff: distribution(&t.usage_prompt_diff, "tokens.usage_prompt_diff")?,
        usage_completion_diff: distribution(
            &t.usage_completion_diff,
            "tokens.usage_completion_diff",
        )?,
        osl_mismatch: t.osl_mismatch,
        osl_mismatch_diff: distribution(&t.osl_mismatch_diff, "tokens.osl_mismatch_diff")?,
        asked_tokens: t.asked_tokens,
        asked_produced: t.asked_produced,
        coalesced: t.coalesced,
        counted_with: t.counted_with.as_deref().map(Into::into),
    })
}

/// The model as the run's server described it.
pub fn model_spec(m: &ModelRecord) -> Result<ModelSpec, String> {
    let tensors = |list: &[TensorRecord]| -> Result<Vec<TensorSpec>, String> {
        list.iter()
            .map(|t| {
                let datatype = t.datatype.parse().map_err(|_| {
                    format!(
                        "the tensor {} has an unknown datatype {}",
                        t.name, t.datatype
                    )
                })?;
                Ok(TensorSpec {
                    name: t.name.clone(),
                    datatype,
                    shape: t.shape.clone(),
                })
            })
            .collect()
    };
    Ok(ModelSpec {
        name: m.name.clone(),
        version: m.version.clone(),
        platform: m.platform.clone(),
        inputs: tensors(&m.inputs)?,
        outputs: tensors(&m.outputs)?,
        max_batch_size: m.max_batch_size.unwrap_or(u32::MAX),
        scheduler: match m.scheduler.as_str() {
            "dynamic" => Scheduler::Dynamic,
            "sequence" => Scheduler::Sequence,
            "ensemble" => Scheduler::Ensemble,
            _ => Scheduler::None,
        },
        decoupled: m.decoupled,
        response_cache: m.response_cache,
        composing_models: m.composing_models.clone(),
        has_config: m.has_config,
        server_extensions: m.server_extensions.clone(),
        string_sequence_ids: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sample::Sample;
    use crate::results::window_record;
    use std::time::Duration;

    fn window() -> WindowStats {
        let t = Instant::now();
        let mut samples: Vec<Sample> = (1..=200)
            .map(|i| Sample::once(t, t, t + Duration::from_micros(100 + i)))
            .collect();
        let fail = |kind| Sample::failed(t, t, t + Duration::from_micros(5), kind);
        samples.push(fail(ErrorKind::HttpStatus(503)));
        samples.push(fail(ErrorKind::GrpcCode(14)));
        samples.push(fail(ErrorKind::BadResponse(Malformation::WrongShape)));
        samples.push(fail(ErrorKind::Timeout));
        let mut w = WindowStats::from_samples(&samples, Duration::from_millis(500), 2);
        w.sent = 210;
        w.client_cpu = Duration::from_millis(20);
        w.bounds = Some((t, t + Duration::from_millis(500)));
        w
    }

    #[test]
    fn a_window_comes_back_from_its_record() {
        let w = window();
        let start = w.bounds.unwrap().0;
        let percentiles = [50.0, 99.0];
        let record = window_record(&w, start, &percentiles);
        let back = window_stats(&record, w.bounds, GoodputRule::default()).unwrap();
        assert_eq!(back.ok, w.ok);
        assert_eq!(back.errors, w.errors);
        assert_eq!(back.sent, w.sent);
        assert_eq!(back.throughput(), w.throughput());
        assert_eq!(back.latency.count(), w.latency.count());
        assert_eq!(back.percentile_us(99.0), w.percentile_us(99.0));
        assert_eq!(back.std_latency_us(), w.std_latency_us());
        // Written again, it is the same record.
        assert_eq!(window_record(&back, start, &percentiles), record);
    }

    #[test]
    fn an_unknown_error_kind_is_named() {
        let w = window();
        let mut record = window_record(&w, w.bounds.unwrap().0, &[50.0]);
        record.errors[0].class = "cosmic_ray".into();
        let why = window_stats(&record, None, GoodputRule::default()).unwrap_err();
        assert!(why.contains("cosmic_ray"), "{why}");
    }
}
