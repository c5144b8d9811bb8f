//! TorchServe's server-side counters, read from its Prometheus page (port 8082 in
//! `metrics_mode=prometheus`): `ts_inference_requests_total`,
//! `ts_queue_latency_microseconds` and `ts_inference_latency_microseconds`, cumulative and
//! labelled by `model_name`. They become the statistics extension's `ModelStatistics`, so
//! that the measurement side takes window deltas and prints the `Server:` block as it does
//! for Triton: the request latency is TorchServe's inference latency (which holds the
//! queue), the queue its queue latency, and compute the difference.

use futures::future::BoxFuture;

use crate::backend::statistics::{AnswerCounts, StatsReader};
use crate::backend::transport::control::HttpControl;
use crate::backend::Target;
use crate::prometheus::{parse, MetricSample};
use inferperf_wire::proto::{InferStatistics, ModelStatistics, StatisticDuration};

const REQUESTS: &str = "ts_inference_requests_total";
const QUEUE_US: &str = "ts_queue_latency_microseconds";
const INFERENCE_US: &str = "ts_inference_latency_microseconds";
/// A frontend counter every TorchServe in Prometheus mode shows once it answered anything.
const REQUESTS_2XX: &str = "Requests2XX";
const REQUESTS_4XX: &str = "Requests4XX";
const REQUESTS_5XX: &str = "Requests5XX";

/// A connection to TorchServe's metrics page, for one model.
pub struct TsMetricsSource {
    conn: HttpControl,
    path: String,
    model: String,
    version: String,
    answers: Option<AnswerCounts>,
}

impl TsMetricsSource {
    /// Connects to `url`; `Err` is the reason, as a phrase.
    pub async fn open(target: &Target, url: &str) -> Result<TsMetricsSource, String> {
        let (side, path) = super::side_target(target, url).await?;
        let conn = HttpControl::open(&side.peer)
            .await
            .map_err(|e| format!("cannot connect to {url} ({e})"))?;
        Ok(TsMetricsSource {
            conn,
            path,
            model: target.model.clone(),
            version: target.version.clone(),
            answers: None,
        })
    }

    /// The model's cumulative counters now.
    pub async fn read(&mut self) -> Result<Vec<ModelStatistics>, String> {
        let path = &self.path;
        let (status, body) =
            (self.conn.get(path).await).map_err(|e| format!("GET {path} failed ({e})"))?;
        if !status.is_success() {
            return Err(format!("GET {path} answered HTTP {}", status.as_u16()));
        }
        let text = String::from_utf8_lossy(&body);
        let model = statistics(&text, &self.model, &self.version)?;
        self.answers = Some(answer_counts(&text));
        Ok(vec![model])
    }

    /// The server-wide answer counters of the last successful read.
    pub fn answers(&self) -> Option<AnswerCounts> {
        self.answers
    }
}

/// The frontend's answer counters on a metrics page (a class TorchServe has not counted yet
/// has no series, which is zero).
pub fn answer_counts(text: &str) -> AnswerCounts {
    let Ok(page) = parse(text) else {
        return AnswerCounts::default();
    };
    let sum = |name: &str| -> u64 {
        let values = page.samples.iter().filter(|s| s.name == name);
        values.map(|s| s.value).sum::<f64>().max(0.0) as u64
    };
    AnswerCounts {
        ok: sum(REQUESTS_2XX),
        client_errors: sum(REQUESTS_4XX),
        server_errors: sum(REQUESTS_5XX),
    }
}

