//! Tests of AIPerf's CSV and JSON: the header, rows sorted by tag with AIPerf's names and
//! units, the level block, and the JSON's sections, from a constructed window.

use super::*;
use crate::measure::level::LoadLevel;
use crate::measure::level::{LevelEnd, LevelResult};
use crate::measure::request_log::{RequestLog, WallClock};
use crate::measure::tokens::GoodputRule;
use crate::report::llm::{test_llm_settings, test_llm_window};

fn names(csv: &str) -> Vec<String> {
    csv.split("\r\n")
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect()
}

fn row<'a>(csv: &'a str, name: &str) -> Vec<&'a str> {
    csv.split("\r\n")
        .find(|l| l.starts_with(&format!("{name},")))
        .unwrap_or_else(|| panic!("no row {name} in {csv}"))
        .split(',')
        .skip(1)
        .collect()
}

fn labels() -> RunLabels {
    RunLabels {
        benchmark_id: "0123456789ab".into(),
        cli_command: "inferperf profile -m test-model".into(),
        artifact_dir: "artifacts".into(),
    }
}

#[test]
fn the_csv_rows_are_aiperfs_names_sorted_by_tag() {
    let settings = test_llm_settings(&["--streaming"]);
    let text = csv(&settings, &test_llm_window());
    assert!(text.starts_with("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\r\n"));
    assert_eq!(
        names(&text),
        [
            "Metric",
            "Credit-to-Start Latency (ms)",
            "Effective Latency (CO-aware) (ms)",
            "HTTP Connecting (ms)",
            "HTTP Duration (excl. conn) (ms)",
            "HTTP Receiving (ms)",
            "HTTP Sending (ms)",
            "HTTP Waiting (TTFB) (ms)",
            "Input Sequence Length (tokens)",
            "Inter Chunk Latency (ms)",
            "Inter Token Latency (ms)",
            "Output Sequence Length (tokens)",
            "Output Token Throughput Per User (tokens/sec/user)",
            "Request Latency (ms)",
            "Time to First Token (ms)",
            "Time to Second Token (ms)",
            "",
            "Metric",
            "Benchmark Duration (sec)",
            "Completed Requests (Success + Error)",
            "Error Request Count",
            "Input Token Throughput (tokens/sec)",
            "Output Token Throughput (tokens/sec)",
            "Request Count",
            "Request Error Rate (%)",
            "Request Throughput (requests/sec)",
            "Total Input Sequence Length (tokens)",
            "Total Output Sequence Length (tokens)",
            "Total Token Throughput (tokens/sec)",
            "",
        ]
    );
}

#[test]
fn the_csv_values_have_two_decimals() {
    let settings = test_llm_settings(&["--streaming"]);
    let text = csv(&settings, &test_llm_window());
    let ttft = row(&text, "Time to First Token (ms)");
    assert_eq!(ttft[..4], ["25.00", "10.00", "40.00", "100.00"]);
    assert_eq!(ttft[4], "10.00", "p1");
    assert_eq!(ttft[13], format!("{:.2}", 125f64.sqrt()), "std");
    assert_eq!(
        row(&text, "Inter Chunk Latency (ms)")[3],
        "80.00",
        "16 gaps of 5 ms"
    );
    assert_eq!(row(&text, "Credit-to-Start Latency (ms)")[0], "0.00");
    assert_eq!(
        row(&text, "HTTP Connecting (ms)")[..4],
        ["0.75", "0.00", "3.00", "3.00"]
    );
    let level = |name| row(&text, name)[0].to_string();
    assert_eq!(level("Benchmark Duration (sec)"), "2.00");
    assert_eq!(level("Completed Requests (Success + Error)"), "5.00");
    assert_eq!(level("Error Request Count"), "1.00");
    assert_eq!(level("Request Error Rate (%)"), "20.00");
    assert_eq!(level("Request Count"), "4.00");
    assert_eq!(level("Request Throughput (requests/sec)"), "2.00");
    assert_eq!(level("Input Token Throughput (tokens/sec)"), "200.00");
    assert_eq!(level("Output Token Throughput (tokens/sec)"), "40.00");
    assert_eq!(level("Total Token Throughput (tokens/sec)"), "240.00");
    assert_eq!(level("Total Input Sequence Length (tokens)"), "400.00");
}

#[test]
fn without_streaming_or_errors_their_rows_go_the_http_wait_comes_and_goodput_with_limits() {
    let settings = test_llm_settings(&[]);
    let mut w = test_llm_window();
    w.errors.clear();
    w.goodput = GoodputRule {
        latency_ns: Some(1_000_000_000),
        ..GoodputRule::default()
    };
    let got = names(&csv(&settings, &w));
    for streaming_only in [
        "Time to First Token (ms)",
        "Time to Second Token (ms)",
        "Inter Token Latency (ms)",
        "Inter Chunk Latency (ms)",
        "Output Token Throughput Per User (tokens/sec/user)",
        "Error Request Count",
    ] {
        assert!(!got.iter().any(|n| n == streaming_only), "{streaming_only}");
    }
    for whole_answers_only in ["HTTP Receiving (ms)", "HTTP Waiting (TTFB) (ms)"] {
        assert!(
            got.iter().any(|n| n == whole_answers_only),
            "{whole_answers_only}"
        );
    }
    let goodput = got
        .iter()
        .position(|n| n == "Goodput (requests/sec)")
        .unwrap();
    assert_eq!(got[goodput - 1], "Good Request Count", "sorted by tag");
    assert_eq!(got[goodput + 1], "Input Token Throughput (tokens/sec)");
}

