//! The core profile against the embedded server: perf_analyzer's CSV, Little's law over
//! HTTP and gRPC, errors counted through a run, and the sentences and exit codes of bad input.

use crate::common;

use common::*;
use inferperf::config::LoadLevel;

/// perf_analyzer's CSV header for a server without statistics and default options.
/// perf_analyzer's header against a server with the statistics extension (the embedded
/// server has it): the server breakdown sits between Client Send and Client Recv.
const PA_HEADER: &str = "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_has_perf_analyzers_columns_and_a_row_per_level() {
    let server = start_server(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let out = run_cli(&[
        "-m",
        "identity",
        "-u",
        &url(&server, "http"),
        "--concurrency-range",
        "1:3",
        "-p",
        "300",
        "-s",
        "50",
        "-r",
        "4",
        "-f",
        csv.to_str().unwrap(),
    ])
    .await;
    assert!(matches!(out.status.code(), Some(0 | 2)), "{}", stderr(&out));
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], PA_HEADER);
    assert_eq!(lines.len(), 4, "one row per level:\n{text}");
    let mut levels: Vec<u32> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    levels.sort();
    assert_eq!(levels, vec![1, 2, 3]);
    let report = stdout(&out);
    for needle in [
        "*** Measurement Settings ***",
        "Request concurrency: 3",
        "Avg HTTP time:",
        "Inferences/Second vs. Client Average Batch Latency",
    ] {
        assert!(report.contains(needle), "missing {needle:?} in:\n{report}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn percentile_column_is_merged_in_order() {
    let server = start_server(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("p.csv");
    let out = run_cli(&[
        "profile",
        "-m",
        "identity",
        "-u",
        &url(&server, "grpc"),
        "-i",
        "grpc",
        "--concurrency-range",
        "2",
        "-p",
        "300",
        "-s",
        "50",
        "-r",
        "3",
        "--percentile",
        "99.9",
        "-f",
        csv.to_str().unwrap(),
    ])
    .await;
    assert!(matches!(out.status.code(), Some(0 | 2)), "{}", stderr(&out));
    let header = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(header, format!("{PA_HEADER},p99.9 latency"));
    assert!(stdout(&out).contains("p99.9 latency:"), "{}", stdout(&out));
    assert!(stdout(&out).contains("Avg gRPC time:"), "{}", stdout(&out));
}

/// Throughput × mean latency = requests in flight. A client that spends time outside the
/// request, or a driver that does not keep N in flight, breaks this.
async fn assert_littles_law(protocol: &str) {
    let server = start_server(&[]).await;
    for c in [1u32, 4, 16] {
        let c_text = c.to_string();
        let results = profile(&[
            "-m",
            "identity",
            "-u",
            &url(&server, protocol),
            "-i",
            protocol,
            "--concurrency-range",
            &c_text,
            "-p",
            "500",
            "-s",
            "20",
            "-r",
            "5",
        ])
        .await;
        let r = &results[0];
        assert_eq!(r.level, LoadLevel::Concurrency(c));
        let in_flight = r.merged.throughput() * r.merged.mean_latency_us() / 1e6;
        println!(
            "{protocol} c={c}: {:.0} infer/s × {:.1} µs = {in_flight:.2}",
            r.merged.throughput(),
            r.merged.mean_latency_us()
        );
        assert!(
            r.merged.error_count() == 0,
            "no errors expected: {:?}",
            r.merged.errors
        );
        assert!(
            (in_flight - c as f64).abs() <= 0.10 * c as f64,
            "{protocol} c={c}: throughput × latency = {in_flight:.2}"
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn littles_law_holds_over_http() {
    assert_littles_law("http").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn littles_law_holds_over_grpc() {
    assert_littles_law("grpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_server_gives_its_error_rate_and_the_run_completes() {
    let server = start_server(&["flaky=fail:rate=0.1"]).await;
    for protocol in ["http", "grpc"] {
        let results = profile(&[
            "-m",
            "flaky",
            "-u",
            &url(&server, protocol),
            "-i",
            protocol,
            "--concurrency-range",
            "4",
            "-p",
            "400",
            "-s",
            "30",
            "-r",
            "4",
        ])
        .await;
        let merged = &results[0].merged;
        let rate = merged.error_rate();
        println!(
            "{protocol}: {} ok, {:?} errors, rate {rate:.4}",
            merged.ok, merged.errors
        );
        assert!(merged.completed() > 1000, "enough requests to judge a rate");
        assert!((rate - 0.10).abs() <= 0.03, "{protocol}: error rate {rate}");
        let expected_kind = if protocol == "http" {
            "HTTP 500"
        } else {
            "gRPC INTERNAL"
        };
        assert!(
            merged.errors.keys().all(|k| k.to_string() == expected_kind),
            "{:?}",
            merged.errors
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gives_one_sentence_and_perf_analyzers_exit_code() {
    let server = start_server(&["identity=identity", "var=identity:shape=-1"]).await;
    let http = url(&server, "http");
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["-m", "var", "-u", &http], 3, "--shape INPUT0:"),
        (
            vec!["-m", "var", "-u", &http, "--shape", "INPUT0"],
            3,
            "--shape 'INPUT0'",
        ),
        (
            vec!["-m", "var", "-u", &http, "--shape", "INPUT0:2,2"],
            3,
            "does not fit",
        ),
        (vec!["-m", "nope", "-u", &http], 99, "has no model 'nope'"),
        (
            vec!["-m", "identity", "-u", "127.0.0.1:1"],
            99,
            "Cannot reach the server at 127.0.0.1:1",
        ),
        (
            vec!["-m", "identity", "-u", "127.0.0.1:1", "-i", "grpc"],
            99,
            "Cannot reach the server",
        ),
        (
            vec!["-m", "identity", "--no-such-flag"],
            3,
            "--no-such-flag",
        ),
        (
            vec!["-m", "identity", "--concurrency-range", "8:2"],
            3,
            "--concurrency-range",
        ),
    ];
    for (args, code, needle) in cases {
        let out = run_cli(&args).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected {needle:?} in {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_and_version_work() {
    let help = run_cli(&["--help"]).await;
    assert_eq!(help.status.code(), Some(0));
    for flag in [
        "--concurrency-range",
        "--measurement-interval",
        "--percentile",
        "--input-tensor-format",
    ] {
        assert!(stdout(&help).contains(flag), "--help lacks {flag}");
    }
    let version = run_cli(&["--version"]).await;
    assert_eq!(version.status.code(), Some(0));
    assert_eq!(
        stdout(&version).trim(),
        format!("inferperf {}", env!("CARGO_PKG_VERSION"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_count_sends_exactly_that_many() {
    let server = start_server(&[]).await;
    let results = profile(&[
        "-m",
        "identity",
        "-u",
        &url(&server, "http"),
        "--concurrency-range",
        "4",
        "--request-count",
        "250",
        "--warmup-request-count",
        "30",
    ])
    .await;
    assert_eq!(results[0].merged.completed(), 250);
    assert_eq!(results[0].windows.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_threshold_stops_the_sweep() {
    let server = start_server(&["slow=sleep:ms=20"]).await;
    let results = profile(&[
        "-m",
        "slow",
        "-u",
        &url(&server, "http"),
        "--concurrency-range",
        "1:8",
        "-p",
        "300",
        "-s",
        "50",
        "-r",
        "3",
        "-l",
        "5",
    ])
    .await;
    assert_eq!(results.len(), 1, "the first level is already over 5 ms");
    assert_eq!(
        results[0].end,
        inferperf::measure::level::LevelEnd::OverLatencyLimit
    );
}
