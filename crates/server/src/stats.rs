//! The statistics extension's counters for one model, kept as Triton keeps them:
//! cumulative since start, `inference_count` in batch elements, `execution_count` in model
//! executions, the request-level durations (success, fail, queue, compute input / infer /
//! output) counted per request, `batch_stats` counted per execution of each batch size, and
//! for a decoupled model `response_stats` counted per response index (see
//! [`ModelStats::record_response`] for what each response's durations mean).
//! A request's success is recorded in one short critical section, so a snapshot never sees
//! its count without its durations or its inferences (the reference server's figures are
//! the truth tests compare against, exactly); the rest are plain atomics. A snapshot is
//! what the HTTP and gRPC statistics endpoints, the Prometheus text and the in-process API
//! all report.
//! [`TokenStats`] counts what the OpenAI routes served (requests, tokens, streamed events),
//! the truth a load tester's LLM figures are checked against.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use inferperf_wire::proto::{
    InferBatchStatistics, InferResponseStatistics, InferStatistics, ModelStatistics,
    StatisticDuration,
};

/// One execution's compute phases, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Compute {
    pub input_ns: u64,
    pub infer_ns: u64,
    pub output_ns: u64,
}

#[derive(Debug, Default)]
struct BatchCounters {
    count: AtomicU64,
    input_ns: AtomicU64,
    infer_ns: AtomicU64,
    output_ns: AtomicU64,
}

/// One count and its cumulative nanoseconds.
#[derive(Debug, Default)]
struct Counter {
    count: AtomicU64,
    ns: AtomicU64,
}

impl Counter {
    fn add(&self, ns: u64) {
        self.count.fetch_add(1, Relaxed);
        self.ns.fetch_add(ns, Relaxed);
    }

    fn read(&self) -> Option<StatisticDuration> {
        duration(self.count.load(Relaxed), self.ns.load(Relaxed))
    }
}

/// The counters of one response index of a decoupled model.
#[derive(Debug, Default)]
struct ResponseCounters {
    compute_infer: Counter,
    compute_output: Counter,
    success: Counter,
    fail: Counter,
    empty_response: Counter,
    cancel: Counter,
}

impl ResponseCounters {
    fn used(&self) -> bool {
        [
            &self.success,
            &self.fail,
            &self.empty_response,
            &self.cancel,
        ]
        .iter()
        .any(|c| c.count.load(Relaxed) > 0)
    }

    fn read(&self) -> InferResponseStatistics {
        InferResponseStatistics {
            compute_infer: self.compute_infer.read(),
            compute_output: self.compute_output.read(),
            success: self.success.read(),
            fail: self.fail.read(),
            empty_response: self.empty_response.read(),
            cancel: self.cancel.read(),
        }
    }
}

/// How one response of a decoupled model ended, for [`ModelStats::record_response`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseEnd {
    /// Sent with outputs.
    Success,
    /// The empty final response.
    Empty,
    /// Not sent: the client had gone.
    Cancel,
}

/// A model's counters. The queue and compute counts of the extension equal the success
/// count (Triton counts them together on success), so they are stored once.
#[derive(Debug)]
pub(crate) struct ModelStats {
    success: Mutex<SuccessCounters>,
    fail_count: AtomicU64,
    fail_ns: AtomicU64,
    execution_count: AtomicU64,
    last_inference_ms: AtomicU64,
    /// Index `b - 1` holds executions of batch size `b`.
    batches: Box<[BatchCounters]>,
    /// Index `i` holds the `i`-th responses of a decoupled model's requests (empty for
    /// other models).
    responses: Box<[ResponseCounters]>,
}

/// The successful requests' counters, updated and read together.
#[derive(Debug, Default, Clone, Copy)]
struct SuccessCounters {
    count: u64,
    request_ns: u64,
    queue_ns: u64,
    input_ns: u64,
    infer_ns: u64,
    output_ns: u64,
    /// Batch elements of the successful requests.
    inferences: u64,
}

/// What an `llm` or `embeddings` model served, cumulative since start.
#[derive(Debug, Default)]
pub(crate) struct TokenStats {
    pub requests: AtomicU64,
    pub streamed: AtomicU64,
    pub completed: AtomicU64,
    pub cancelled: AtomicU64,
    pub failed: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    pub events: AtomicU64,
    pub inputs: AtomicU64,
}

