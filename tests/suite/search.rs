//! Searches against `sleep` models of known capacity on the embedded server: a binary search
//! with `-l` lands on the last concurrency the model serves without queueing, an SLO search
//! over request rates finds the knee within one step of the measured capacity, and bad
//! `--slo` text is a bad option.

use crate::common;

use common::*;
use inferperf::config::LoadLevel;
use inferperf::measure::level::{LevelEnd, LevelResult};
use inferperf::report::console::search::knee;

fn describe(results: &[LevelResult]) -> Vec<String> {
    results
        .iter()
        .map(|r| {
            format!(
                "{:?} {:?} {:.1}/s avg {:.1} ms p99 {:.1} ms",
                r.level,
                r.end,
                r.merged.throughput(),
                r.merged.mean_latency_us() / 1000.0,
                r.merged.percentile_us(99.0) / 1000.0
            )
        })
        .collect()
}

/// 4 instances of 100 ms: up to concurrency 4 a request never waits (avg 100 ms), at 5 one
/// in five waits a whole execution (avg 120 ms). `-l 112` must stop the search at 4. (The
/// margins are in ms, not shares: a busy machine adds a few ms to every sleep; 40 ms
/// executions under `-l 45` measured 45.2 ms at 4 once.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_search_with_a_latency_limit_lands_on_the_instance_count() {
    let server = start_server(&["four=sleep:ms=100,instances=4"]).await;
    let results = profile(&[
        "-m",
        "four",
        "-u",
        &url(&server, "http"),
        "--concurrency-range",
        "2:12",
        "--binary-search",
        "-l",
        "112",
        "-p",
        "800",
        "-s",
        "50",
        "-r",
        "8",
    ])
    .await;
    println!("{:#?}", describe(&results));
    let visited: Vec<LoadLevel> = results.iter().map(|r| r.level).collect();
    let c = LoadLevel::Concurrency;
    // Start and end first, then bisection: 7 misses, 4 meets, 5 misses; 4 and 5 are a step apart.
    assert_eq!(visited, vec![c(2), c(12), c(7), c(4), c(5)]);
    assert_eq!(results[1].end, LevelEnd::OverLatencyLimit);
    let best = knee(&results).expect("a level met -l");
    assert_eq!(best.level, c(4));
}

/// One instance of 10 ms serves about 100 requests a second; open loop above that, the
/// backlog (and the p99 from the scheduled send) grows without bound. The SLO search over
/// 50..150 in steps of 10 must put the knee within one step of the capacity measured in a
/// closed loop just before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slo_search_finds_the_knee_of_a_known_capacity() {
    let server = start_server(&["slow=sleep:ms=10,instances=1"]).await;
    let u = url(&server, "http");
    let saturated = profile(&[
        "-m",
        "slow",
        "-u",
        &u,
        "--concurrency-range",
        "2",
        "-p",
        "500",
        "-s",
        "100",
        "-r",
        "3",
    ])
    .await;
    let capacity = saturated[0].merged.throughput();
    let results = profile(&[
        "-m",
        "slow",
        "-u",
        &u,
        "--request-rate-range",
        "50:150:10",
        "--binary-search",
        "--slo",
        "p99<=100ms",
        "-p",
        "500",
        "-s",
        "100",
        "-r",
        "6",
    ])
    .await;
    println!("capacity {capacity:.1}/s; {:#?}", describe(&results));
    let best = knee(&results).expect("a rate met the SLO");
    let LoadLevel::Rate(rate) = best.level else {
        panic!("a rate search gives rates");
    };
    assert!(
        (rate - capacity).abs() <= 10.0 + 1.0,
        "knee {rate}/s is more than a step from the capacity {capacity:.1}/s"
    );
    assert!(best.merged.percentile_us(99.0) <= 100_000.0);
    // The levels above capacity were measured and missed.
    assert!(results
        .iter()
        .any(|r| r.end == LevelEnd::MissedSlo
            && matches!(r.level, LoadLevel::Rate(x) if x > capacity)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prints_the_knee_and_rejects_bad_slo_text() {
    let server = start_server(&["four=sleep:ms=5,instances=4"]).await;
    let u = url(&server, "http");
    let out = run_cli(&[
        "-m",
        "four",
        "-u",
        &u,
        "--concurrency-range",
        "1:8:4",
        "--slo",
        "p99<=500ms,avg<=400ms",
        "-p",
        "200",
        "-s",
        "100",
    ])
    .await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("  SLO: p99<=500ms, avg<=400ms"), "{text}");
    assert!(text.contains("Search for p99<=500ms, avg<=400ms; levels in the order measured:"));
    assert!(text.contains("  Concurrency 1: met"), "{text}");
    assert!(text.contains("Knee: Concurrency 5, throughput"), "{text}");

    for bad in ["p99=50ms", "p99<=50", "p101<=1ms"] {
        let out = run_cli(&["-m", "four", "-u", &u, "--slo", bad]).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{bad}: {err}");
        assert_eq!(err.lines().count(), 1, "one sentence: {err}");
        assert!(err.contains(&format!("--slo '{bad}'")), "{err}");
    }
    let out = run_cli(&["-m", "four", "-u", &u, "--binary-search"]).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("--binary-search"));
}
