//! Tests of the console report: perf_analyzer's layout line for line, and inferperf's additions.

use super::*;
use crate::backend::ErrorKind;
use crate::report::{test_level, test_settings, test_settings_with, test_window};
use inferperf_wire::model::ModelSpec;

/// 100 requests of 1..=100 ms over 5 s at concurrency 4.
fn hundred_requests(end: LevelEnd) -> LevelResult {
    let latencies: Vec<u64> = (1..=100).map(|i| i * 1000).collect();
    test_level(LoadLevel::Concurrency(4), &latencies, 5.0, end)
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[test]
fn level_block_has_perf_analyzer_lines() {
    let block = level_block(
        &test_settings(),
        &ModelSpec::default(),
        &hundred_requests(LevelEnd::Stable),
    );
    let got = lines(&block);
    assert_eq!(got[0], "Request concurrency: 4");
    assert_eq!(got[1], "  Client: ");
    assert_eq!(got[2], "    Request count: 100");
    assert_eq!(got[3], "    Throughput: 20 infer/sec");
    assert!(got[4].starts_with("    Avg latency: 50500 usec (standard deviation 290"));
    assert!(got[5].starts_with("    p50 latency: 50"), "{}", got[5]);
    assert!(got[6].starts_with("    p90 latency: 90"), "{}", got[6]);
    assert!(got[7].starts_with("    p95 latency: 95"), "{}", got[7]);
    assert!(got[8].starts_with("    p99 latency: 99"), "{}", got[8]);
    assert_eq!(
        got[9],
        "    Avg HTTP time: 50500 usec (send/recv 80 usec + response wait 50420 usec)"
    );
    assert!(
        got[10].starts_with("  Where the time went: client send 64 usec"),
        "{}",
        got[10]
    );
    assert_eq!(got.len(), 11);
}

#[test]
fn percentile_line_is_merged_in_ascending_order() {
    let settings = test_settings_with(&["--percentile", "99.9"]);
    let block = level_block(
        &settings,
        &ModelSpec::default(),
        &hundred_requests(LevelEnd::Stable),
    );
    let labels: Vec<&str> = lines(&block)
        .into_iter()
        .filter(|l| l.contains(" latency: "))
        .map(|l| l.trim().split(':').next().unwrap_or(""))
        .collect();
    assert_eq!(
        labels,
        [
            "Avg latency",
            "p50 latency",
            "p90 latency",
            "p95 latency",
            "p99 latency",
            "p99.9 latency"
        ]
    );
    let settings = test_settings_with(&["--percentile", "95"]);
    let block = level_block(
        &settings,
        &ModelSpec::default(),
        &hundred_requests(LevelEnd::Stable),
    );
    assert_eq!(block.matches("p95 latency").count(), 1);
}

#[test]
fn grpc_and_verbose_split_the_protocol_time() {
    let mut settings = test_settings();
    settings.protocol = "grpc".into();
    let block = level_block(
        &settings,
        &ModelSpec::default(),
        &hundred_requests(LevelEnd::Stable),
    );
    assert!(block.contains(
        "    Avg gRPC time: 50500 usec ((un)marshal request/response 80 usec + response wait 50420 usec)\n"
    ));
    settings.protocol = "http".into();
    settings.outputs.verbose = 1;
    let block = level_block(
        &settings,
        &ModelSpec::default(),
        &hundred_requests(LevelEnd::Stable),
    );
    assert!(block.contains("(send 64 usec + response wait 50420 usec + receive 16 usec)"));
    assert!(block.contains("    Window 1: 20 infer/sec, latency 50500 usec\n"));
}

#[test]
fn errors_and_instability_are_reported() {
    let mut r = hundred_requests(LevelEnd::Unstable);
    let failed = [
        ErrorKind::Timeout,
        ErrorKind::HttpStatus(500),
        ErrorKind::HttpStatus(500),
    ];
    r.merged = test_window(&[1000; 97], &failed, 5.0);
    r.windows = vec![r.merged.clone(); 10];
    r.merged.windows = 3;
    let block = level_block(&test_settings(), &ModelSpec::default(), &r);
    assert!(block.contains("    Errors: 3 (3.00%): HTTP 500 × 2, timeout × 1\n"));
    assert!(block.contains(
        "  [WARNING] Not stable after 10 windows: these numbers come from the last 3 windows; \
         try a longer --measurement-interval or a larger -s.\n"
    ));
}

#[test]
fn over_latency_limit_is_noted() {
    let mut settings = test_settings();
    settings.latency_threshold_ms = Some(40.0);
    let block = level_block(
        &settings,
        &ModelSpec::default(),
        &hundred_requests(LevelEnd::OverLatencyLimit),
    );
    assert!(
        block.contains("  Latency limit reached: latency 50500 usec is at or above -l 40 msec.\n")
    );
}

#[test]
fn rate_levels_and_summary() {
    let mut settings = test_settings();
    let rate = test_level(LoadLevel::Rate(100.0), &[2000; 10], 1.0, LevelEnd::Stable);
    assert!(level_block(&settings, &ModelSpec::default(), &rate).starts_with("Request Rate: 100\n"));
    let results = [hundred_requests(LevelEnd::Stable), rate];
    assert_eq!(
        summary_block(&settings, &results),
        "Inferences/Second vs. Client Average Batch Latency\n\
         Concurrency: 4, throughput: 20 infer/sec, latency 50500 usec\n\
         Request Rate: 100, throughput: 10 infer/sec, latency 2000 usec\n"
    );
    settings.percentile = Some(99.0);
    let results = [hundred_requests(LevelEnd::Unstable)];
    let summary = summary_block(&settings, &results);
    assert!(summary.starts_with("Inferences/Second vs. Client p99 Batch Latency\n"));
    assert!(summary.contains("latency 99"), "{summary}");
    assert!(summary.ends_with(" usec (unstable)\n"));
}

#[test]
fn settings_block_matches_perf_analyzer() {
    let settings = test_settings_with(&["--concurrency-range", "1:8:1", "--async"]);
    assert_eq!(
        settings_block(&settings),
        "*** Measurement Settings ***\n  Batch size: 1\n  Service Kind: TRITON\n  \
         Using \"time_windows\" mode for stabilization\n  \
         Stabilizing using average latency and throughput\n  \
         Measurement window: 5000 msec\n  Latency limit: 0 msec\n  \
         Concurrency limit: 8 concurrent requests\n  \
         Using asynchronous calls for inference\n\n"
    );
    let mut settings = test_settings_with(&[
        "--measurement-mode",
        "count_windows",
        "--percentile",
        "95",
        "--concurrency-range",
        "1:0",
        "-l",
        "50",
    ]);
    let text = settings_block(&settings);
    assert!(text.contains("  Using \"count_windows\" mode for stabilization\n"));
    assert!(text.contains("  Minimum number of samples in each window: 50\n"));
    assert!(text.contains("  Stabilizing using p95 latency and throughput\n"));
    assert!(text.contains("  Concurrency limit: none"));
    settings.request_count = Some(200);
    assert!(settings_block(&settings).contains("Using exactly 200 requests"));
}

#[test]
fn an_llm_level_shows_genai_perfs_table_in_place_of_the_latency_lines() {
    let settings = crate::report::llm::test_llm_settings(&["--streaming"]);
    let window = crate::report::llm::test_llm_window();
    let mut level = test_level(LoadLevel::Concurrency(2), &[1000], 2.0, LevelEnd::Stable);
    level.merged = window;
    let block = level_block(&settings, &ModelSpec::default(), &level);
    let got = lines(&block);
    assert_eq!(got[0], "Request concurrency: 2");
    assert_eq!(got[2], "    Request count: 4");
    assert_eq!(got[3], "    Throughput: 2 infer/sec");
    assert_eq!(got[4].trim(), "inferperf | LLM Metrics");
    assert!(!block.contains("Avg latency") && !block.contains("p99 latency"));
    assert!(block.contains(" Time To First Token (ms) │  25.00 │"));
    assert!(got
        .iter()
        .any(|l| l.starts_with("    Errors: 1 (20.00%): timeout × 1")));
}

#[test]
fn a_load_plan_reads_as_its_segments() {
    let segment = |from: f64, to: f64, duration_s: f64| SegmentRecord {
        from,
        to,
        duration_s,
    };
    let segments = [segment(100.0, 500.0, 4.0), segment(500.0, 500.0, 10.0)];
    assert_eq!(
        plan_text("rate", &segments),
        "rate 100..500 for 4s, 500 for 10s"
    );
}
