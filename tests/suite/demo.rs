//! `inferperf demo` runs end to end with nothing else installed: it prints the report and
//! the local/HTTP/gRPC comparison, writes the CSVs, and exits 0; its first sweep tells its
//! story (throughput grows with concurrency up to the model's 8 instances, then only latency
//! grows), and its client CPU is labelled as the client's and the in-process server's
//! together, with no claim that the client limited the load.

use crate::common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("reports");
    let started = std::time::Instant::now();
    let out = run_cli(&["demo", "--out", out_dir.to_str().unwrap(), "-p", "300"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text, stderr(&out));
    assert!(
        started.elapsed().as_secs() < 60,
        "the demo must finish within a minute"
    );
    for needle in [
        "*** Measurement Settings ***",
        "Request concurrency: 22",
        "Inferences/Second vs. Client Average Batch Latency",
        "What the framework itself costs per request",
        "    Responses per request: avg 5,",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    // One HTML page with every scenario, its path printed; the LLM's figures drawn.
    let html = out_dir.join("report.html");
    assert!(text.contains(&html.display().to_string()), "{text}");
    let page = std::fs::read_to_string(&html).expect("the demo writes report.html");
    assert!(page.contains("Text generation") && page.contains("Latency against throughput"));
    assert_eq!(
        page.matches("Latency against throughput").count(),
        4 * 2,
        "title and label per scenario"
    );
    assert!(!page.contains("<script") && page.len() < 2 << 20);
    assert!(
        text.contains(" cores of ") && text.contains(", client and in-process server together\n"),
        "{text}"
    );
    assert!(!text.contains("limited this load"), "{text}");
    let sleep = std::fs::read_to_string(out_dir.join("sleep_http.csv")).unwrap();
    assert!(sleep.starts_with("Concurrency,Inferences/Second,"));
    assert_eq!(sleep.lines().count(), 5, "header + 4 levels:\n{sleep}");
    // Concurrency 1, 8, 15, 22 on a 5 ms model with 8 instances: 8 times the throughput at
    // 8 (at least 4 times on a busy machine), then flat while the latency grows.
    // (The CSV lists the levels as perf_analyzer does, by throughput: find each by its
    // concurrency.)
    let header: Vec<&str> = sleep.lines().next().unwrap().split(',').collect();
    let p50_at = header.iter().position(|h| *h == "p50 latency").unwrap();
    let level = |concurrency: &str, column: usize| -> f64 {
        let row = sleep
            .lines()
            .find(|l| l.split(',').next() == Some(concurrency))
            .unwrap_or_else(|| panic!("no level {concurrency}:\n{sleep}"));
        row.split(',').nth(column).unwrap().parse().unwrap()
    };
    let (tp, p50) = (|c| level(c, 1), |c| level(c, p50_at));
    assert!(tp("8") > 4.0 * tp("1"), "{sleep}");
    assert!(tp("22") < 1.3 * tp("8"), "{sleep}");
    assert!(p50("22") > 1.8 * p50("8"), "{sleep}");
    let stream = std::fs::read_to_string(out_dir.join("tokens_stream.csv")).unwrap();
    assert!(stream.starts_with("Concurrency,Inferences/Second,Response Throughput,"));
    assert_eq!(stream.lines().count(), 3, "header + 2 levels:\n{stream}");
    let chat = std::fs::read_to_string(out_dir.join("chat_openai.csv")).unwrap();
    assert_eq!(chat.lines().count(), 4, "header + 3 levels:\n{chat}");
    let cost = std::fs::read_to_string(out_dir.join("noop_cost.csv")).unwrap();
    let paths: Vec<&str> = cost
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(paths, vec!["local", "HTTP", "gRPC"]);
    // The in-process call skips the network and must be far cheaper than either RPC.
    let mean = |path: &str| -> f64 {
        let line = cost.lines().find(|l| l.starts_with(path)).unwrap();
        line.split(',').nth(2).unwrap().parse().unwrap()
    };
    assert!(mean("local") * 5.0 < mean("HTTP"), "{cost}");
    assert!(mean("local") * 5.0 < mean("gRPC"), "{cost}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_service_kind_profiles_without_a_network() {
    let results = profile(&[
        "-m",
        "slow",
        "--service-kind",
        "local",
        "--model",
        "slow=sleep:ms=5",
        "--concurrency-range",
        "1",
        "-p",
        "400",
        "-s",
        "30",
        "-r",
        "4",
    ])
    .await;
    let merged = &results[0].merged;
    assert_eq!(merged.error_count(), 0);
    let mean_ms = merged.mean_latency_us() / 1000.0;
    assert!(
        (5.0..7.5).contains(&mean_ms),
        "5 ms model measured {mean_ms:.2} ms in-process"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_flag_needs_the_local_service_kind() {
    let out = run_cli(&["-m", "x", "--model", "x=noop"]).await;
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("--service-kind local"),
        "{}",
        stderr(&out)
    );
    let out = run_cli(&["-m", "x", "--service-kind", "local", "--model", "x=teapot"]).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--model x=teapot"),
        "{}",
        stderr(&out)
    );
    let out = run_cli(&["-m", "nothere", "--service-kind", "local"]).await;
    assert_eq!(out.status.code(), Some(99), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--model nothere=KIND"),
        "{}",
        stderr(&out)
    );
}
