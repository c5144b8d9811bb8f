//! The statistics extension's counters for one model, kept as Triton keeps them:
//! cumulative since start, `inference_count` in batch elements, `execution_count` in model
//! executions, the request-level durations (success, fail, queue, compute input / infer /
//! output) counted per request, and `batch_stats` counted per execution of each batch size.
//! Plain atomics, so recording takes no lock; a snapshot is what the HTTP and gRPC
//! statistics endpoints, the Prometheus text and the in-process API all report.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::proto::{InferBatchStatistics, InferStatistics, ModelStatistics, StatisticDuration};

/// One execution's compute phases, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compute {
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

/// A model's counters. The queue and compute counts of the extension equal the success
/// count (Triton counts them together on success), so they are stored once.
#[derive(Debug)]
pub struct ModelStats {
    success_count: AtomicU64,
    success_ns: AtomicU64,
    fail_count: AtomicU64,
    fail_ns: AtomicU64,
    queue_ns: AtomicU64,
    input_ns: AtomicU64,
    infer_ns: AtomicU64,
    output_ns: AtomicU64,
    inference_count: AtomicU64,
    execution_count: AtomicU64,
    last_inference_ms: AtomicU64,
    /// Index `b - 1` holds executions of batch size `b`.
    batches: Box<[BatchCounters]>,
}

/// Nanoseconds in a duration, saturating.
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl ModelStats {
    /// Counters for a model whose executions hold at most `max_batch` elements.
    pub fn new(max_batch: u32) -> ModelStats {
        let sizes = max_batch.max(1) as usize;
        ModelStats {
            success_count: AtomicU64::new(0),
            success_ns: AtomicU64::new(0),
            fail_count: AtomicU64::new(0),
            fail_ns: AtomicU64::new(0),
            queue_ns: AtomicU64::new(0),
            input_ns: AtomicU64::new(0),
            infer_ns: AtomicU64::new(0),
            output_ns: AtomicU64::new(0),
            inference_count: AtomicU64::new(0),
            execution_count: AtomicU64::new(0),
            last_inference_ms: AtomicU64::new(0),
            batches: (0..sizes).map(|_| BatchCounters::default()).collect(),
        }
    }

    /// One execution of `batch_size` elements.
    pub fn record_execution(&self, batch_size: u32, c: Compute) {
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
    pub fn record_success(&self, batch: u32, queue_ns: u64, c: Compute, request_ns: u64) {
        self.inference_count.fetch_add(u64::from(batch), Relaxed);
        self.success_count.fetch_add(1, Relaxed);
        self.success_ns.fetch_add(request_ns, Relaxed);
        self.queue_ns.fetch_add(queue_ns, Relaxed);
        self.input_ns.fetch_add(c.input_ns, Relaxed);
        self.infer_ns.fetch_add(c.infer_ns, Relaxed);
        self.output_ns.fetch_add(c.output_ns, Relaxed);
    }

    /// One failed request and how long it took to fail.
    pub fn record_failure(&self, request_ns: u64) {
        self.fail_count.fetch_add(1, Relaxed);
        self.fail_ns.fetch_add(request_ns, Relaxed);
    }

    /// The counters now, in the extension's form.
    pub fn snapshot(&self, name: &str) -> ModelStatistics {
        let success = self.success_count.load(Relaxed);
        let per_request = |ns: &AtomicU64| duration(success, ns.load(Relaxed));
        let inference_stats = InferStatistics {
            success: per_request(&self.success_ns),
            fail: duration(self.fail_count.load(Relaxed), self.fail_ns.load(Relaxed)),
            queue: per_request(&self.queue_ns),
            compute_input: per_request(&self.input_ns),
            compute_infer: per_request(&self.infer_ns),
            compute_output: per_request(&self.output_ns),
            cache_hit: duration(0, 0),
            cache_miss: duration(0, 0),
        };
        ModelStatistics {
            name: name.to_string(),
            version: "1".to_string(),
            last_inference: self.last_inference_ms.load(Relaxed),
            inference_count: self.inference_count.load(Relaxed),
            execution_count: self.execution_count.load(Relaxed),
            inference_stats: Some(inference_stats),
            batch_stats: self.batch_snapshot(),
        }
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
pub fn statistics_json(s: &ModelStatistics) -> Value {
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
    })
}