#[test]
fn embeddings_have_input_tokens_and_no_output_throughput_as_in_aiperf() {
    use crate::backend::{TokenSource, Tokens};
    use crate::measure::sample::Sample;
    use std::time::{Duration, Instant};
    let settings = test_llm_settings(&["--endpoint", "v1/embeddings"]);
    let t = Instant::now();
    let mut w = WindowStats::new(1);
    w.duration = Duration::from_secs(2);
    for _ in 0..4 {
        let mut s = Sample::once(t, t, t + Duration::from_millis(5));
        s.tokens = Tokens {
            input: 100,
            source: TokenSource::InputOnly,
            ..Default::default()
        };
        w.add(&s, &[]);
    }
    let text = csv(&settings, &w);
    let got = names(&text);
    for present in [
        "Input Sequence Length (tokens)",
        "Output Sequence Length (tokens)",
        "Total Input Sequence Length (tokens)",
        "Input Token Throughput (tokens/sec)",
    ] {
        assert!(got.iter().any(|n| n == present), "{present} in {text}");
    }
    for absent in [
        "Output Token Throughput (tokens/sec)",
        "Total Output Sequence Length (tokens)",
        "Total Token Throughput (tokens/sec)",
    ] {
        assert!(!got.iter().any(|n| n == absent), "{absent} in {text}");
    }
    assert_eq!(row(&text, "Input Sequence Length (tokens)")[0], "100.00");
    assert_eq!(
        row(&text, "Output Sequence Length (tokens)")[2],
        "0.00",
        "max"
    );
    assert_eq!(
        row(&text, "Input Token Throughput (tokens/sec)")[0],
        "200.00"
    );
}

#[test]
fn the_json_has_aiperfs_sections_and_metric_fields() {
    let settings = test_llm_settings(&["--streaming", "--request-rate-range", "4"]);
    let t = std::time::Instant::now();
    let mut log = RequestLog::new(WallClock::at(t, 1_795_478_772_567_205_000));
    log.close_window(t, t + std::time::Duration::from_secs(2));
    let level = LevelResult {
        level: LoadLevel::Rate(4.0),
        merged: test_llm_window(),
        windows: Vec::new(),
        end: LevelEnd::Stable,
        notes: Vec::new(),
        requests: Some(log),
        slices: Default::default(),
    };
    let text = json(&settings, &level, &labels()).pretty();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let position = |key: &str| text.find(&format!("\n  \"{key}\": ")).unwrap_or(usize::MAX);
    let order = [
        "schema_version",
        "aiperf_version",
        "benchmark_id",
        "request_throughput",
        "request_latency",
        "request_count",
        "time_to_first_token",
        "inter_chunk_latency",
        "benchmark_duration",
        "input_config",
        "run_info",
        "was_cancelled",
        "is_complete",
        "error_summary",
        "start_time",
        "end_time",
        "http_req_connecting",
        "effective_latency",
    ];
    let at: Vec<usize> = order.iter().map(|k| position(k)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{order:?} at {at:?}");
    assert_eq!(value["schema_version"], "1.4");
    assert_eq!(value["aiperf_version"], "0.13.0");
    let ttft = &value["time_to_first_token"];
    assert_eq!(ttft["unit"], "ms");
    assert_eq!(
        (ttft["count"].as_u64(), ttft["sum"].as_f64()),
        (Some(4), Some(100.0))
    );
    let fields = [
        "unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max",
        "std", "count", "sum",
    ];
    let ttft_text = &text[position("time_to_first_token")..position("time_to_second_token")];
    let at: Vec<usize> = fields
        .iter()
        .map(|f| ttft_text.find(&format!("\"{f}\":")).unwrap())
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(
        value["request_count"],
        serde_json::json!({"unit": "requests", "avg": 4.0})
    );
    assert_eq!(value["request_error_rate"]["avg"], 20.0);
    assert_eq!(value["effective_latency"]["avg"], 45.0);
    assert_eq!(value["start_time"], "2026-11-24T00:06:12.567205");
    assert_eq!(value["end_time"], "2026-11-24T00:06:14.567205");
    assert_eq!(value["was_cancelled"], false);
    assert_eq!(
        value["error_summary"],
        serde_json::json!([{"error_details": {"type": "timeout", "message": "timeout"}, "count": 1}])
    );
    let config = &value["input_config"];
    assert_eq!(config["models"]["items"][0]["name"], "test-model");
    assert_eq!(config["endpoint"]["urls"][0], "http://localhost:8000");
    assert_eq!(config["endpoint"]["streaming"], true);
    assert_eq!(
        config["phases"][0],
        serde_json::json!({"name": "profiling", "kind": "profiling", "type": "constant", "rate": 4.0})
    );
    assert_eq!(
        value["run_info"]["cli_command"],
        "inferperf profile -m test-model"
    );
}