/// A snapshot of [`TokenStats`], as `GET /v1/inferperf/stats` writes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TokenCounts {
    /// Requests accepted (a well-formed request for this model).
    pub requests: u64,
    /// Of those, requests answered as a stream of events.
    pub streamed: u64,
    /// Requests answered in full.
    pub completed: u64,
    /// Requests whose client left before the answer was complete.
    pub cancelled: u64,
    /// Requests naming this model that were refused (400).
    pub failed: u64,
    /// Prompt tokens of the accepted requests (words, or token ids given as numbers).
    pub prompt_tokens: u64,
    /// Tokens generated (for a cancelled request, those generated before it left).
    pub completion_tokens: u64,
    /// Content events of the streamed answers (not the final, usage and `[DONE]` ones).
    pub events: u64,
    /// Embedding inputs (texts) answered.
    pub inputs: u64,
}

impl TokenStats {
    pub(crate) fn snapshot(&self) -> TokenCounts {
        let read = |c: &AtomicU64| c.load(Relaxed);
        TokenCounts {
            requests: read(&self.requests),
            streamed: read(&self.streamed),
            completed: read(&self.completed),
            cancelled: read(&self.cancelled),
            failed: read(&self.failed),
            prompt_tokens: read(&self.prompt_tokens),
            completion_tokens: read(&self.completion_tokens),
            events: read(&self.events),
            inputs: read(&self.inputs),
        }
    }
}

/// Adds `n` to a counter.
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    if n > 0 {
        counter.fetch_add(n, Relaxed);
    }
}

/// Nanoseconds in a duration, saturating.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl ModelStats {
    /// Counters for a model whose executions hold at most `max_batch` elements and whose
    /// requests get at most `responses` counted responses each (0 unless decoupled).
    pub(crate) fn new(max_batch: u32, responses: u32) -> ModelStats {
        let sizes = max_batch.max(1) as usize;
        ModelStats {
            success: Mutex::new(SuccessCounters::default()),
            fail_count: AtomicU64::new(0),
            fail_ns: AtomicU64::new(0),
            execution_count: AtomicU64::new(0),
            last_inference_ms: AtomicU64::new(0),
            batches: (0..sizes).map(|_| BatchCounters::default()).collect(),
            responses: (0..responses)
                .map(|_| ResponseCounters::default())
                .collect(),
        }
    }

    /// Response `index` of a decoupled model's request. As Triton does, each response's
    /// durations run from the previous response of the same request (or, for response 0,
    /// the execution's start): `infer_ns` is the wait for the model to produce it,
    /// `output_ns` the building and handing over of its outputs, and success (or
    /// empty_response, or cancel) counts their sum. An index past the model's responses is
    /// not counted.
    pub(crate) fn record_response(
        &self,
        index: usize,
        end: ResponseEnd,
        infer_ns: u64,
        output_ns: u64,
    ) {
        let Some(r) = self.responses.get(index) else {
            return;
        };
        let total = infer_ns.saturating_add(output_ns);
        match end {
            ResponseEnd::Success => {
                r.compute_infer.add(infer_ns);
                r.compute_output.add(output_ns);
                r.success.add(total);
            }
            ResponseEnd::Empty => r.empty_response.add(total),
            ResponseEnd::Cancel => r.cancel.add(total),
        }
    }

    /// One execution of `batch_size` elements.
    pub(crate) fn record_execution(&self, batch_size: u32, c: Compute) {
        self.execution_count.fetch_add(1, Relaxed);
        self.last_inference_ms.fetch_max(now_ms(), Relaxed);
        let index = batch_size.max(1) as usize - 1;
        if let Some(b) = self.batches.get(index) {
            b.count.fetch_add(1, Relaxed);
            b.input_ns.fetch_add(c.input_ns, Relaxed);
            b.infer_ns.fetch_add(c.infer_ns, Relaxed);
            b.output_ns.fetch_add(c.output_ns, Relaxed);
        }
    }

    /// One successful request of `batch` elements: its queue time, the compute phases of
    /// the execution it was part of, and its whole duration.
    pub(crate) fn record_success(&self, batch: u32, queue_ns: u64, c: Compute, request_ns: u64) {
        let mut s = self.success_counters();
        s.inferences += u64::from(batch);
        s.count += 1;
        s.request_ns += request_ns;
        s.queue_ns += queue_ns;
        s.input_ns += c.input_ns;
        s.infer_ns += c.infer_ns;
        s.output_ns += c.output_ns;
    }

    /// The success counters, locked (a panic elsewhere cannot leave them half-updated:
    /// the section above has no call that panics).
    fn success_counters(&self) -> std::sync::MutexGuard<'_, SuccessCounters> {
        self.success.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One failed request and how long it took to fail.
    pub(crate) fn record_failure(&self, request_ns: u64) {
        self.fail_count.fetch_add(1, Relaxed);
        self.fail_ns.fetch_add(request_ns, Relaxed);
    }

    /// The counters now, in the extension's form.
    pub(crate) fn snapshot(&self, name: &str) -> ModelStatistics {
        let s = *self.success_counters();
        let per_request = |ns: u64| duration(s.count, ns);
        let inference_stats = InferStatistics {
            success: per_request(s.request_ns),
            fail: duration(self.fail_count.load(Relaxed), self.fail_ns.load(Relaxed)),
            queue: per_request(s.queue_ns),
            compute_input: per_request(s.input_ns),
            compute_infer: per_request(s.infer_ns),
            compute_output: per_request(s.output_ns),
            cache_hit: duration(0, 0),
            cache_miss: duration(0, 0),
        };
        ModelStatistics {
            name: name.to_string(),
            version: "1".to_string(),
            last_inference: self.last_inference_ms.load(Relaxed),
            inference_count: s.inferences,
            execution_count: self.execution_count.load(Relaxed),
            inference_stats: Some(inference_stats),
            batch_stats: self.batch_snapshot(),
            response_stats: self.response_snapshot(),
        }
    }

    fn response_snapshot(&self) -> HashMap<String, InferResponseStatistics> {
        let used = (self.responses.iter().enumerate()).filter(|(_, r)| r.used());
        used.map(|(i, r)| (i.to_string(), r.read())).collect()
    }

    fn batch_snapshot(&self) -> Vec<InferBatchStatistics> {
        let sizes = (1u64..).zip(self.batches.iter());
        sizes
            .filter_map(|(size, b)| {
                let count = b.count.load(Relaxed);
                (count > 0).then(|| InferBatchStatistics {
                    batch_size: size,
                    compute_input: duration(count, b.input_ns.load(Relaxed)),
                    compute_infer: duration(count, b.infer_ns.load(Relaxed)),
                    compute_output: duration(count, b.output_ns.load(Relaxed)),
                })
            })
            .collect()
    }
}

