//! Load over time against the embedded server: `--load-steps` and `--ramp` give one bucket per
//! second whose throughput follows the plan's target, for request rates (open loop) and for
//! concurrency (closed loop), and `-f` writes them as a time-series CSV.

use crate::common;

use std::sync::Arc;

use common::*;
use inferperf::load::profiler::Interrupt;
use inferperf::load::timeline::run_timeline;
use inferperf::measure::timeline::Bucket;

/// Follows the plan of these flags in-process and returns its buckets.
async fn buckets(args: &[&str]) -> Vec<Bucket> {
    let cfg = config(args);
    let prepared = inferperf::commands::profile::prepare(&cfg)
        .await
        .expect("prepare");
    let interrupt = Arc::new(Interrupt::default());
    let outcome = run_timeline(
        inferperf::commands::profile::plan(&cfg),
        prepared.replicas,
        prepared.dataset,
        interrupt,
        |_| {},
    )
    .await;
    if let Some(e) = outcome.error {
        panic!("timeline failed: {e}");
    }
    for b in &outcome.buckets {
        println!(
            "{:>4.1}s target {:>6.1} sent {:>5} done {:>7.1}/s p50 {:>6.0} us p99 {:>7.0} us errors {}{}",
            b.start.as_secs_f64(),
            b.target,
            b.stats.sent,
            b.stats.throughput(),
            b.stats.percentile_us(50.0),
            b.stats.percentile_us(99.0),
            b.stats.error_count(),
            if b.after_end { " (after the end)" } else { "" }
        );
    }
    outcome.buckets
}

/// Every bucket of the plan has a throughput within `tolerance` of its target.
fn assert_follows(buckets: &[Bucket], expected: &[f64], tolerance: f64) {
    let planned: Vec<&Bucket> = buckets.iter().filter(|b| !b.after_end).collect();
    assert_eq!(planned.len(), expected.len(), "one bucket per second");
    for (i, (b, want)) in planned.iter().zip(expected).enumerate() {
        assert!(
            (b.target - want).abs() < want * 0.01,
            "bucket {i}: target {} instead of {want}",
            b.target
        );
        let got = b.stats.throughput();
        assert!(
            (got - want).abs() <= want * tolerance,
            "bucket {i}: throughput {got:.1}/s, target {want}"
        );
        assert_eq!(b.stats.error_count(), 0);
    }
    assert!(buckets
        .iter()
        .filter(|b| b.after_end)
        .all(|b| b.target == 0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_step_shows_in_the_per_second_buckets() {
    let server = start_server(&["noop=noop"]).await;
    let buckets = buckets(&[
        "-m",
        "noop",
        "-u",
        &url(&server, "http"),
        "--load-steps",
        "rate=100:2s,rate=1000:2s,rate=100:1s",
    ])
    .await;
    assert_follows(&buckets, &[100.0, 100.0, 1000.0, 1000.0, 100.0], 0.05);
    // Requests are sent, not only answered, at the step's rate.
    assert!(buckets[2].stats.sent.abs_diff(1000) <= 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_ramp_rises_linearly() {
    let server = start_server(&["noop=noop"]).await;
    let buckets = buckets(&[
        "-m",
        "noop",
        "-u",
        &url(&server, "http"),
        "--ramp",
        "3s",
        "--request-rate-range",
        "200:800",
    ])
    .await;
    // 200 → 800 over 3 s: each second's mean is 300, 500, 700.
    assert_follows(&buckets, &[300.0, 500.0, 700.0], 0.05);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_steps_and_the_time_series_csv() {
    let server = start_server(&["four=sleep:ms=20,instances=4"]).await;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("series.csv");
    let out = run_cli(&[
        "-m",
        "four",
        "-u",
        &url(&server, "http"),
        "--load-steps",
        "concurrency=1:1s,concurrency=4:1s",
        "-f",
        csv.to_str().unwrap(),
    ])
    .await;
    let text = stdout(&out);
    println!("{text}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(text.contains("Load over time: concurrency 1 for 1s, 4 for 1s, reported per second"));
    assert!(text.contains("Load over time, per second"));
    assert!(
        !text.contains("Measurement window"),
        "no windows in a timeline"
    );
    let rows: Vec<Vec<String>> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    assert_eq!(
        rows[0].join(","),
        "Time (s),Target Concurrency,Inferences/Second,Errors,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency"
    );
    // 1 slot of 20 ms: 50/s; 4 slots on 4 instances: 200/s.
    for (row, want) in rows[1..3].iter().zip([50.0, 200.0]) {
        let throughput: f64 = row[2].parse().unwrap();
        assert!(
            (throughput - want).abs() <= want * 0.1,
            "{row:?}: {throughput} instead of {want}"
        );
        let p50: f64 = row[4].parse().unwrap();
        assert!((19_000.0..30_000.0).contains(&p50), "{row:?}");
    }
    assert_eq!(rows[1][0], "0");
    assert_eq!(rows[2][0], "1");
    assert_eq!(rows[2][1], "4");
}
