//! The server side of a profile against the embedded server, whose statistics are exact:
//! the Server block's counts, queue and compute times, the breakdown adding up to the
//! client's latency, metrics scraped from its Prometheus page, and a server without the
//! statistics extension.

use crate::common;

use common::{profile, run_cli, stdout, url};
use inferperf::config::MetricAggregation;
use inferperf::measure::level::LevelResult;
use inferperf_server::{self as server, ModelDef, RunningServer, ServeOptions};

async fn serve(models: &[&str], statistics: bool) -> RunningServer {
    let models: Vec<ModelDef> = models.iter().map(|m| m.parse().unwrap()).collect();
    server::start(ServeOptions {
        host: "127.0.0.1".parse().unwrap(),
        http_port: 0,
        grpc_port: 0,
        metrics_port: Some(0),
        models,
        statistics,
        tls: None,
    })
    .await
    .expect("server starts")
}

fn server_of(r: &LevelResult) -> &inferperf::measure::server::stats::ServerWindow {
    r.merged
        .server
        .as_ref()
        .expect("the level has a server delta")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_counts_match_the_requests_of_the_merged_windows() {
    let server = serve(&["identity=identity"], true).await;
    for protocol in ["http", "grpc"] {
        let u = url(&server, protocol);
        let args = [
            "-m",
            "identity",
            "-u",
            &u,
            "-i",
            protocol,
            "--shape",
            "INPUT0:16",
            "--concurrency-range",
            "4",
            "-p",
            "500",
        ];
        let results = profile(&args).await;
        let r = &results[0];
        let s = server_of(r);
        let (client, counted) = (r.merged.ok, s.model.success.count);
        // Requests in flight at each of the merged windows' two ends may fall on either side.
        let slack = 2 * 4 * r.merged.windows as u64 + client / 100;
        println!("{protocol}: client {client}, server {counted}, slack {slack}");
        assert!(
            client.abs_diff(counted) <= slack,
            "{protocol}: client {client} vs server {counted}"
        );
        assert_eq!(
            s.model.inference_count, counted,
            "batch 1: one inference per request"
        );
        // An execution and its request's success are counted a moment apart, so a window
        // edge may split them: the same slack as above.
        let executions = s.model.execution_count;
        assert!(
            executions >= 1 && executions <= counted + slack,
            "{executions} {counted}"
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleep_model_compute_and_queue_follow_its_service_time() {
    let server = serve(&["slow=sleep:ms=10,instances=1"], true).await;
    let u = url(&server, "http");
    let args = [
        "-m",
        "slow",
        "-u",
        &u,
        "--concurrency-range",
        "1:3:2",
        "-p",
        "1000",
        "-s",
        "20",
    ];
    let results = profile(&args).await;
    let (one, three) = (server_of(&results[0]), server_of(&results[1]));
    let compute = one.breakdown().compute();
    println!(
        "compute {compute:.0} us; queue c=1 {:.0}, c=3 {:.0} us",
        one.breakdown().queue,
        three.breakdown().queue
    );
    assert!(
        (compute - 10_000.0).abs() <= 1_000.0,
        "compute {compute} us, configured 10 ms"
    );
    assert!(
        one.breakdown().queue < 1_000.0,
        "one in flight waits for nobody"
    );
    // With three in flight on one instance a request waits for the two ahead of it.
    let queue = three.breakdown().queue;
    assert!(
        (queue - 20_000.0).abs() <= 4_000.0,
        "queue at c=3: {queue} us, expected ~20 ms"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breakdown_adds_up_to_the_client_latency() {
    let server = serve(&["slow=sleep:ms=5,instances=2"], true).await;
    for protocol in ["http", "grpc"] {
        let u = url(&server, protocol);
        let args = [
            "-m",
            "slow",
            "-u",
            &u,
            "-i",
            protocol,
            "--concurrency-range",
            "2",
            "-p",
            "1000",
        ];
        let results = profile(&args).await;
        let w = &results[0].merged;
        let b = server_of(&results[0]).breakdown();
        let client = w.mean_latency_us();
        let explained = w.avg_send_us() + b.request + w.avg_recv_us();
        println!(
            "{protocol}: client {client:.0} us = send {:.0} + server {:.0} + recv {:.0}",
            w.avg_send_us(),
            b.request,
            w.avg_recv_us()
        );
        assert!(
            (explained - client).abs() <= 0.1 * client,
            "{protocol}: {explained} vs {client}"
        );
        assert!(
            b.accounted() <= b.request + 1.0,
            "queue + compute fit in the request time"
        );
        let line = inferperf::report::console::server::time_split_line(w).expect("a time split");
        let total: f64 = line
            .split(" usec (")
            .filter_map(|part| part.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        assert!((total - client).abs() <= 0.1 * client, "{line}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_scraped_from_the_embedded_server() {
    let server = serve(&["identity=identity"], true).await;
    let u = url(&server, "http");
    let metrics_url = format!("{}/metrics", server.metrics_addr.unwrap());
    let args = [
        "-m",
        "identity",
        "-u",
        &u,
        "--shape",
        "INPUT0:16",
        "--concurrency-range",
        "2",
        "-p",
        "1500",
        "--collect-metrics",
        "--metrics-url",
        &metrics_url,
        "--metrics-interval",
        "100",
        "--metric",
        "nv_inference_count{model=\"identity\"}:rate",
        "--metric",
        "process_resident_memory_bytes:max",
    ];
    let results = profile(&args).await;
    let w = &results[0].merged;
    let m = w.metrics.as_ref().expect("metrics were scraped");
    assert!(m.scrapes >= 10, "{} scrapes", m.scrapes);
    assert_eq!(m.failed_scrapes, 0);
    let rate = m
        .value(
            "nv_inference_count{model=\"identity\"}:rate",
            MetricAggregation::Rate,
        )
        .expect("a rate");
    println!(
        "server counter rate {rate:.0}/s, client throughput {:.0}/s",
        w.throughput()
    );
    assert!(
        (rate - w.throughput()).abs() <= 0.1 * w.throughput(),
        "{rate} vs {}",
        w.throughput()
    );
    let rss = m
        .value("process_resident_memory_bytes:max", MetricAggregation::Max)
        .unwrap();
    assert!(rss > 1e6, "rss {rss}");
    let cores = m
        .value("process_cpu_seconds_total", MetricAggregation::Rate)
        .unwrap();
    assert!(cores > 0.0, "the server process used CPU");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_shows_server_block_metrics_and_time_split() {
    let server = serve(&["slow=sleep:ms=2"], true).await;
    let u = url(&server, "grpc");
    let metrics_url = format!("{}/metrics", server.metrics_addr.unwrap());
    let out = run_cli(&[
        "-m",
        "slow",
        "-u",
        &u,
        "-i",
        "grpc",
        "--concurrency-range",
        "1",
        "--request-count",
        "300",
        "--metrics-interval",
        "50",
        "--collect-metrics",
        "--metrics-url",
        &metrics_url,
        "-H",
        "x-token: secret",
    ])
    .await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for expected in [
        "  Server: ",
        "    Successful request count: ",
        "    Avg request latency: ",
        "compute infer ",
        "  Server Prometheus Metrics: ",
        "    Server CPU: ",
        "    Client CPU: ",
        "  Where the time went: client send ",
    ] {
        assert!(text.contains(expected), "missing '{expected}' in:\n{text}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_without_statistics_gives_a_report_without_server_block() {
    let server = serve(&["identity=identity"], false).await;
    for protocol in ["http", "grpc"] {
        let u = url(&server, protocol);
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("out.csv");
        let out = run_cli(&[
            "-m",
            "identity",
            "-u",
            &u,
            "-i",
            protocol,
            "--shape",
            "INPUT0:16",
            "--concurrency-range",
            "1",
            "--request-count",
            "2000",
            "-f",
            csv.to_str().unwrap(),
        ])
        .await;
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{protocol}: {text}");
        assert!(!text.contains("  Server: "), "{text}");
        let note = text
            .lines()
            .find(|l| l.starts_with("Server: no server-side breakdown"));
        let note = note.unwrap_or_else(|| panic!("no note saying why:\n{text}"));
        assert!(
            note.contains("does not offer the statistics extension"),
            "{note}"
        );
        let header = std::fs::read_to_string(&csv).unwrap();
        assert!(!header.contains("Server Queue"), "{header}");
    }
    server.shutdown().await;
}