fn duration(count: u64, ns: u64) -> Option<StatisticDuration> {
    Some(StatisticDuration { count, ns })
}

fn duration_json(d: &Option<StatisticDuration>) -> Value {
    let (count, ns) = d.as_ref().map_or((0, 0), |d| (d.count, d.ns));
    json!({"count": count, "ns": ns})
}

/// One model's statistics as the HTTP statistics endpoint writes them.
pub(crate) fn statistics_json(s: &ModelStatistics) -> Value {
    let i = s.inference_stats.unwrap_or_default();
    let batch = |b: &InferBatchStatistics| {
        json!({
            "batch_size": b.batch_size,
            "compute_input": duration_json(&b.compute_input),
            "compute_infer": duration_json(&b.compute_infer),
            "compute_output": duration_json(&b.compute_output),
        })
    };
    json!({
        "name": s.name,
        "version": s.version,
        "last_inference": s.last_inference,
        "inference_count": s.inference_count,
        "execution_count": s.execution_count,
        "inference_stats": {
            "success": duration_json(&i.success),
            "fail": duration_json(&i.fail),
            "queue": duration_json(&i.queue),
            "compute_input": duration_json(&i.compute_input),
            "compute_infer": duration_json(&i.compute_infer),
            "compute_output": duration_json(&i.compute_output),
            "cache_hit": duration_json(&i.cache_hit),
            "cache_miss": duration_json(&i.cache_miss),
        },
        "batch_stats": s.batch_stats.iter().map(batch).collect::<Vec<_>>(),
        "response_stats": response_stats_json(&s.response_stats),
    })
}

/// The per-response statistics as an object keyed by response index (`{}` when none).
fn response_stats_json(stats: &HashMap<String, InferResponseStatistics>) -> Value {
    let one = |r: &InferResponseStatistics| {
        json!({
            "compute_infer": duration_json(&r.compute_infer),
            "compute_output": duration_json(&r.compute_output),
            "success": duration_json(&r.success),
            "fail": duration_json(&r.fail),
            "empty_response": duration_json(&r.empty_response),
            "cancel": duration_json(&r.cancel),
        })
    };
    let entries = stats.iter().map(|(k, r)| (k.clone(), one(r)));
    Value::Object(entries.collect())
}
