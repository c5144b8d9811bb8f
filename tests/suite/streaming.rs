//! Streamed answers against the embedded server's decoupled `stream` model: every answer of
//! a request is timed (first-response and inter-response latency, answers per request,
//! response throughput) over gRPC's ModelStreamInfer and in process, the report and CSV show
//! them, periodic concurrency paces its sets by answers, and a decoupled model asked for
//! without a stream is refused in one sentence.

use crate::common;

use common::*;
use inferperf::backend::ErrorKind;
use inferperf::measure::window::WindowStats;

/// 5 answers: the first 10 ms after the request starts, then 4 ms apart; 2 instances.
const TOKENS: &str = "tokens=stream:responses=5,first_ms=10,interval_ms=4,instances=2";
/// What one request of TOKENS takes: 10 + 4 × 4 ms.
const STREAM_MS: f64 = 26.0;

fn within(value: f64, expected: f64, share: f64) -> bool {
    (value - expected).abs() <= share * expected
}

/// Checks the figures of TOKENS at concurrency 2 (its two instances busy all the time).
fn assert_stream_figures(w: &WindowStats, how: &str) {
    assert_eq!(w.error_count(), 0, "{how}: {:?}", w.errors);
    assert_eq!(
        w.responses.sum(),
        5 * w.ok as u128,
        "{how}: 5 answers per request"
    );
    assert_eq!(w.responses.percentile(50.0), 5.0, "{how}");
    let first_ms = w.first_response.percentile(50.0) / 1e6;
    assert!(
        within(first_ms, 10.0, 0.10),
        "{how}: first answer p50 {first_ms} ms"
    );
    let gap_ms = w.inter_response.percentile(50.0) / 1e6;
    assert!(
        within(gap_ms, 4.0, 0.10),
        "{how}: inter-answer p50 {gap_ms} ms"
    );
    let expected = 2.0 / (STREAM_MS / 1000.0);
    assert!(
        within(w.throughput(), expected, 0.05),
        "{how}: throughput {} for {expected}",
        w.throughput()
    );
    let ratio = w.response_throughput() / w.throughput();
    assert!(
        (ratio - 5.0).abs() < 1e-9,
        "{how}: response throughput ×{ratio}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_of_a_decoupled_model_is_measured_over_grpc() {
    let server = start_server(&[TOKENS]).await;
    let url = url(&server, "grpc");
    let results = profile(&[
        "-m",
        "tokens",
        "-u",
        &url,
        "-i",
        "grpc",
        "--streaming",
        "--concurrency-range",
        "2",
        "-p",
        "1500",
    ])
    .await;
    assert_stream_figures(&results[0].merged, "gRPC stream");
    // The server counted the same requests and every response (five, then the empty one).
    let stats = server.local.statistics("tokens").expect("statistics");
    let answered = stats.response_stats.get("0").and_then(|r| r.success);
    assert!(answered.is_some_and(|d| d.count >= results[0].merged.ok));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_of_a_decoupled_model_is_measured_in_process() {
    let results = profile(&[
        "-m",
        "tokens",
        "--service-kind",
        "local",
        "--model",
        TOKENS,
        "--streaming",
        "--concurrency-range",
        "2",
        "-p",
        "1500",
    ])
    .await;
    assert_stream_figures(&results[0].merged, "in process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_answers_once_streams_one_answer_per_request() {
    let server = start_server(&["identity=identity"]).await;
    let results = profile(&[
        "-m",
        "identity",
        "-u",
        &url(&server, "grpc"),
        "-i",
        "grpc",
        "--streaming",
        "--concurrency-range",
        "4",
        "-p",
        "500",
        "-s",
        "50",
    ])
    .await;
    let w = &results[0].merged;
    assert!(w.ok > 100, "{} requests", w.ok);
    assert_eq!(w.error_count(), 0, "{:?}", w.errors);
    assert_eq!(w.responses.sum(), w.ok as u128);
    assert_eq!(w.inter_response.count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_on_a_stream_are_counted_and_the_stream_goes_on() {
    let server = start_server(&["flaky=fail:rate=0.5"]).await;
    let results = profile(&[
        "-m",
        "flaky",
        "-u",
        &url(&server, "grpc"),
        "-i",
        "grpc",
        "--streaming",
        "--request-count",
        "400",
    ])
    .await;
    let w = &results[0].merged;
    let failed = w.errors.get(&ErrorKind::StreamError).copied().unwrap_or(0);
    assert_eq!(w.ok + failed, 400, "{:?}", w.errors);
    let share = failed as f64 / 400.0;
    assert!((share - 0.5).abs() < 0.1, "{failed} stream errors of 400");
    assert!(w.notes.iter().any(|n| n.kind == ErrorKind::StreamError));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_and_the_csv_show_streamed_answers() {
    let server = start_server(&[TOKENS]).await;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let out = run_cli(&[
        "-m",
        "tokens",
        "-u",
        &url(&server, "grpc"),
        "-i",
        "grpc",
        "--streaming",
        "--concurrency-range",
        "1:2",
        "-p",
        "600",
        "-s",
        "50",
        "-f",
        csv.to_str().unwrap(),
    ])
    .await;
    assert!(matches!(out.status.code(), Some(0 | 2)), "{}", stderr(&out));
    let report = stdout(&out);
    for needle in [
        "    Response Throughput: ",
        "    First response latency: avg ",
        "    Inter-response latency: avg ",
        "    Responses per request: avg 5, p50 5, p90 5, p95 5, p99 5",
    ] {
        assert!(report.contains(needle), "missing {needle:?} in:\n{report}");
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    let header = text.lines().next().unwrap();
    assert!(
        header.starts_with("Concurrency,Inferences/Second,Response Throughput,Client Send,"),
        "{header}"
    );
    assert!(
        header.ends_with(
            ",p50 first response latency,p99 first response latency,p50 inter-response latency,p99 inter-response latency,Responses per request"
        ),
        "{header}"
    );
    let row: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(row.last(), Some(&"5"));
    let first_us: f64 = row[row.len() - 5].parse().unwrap();
    assert!(
        within(first_us, 10_000.0, 0.2),
        "p50 first response {first_us} us"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decoupled_model_needs_a_stream() {
    let server = start_server(&[TOKENS]).await;
    let unary = run_cli(&["-m", "tokens", "-u", &url(&server, "grpc"), "-i", "grpc"]).await;
    assert_eq!(unary.status.code(), Some(3));
    assert_eq!(
        stderr(&unary).trim(),
        "error: Model 'tokens' is decoupled: it answers over a gRPC stream only (perhaps many answers per request); add -i grpc --streaming."
    );
    let http = run_cli(&["-m", "tokens", "-u", &url(&server, "http"), "--streaming"]).await;
    assert_eq!(http.status.code(), Some(3));
    assert!(stderr(&http).contains("--streaming sends over gRPC"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periodic_concurrency_starts_a_set_each_period() {
    let server =
        start_server(&["tokens=stream:responses=6,first_ms=5,interval_ms=3,instances=8"]).await;
    let results = profile(&[
        "-m",
        "tokens",
        "-u",
        &url(&server, "grpc"),
        "-i",
        "grpc",
        "--streaming",
        "--periodic-concurrency-range",
        "2:10:4",
        "--request-period",
        "3",
    ])
    .await;
    let w = &results[0].merged;
    assert_eq!(w.ok, 10, "2 + 4 + 4 requests: {:?}", w.errors);
    assert_eq!(w.responses.sum(), 60);
    assert!(results[0].notes.is_empty(), "{:?}", results[0].notes);
    // The sets overlap: the run is shorter than three streams one after the other.
    let span = w.duration.as_secs_f64() * 1000.0;
    let stream_ms = 5.0 + 5.0 * 3.0;
    assert!(
        span < 3.0 * stream_ms,
        "the sets did not overlap: {span} ms"
    );
    assert!(span >= stream_ms, "{span} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_period_longer_than_the_stream_does_not_hang() {
    let server = start_server(&["short=stream:responses=2,first_ms=2,interval_ms=2"]).await;
    let results = profile(&[
        "-m",
        "short",
        "-u",
        &url(&server, "grpc"),
        "-i",
        "grpc",
        "--streaming",
        "--periodic-concurrency-range",
        "1:3:1",
        "--request-period",
        "10",
    ])
    .await;
    assert_eq!(results[0].merged.ok, 3);
    assert_eq!(
        results[0].notes,
        vec!["3 request(s) ended after fewer than --request-period 10 answers; the next set started when they ended."]
    );
}