/// The model's counters on a metrics page, every version added (TorchServe labels a request
/// with the version it named, or `default`, so one version's series would miss the rest).
/// A page with none of TorchServe's counters is an error; a model with no series yet has
/// zeros.
pub fn statistics(text: &str, model: &str, version: &str) -> Result<ModelStatistics, String> {
    let page = parse(text).map_err(|e| format!("the metrics page is not Prometheus text ({e})"))?;
    let torchserve = (page.samples.iter()).any(|s| s.name == REQUESTS || s.name == REQUESTS_2XX);
    if !torchserve {
        return Err(format!(
            "the page has no {REQUESTS} nor {REQUESTS_2XX}: start TorchServe with metrics_mode=prometheus"
        ));
    }
    let ours = |s: &&MetricSample| s.label("model_name") == Some(model);
    let sum = |name: &str| -> f64 {
        (page.samples.iter())
            .filter(|s| s.name == name)
            .filter(ours)
            .map(|s| s.value)
            .sum()
    };
    let requests = sum(REQUESTS).max(0.0) as u64;
    let inference_ns = (sum(INFERENCE_US) * 1000.0).max(0.0) as u64;
    let queue_ns = (sum(QUEUE_US) * 1000.0).max(0.0) as u64;
    let timed = |ns: u64| {
        Some(StatisticDuration {
            count: requests,
            ns,
        })
    };
    Ok(ModelStatistics {
        name: model.to_string(),
        version: version.to_string(),
        inference_count: requests,
        execution_count: requests,
        inference_stats: Some(InferStatistics {
            success: timed(inference_ns),
            queue: timed(queue_ns),
            compute_infer: timed(inference_ns.saturating_sub(queue_ns)),
            ..Default::default()
        }),
        ..Default::default()
    })
}

impl StatsReader for TsMetricsSource {
    fn read(&mut self) -> BoxFuture<'_, Result<Vec<ModelStatistics>, String>> {
        Box::pin(TsMetricsSource::read(self))
    }

    fn answers(&self) -> Option<AnswerCounts> {
        TsMetricsSource::answers(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# HELP ts_inference_requests_total Total number of inference requests.\n\
# TYPE ts_inference_requests_total counter\n\
ts_inference_requests_total{model_name=\"echo\",model_version=\"default\",hostname=\"h\",} 10.0\n\
ts_inference_requests_total{model_name=\"other\",model_version=\"default\",hostname=\"h\",} 99.0\n\
# TYPE ts_queue_latency_microseconds counter\n\
ts_queue_latency_microseconds{model_name=\"echo\",model_version=\"default\",hostname=\"h\",} 500.0\n\
# TYPE ts_inference_latency_microseconds counter\n\
ts_inference_latency_microseconds{model_name=\"echo\",model_version=\"default\",hostname=\"h\",} 2500.5\n\
# TYPE Requests2XX counter\n\
Requests2XX{Level=\"Host\",Hostname=\"h\",} 12.0\n";

    #[test]
    fn torchserves_counters_become_model_statistics() {
        let s = statistics(PAGE, "echo", "").unwrap();
        assert_eq!((s.inference_count, s.execution_count), (10, 10));
        let i = s.inference_stats.unwrap();
        assert_eq!(i.success.unwrap().ns, 2_500_500);
        assert_eq!(i.queue.unwrap().ns, 500_000);
        assert_eq!(i.compute_infer.unwrap().ns, 2_000_500);
        assert_eq!(i.queue.unwrap().count, 10);
        // A model that has no series yet counts zero; a page without TorchServe's counters
        // is an error that says how to turn them on.
        assert_eq!(statistics(PAGE, "new", "").unwrap().inference_count, 0);
        assert!(statistics("up 1\n", "echo", "")
            .unwrap_err()
            .contains("metrics_mode=prometheus"));
    }

    #[test]
    fn answer_classes_are_read_and_a_missing_class_is_zero() {
        let page = format!("{PAGE}Requests5XX{{Level=\"Host\",Hostname=\"h\",}} 3.0\n");
        let counts = answer_counts(&page);
        let expected = AnswerCounts {
            ok: 12,
            client_errors: 0,
            server_errors: 3,
        };
        assert_eq!(counts, expected);
        let later = AnswerCounts {
            ok: 20,
            client_errors: 1,
            server_errors: 3,
        };
        let delta = later.since(&counts);
        assert_eq!(
            (delta.ok, delta.client_errors, delta.server_errors),
            (8, 1, 0)
        );
    }
}
