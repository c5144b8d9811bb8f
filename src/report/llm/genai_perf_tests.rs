//! Tests of GenAI-Perf's CSV and JSON: headers, row order, names, units and values from a
//! constructed window.

use super::*;
use crate::measure::tokens::GoodputRule;
use crate::report::llm::{test_llm_settings, test_llm_window};

fn lines(text: &str) -> Vec<&str> {
    text.split("\r\n").collect()
}

#[test]
fn the_csv_has_genai_perfs_blocks_rows_and_numbers() {
    let settings = test_llm_settings(&["--streaming"]);
    let text = csv(&settings, &test_llm_window());
    let got = lines(&text);
    assert_eq!(
        got[0],
        "Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1"
    );
    let names: Vec<&str> = got[1..8]
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Time To First Token (ms)",
            "Time To Second Token (ms)",
            "Request Latency (ms)",
            "Inter Token Latency (ms)",
            "Output Token Throughput Per User (tokens/sec/user)",
            "Output Sequence Length (tokens)",
            "Input Sequence Length (tokens)",
        ]
    );
    // TTFT 10/20/30/40 ms: avg, min, max, then percentiles from the histogram.
    assert!(
        got[1].starts_with("Time To First Token (ms),25.00,10.00,40.00,40.0"),
        "{}",
        got[1]
    );
    assert!(got[1].ends_with(",10.00"), "p1 is the smallest: {}", got[1]);
    assert!(got[2].starts_with("Time To Second Token (ms),5.00,5.00,5.00,"));
    assert!(got[3].starts_with("Request Latency (ms),45.00,30.00,60.00,"));
    assert!(got[4].starts_with("Inter Token Latency (ms),1.05,1.05,1.05,"));
    assert!(got[5].starts_with("Output Token Throughput Per User (tokens/sec/user),950.00,"));
    assert_eq!(
        got[7],
        "Input Sequence Length (tokens),100.00,100.00,100.00,100.00,100.00,100.00,100.00,100.00,100.00,100.00,100.00,100.00"
    );
    assert_eq!(got[8], "", "one empty line between the blocks");
    assert_eq!(
        &got[9..],
        [
            "Metric,Value",
            "Output Token Throughput (tokens/sec),40.00",
            "Request Throughput (per sec),2.00",
            "Request Count (count),4.00",
            "",
        ]
    );
}

#[test]
fn without_streaming_the_streaming_rows_are_left_out_and_goodput_comes_with_limits() {
    let settings = test_llm_settings(&[]);
    let mut w = test_llm_window();
    w.goodput = GoodputRule {
        ttft_ns: Some(25_000_000),
        ..GoodputRule::default()
    };
    let text = csv(&settings, &w);
    let names: Vec<&str> = lines(&text)
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Metric",
            "Request Latency (ms)",
            "Output Sequence Length (tokens)",
            "Input Sequence Length (tokens)",
            "",
            "Metric",
            "Output Token Throughput (tokens/sec)",
            "Request Throughput (per sec)",
            "Request Goodput (per sec)",
            "Request Count (count)",
            "",
        ]
    );
}

#[test]
fn large_numbers_are_grouped_and_quoted_and_missing_ones_are_na() {
    let settings = test_llm_settings(&["--streaming"]);
    let mut w = test_llm_window();
    w.duration = std::time::Duration::from_millis(1);
    let text = csv(&settings, &w);
    assert!(
        text.contains("\r\nOutput Token Throughput (tokens/sec),\"80,000.00\"\r\n"),
        "{text}"
    );
    let empty = crate::measure::window::WindowStats::new(1);
    let text = csv(&settings, &empty);
    assert!(
        text.contains("\r\nTime To First Token (ms),N/A,N/A,N/A,N/A,"),
        "{text}"
    );
}

#[test]
fn embeddings_report_latency_throughput_and_count() {
    let settings = test_llm_settings(&["--endpoint", "v1/embeddings"]);
    let text = csv(&settings, &test_llm_window());
    let names: Vec<&str> = lines(&text)
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Metric",
            "Request Latency (ms)",
            "",
            "Metric",
            "Request Throughput (per sec)",
            "Request Count (count)",
            ""
        ]
    );
}

#[test]
fn the_json_is_genai_perfs_stats_dict_in_its_order() {
    let settings = test_llm_settings(&["--streaming"]);
    let mut w = test_llm_window();
    w.goodput = GoodputRule {
        itl_ns: Some(2_000_000),
        ..GoodputRule::default()
    };
    let text = json(&settings, LoadLevel::Concurrency(4), &w).pretty();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut in_file_order = keys.clone();
    in_file_order.sort_by_key(|k| text.find(&format!("\n  \"{k}\":")).unwrap());
    assert_eq!(
        in_file_order,
        [
            "request_throughput",
            "request_latency",
            "request_goodput",
            "request_count",
            "time_to_first_token",
            "time_to_second_token",
            "inter_token_latency",
            "output_token_throughput",
            "output_token_throughput_per_user",
            "output_sequence_length",
            "input_sequence_length",
            "input_config",
        ]
    );
    assert!(text.starts_with(
        "{\n  \"request_throughput\": {\n    \"unit\": \"requests/sec\",\n    \"avg\": 2.0\n  },\n  \"request_latency\": {\n    \"unit\": \"ms\",\n    \"avg\": 45.0,\n    \"p1\": 30."
    ), "{text}");
    let ttft = &value["time_to_first_token"];
    let stat_order: Vec<usize> = [
        "unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max",
        "std",
    ]
    .iter()
    .map(|k| text.find(&format!("\"{k}\"")).unwrap())
    .collect();
    assert!(stat_order.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(ttft["min"], 10.0);
    assert!((ttft["std"].as_f64().unwrap() - 125f64.sqrt()).abs() < 1e-9);
    assert_eq!(value["request_count"]["avg"], 4.0);
    assert_eq!(value["request_count"]["unit"], "count");
    assert_eq!(value["output_token_throughput"]["avg"], 40.0);
    let config = &value["input_config"];
    assert_eq!(config["model_names"][0], "test-model");
    assert_eq!(config["endpoint"]["type"], "chat");
    assert_eq!(config["endpoint"]["streaming"], true);
    assert_eq!(config["perf_analyzer"]["stimulus"]["concurrency"], 4);
    assert_eq!(config["input"]["goodput"]["inter_token_latency"], 2.0);
}

#[test]
fn the_json_leaves_out_metrics_without_values() {
    let settings = test_llm_settings(&[]);
    let w = crate::measure::window::WindowStats::new(1);
    let value: serde_json::Value =
        serde_json::from_str(&json(&settings, LoadLevel::Rate(2.5), &w).compact()).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "input_config",
            "output_token_throughput",
            "request_count",
            "request_throughput"
        ]
    );
    assert_eq!(
        value["input_config"]["perf_analyzer"]["stimulus"]["request_rate"],
        2.5
    );
}
