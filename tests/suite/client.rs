//! The client's connection model against the embedded server: one HTTP connection per
//! in-flight request, gRPC connections shared by up to six (perf_analyzer's client library
//! shares a channel that way), several client threads, and the flags that set them. The
//! connections are counted where the kernel keeps them (/proc/net/tcp).

use crate::common;

use std::time::Duration;

use common::{run_cli, start_server, stderr, url};

/// Established TCP connections whose local port is `port` (the server's side of each).
fn established_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp is readable");
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields
                .get(1)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            local_port == Some(port) && fields.get(3) == Some(&"01")
        })
        .count()
}

/// Runs the binary at concurrency 12 for a few seconds and returns the most connections the
/// server's `protocol` port had while it ran.
async fn peak_connections(protocol: &str, extra: &[&str]) -> usize {
    let server = start_server(&[]).await;
    let u = url(&server, protocol);
    let port: u16 = u.rsplit(':').next().unwrap().parse().unwrap();
    let mut args = vec![
        "-m",
        "identity",
        "-u",
        &u,
        "-i",
        protocol,
        "--concurrency-range",
        "12",
        "-p",
        "500",
        "-r",
        "4",
    ];
    args.extend_from_slice(extra);
    let run = tokio::spawn({
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_cli(&args).await
        }
    });
    let mut peak = 0;
    while !run.is_finished() {
        peak = peak.max(established_to(port));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let out = run.await.unwrap();
    assert!(
        matches!(out.status.code(), Some(0) | Some(2)),
        "{args:?}: {}",
        stderr(&out)
    );
    server.shutdown().await;
    peak
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_keeps_one_connection_per_request_in_flight() {
    let peak = peak_connections("http", &[]).await;
    // 12 slots, plus the statistics reader's connection.
    assert!((12..=13).contains(&peak), "{peak} connections");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_requests_share_connections_six_at_a_time() {
    let shared = peak_connections("grpc", &[]).await;
    // 12 slots over 2 connections, plus the statistics reader's.
    assert!((2..=3).contains(&shared), "{shared} connections");
    let own = peak_connections("grpc", &["--grpc-connection-share", "1"]).await;
    assert!((12..=13).contains(&own), "{own} connections");
    let four = peak_connections("grpc", &["--grpc-connection-share", "4"]).await;
    assert!((3..=4).contains(&four), "{four} connections");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_client_threads_keep_exactly_n_in_flight() {
    let server = start_server(&[]).await;
    for protocol in ["http", "grpc"] {
        let results = common::profile(&[
            "-m",
            "identity",
            "-u",
            &url(&server, protocol),
            "-i",
            protocol,
            "--concurrency-range",
            "8",
            "--client-threads",
            "3",
            "-p",
            "500",
            "-s",
            "20",
        ])
        .await;
        let w = &results[0].merged;
        let in_flight = w.throughput() * w.mean_latency_us() / 1e6;
        assert_eq!(w.error_count(), 0, "{protocol}: {:?}", w.errors);
        assert!(
            (in_flight - 8.0).abs() <= 0.8,
            "{protocol}: throughput x latency = {in_flight:.2}"
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_thread_and_share_counts_are_bad_options() {
    for (flag, value) in [
        ("--client-threads", "0"),
        ("--client-threads", "5000"),
        ("--grpc-connection-share", "0"),
    ] {
        let out = run_cli(&["-m", "identity", flag, value]).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{flag} {value}: {err}");
        assert!(err.contains(flag), "{flag} {value}: {err}");
    }
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args(["-m", "identity", "-i", "grpc"])
        .env("TRITON_CLIENT_GRPC_CHANNEL_MAX_SHARE_COUNT", "many")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("TRITON_CLIENT_GRPC_CHANNEL_MAX_SHARE_COUNT=many"));
}
