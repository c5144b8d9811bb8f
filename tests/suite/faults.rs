//! Fault injection: a broken server or network must never hang inferperf, never count a
//! broken answer as a success, and never lose a finished level. Each test runs the real
//! binary for two levels through the fault proxy (`fault_proxy`) in front of the embedded
//! server — or against `inferperf serve` in a process of its own that the test kills — and
//! checks the exit code, the errors counted by kind (their share of the requests, where the
//! proxy spoils a known share), and that both levels are in the CSV and the results file.

use crate::common;
use crate::fault_proxy;

use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use fault_proxy::{Fault, Plan};
use serde_json::Value;

/// The longest a faulty run may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(90);

/// What a run left: its output, results file and CSV.
struct Run {
    out: Output,
    results: Value,
    csv: String,
}

impl Run {
    fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }

    fn levels(&self) -> &Vec<Value> {
        self.results["levels"].as_array().expect("levels")
    }

    /// Requests of kind `label` and all completed requests, over every window of a level.
    fn errors(&self, level: usize, label: &str) -> (u64, u64) {
        let mut kind = 0;
        let mut completed = 0;
        for w in self.levels()[level]["windows"].as_array().unwrap() {
            completed += w["completed"].as_u64().unwrap();
            for e in w["errors"].as_array().unwrap() {
                if e["kind"].as_str() == Some(label) {
                    kind += e["count"].as_u64().unwrap();
                }
            }
        }
        (kind, completed)
    }

    fn ok(&self, level: usize) -> u64 {
        let windows = self.levels()[level]["windows"].as_array().unwrap();
        windows.iter().map(|w| w["ok"].as_u64().unwrap()).sum()
    }

    fn all_error_kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self
            .levels()
            .iter()
            .flat_map(|l| l["windows"].as_array().unwrap().clone())
            .flat_map(|w| w["errors"].as_array().unwrap().clone())
            .map(|e| e["kind"].as_str().unwrap().to_string())
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    fn describe(&self) -> String {
        format!(
            "exit {}\nstdout:\n{}\nstderr:\n{}",
            self.code(),
            stdout(&self.out),
            stderr(&self.out)
        )
    }

    /// Exit 0 or 2 (a fault may keep a level from being stable), both levels written.
    fn assert_finished(&self) {
        assert!(matches!(self.code(), 0 | 2), "{}", self.describe());
        assert_eq!(self.levels().len(), 2, "{}", self.describe());
        let rows = self.csv.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(rows, 3, "a header and a row per level:\n{}", self.csv);
    }

    /// The share of level `level`'s requests that failed as `label` is `share` ± 4 points.
    fn assert_share(&self, level: usize, label: &str, share: f64) {
        let (kind, completed) = self.errors(level, label);
        assert!(completed > 0, "{}", self.describe());
        let measured = kind as f64 / completed as f64;
        assert!(
            (measured - share).abs() <= 0.04,
            "level {level}: {kind} of {completed} requests failed as {label} ({measured:.3}), \
             expected {share}; kinds {:?}\n{}",
            self.all_error_kinds(),
            self.describe()
        );
    }
}

/// Runs inferperf against `url` with two closed-loop levels and `extra` flags.
async fn run(url: &str, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    let csv = dir.path().join("levels.csv");
    let defaults = [
        ("-m", "identity"),
        ("-u", url),
        ("--concurrency-range", "1:2"),
        ("-p", "500"),
        ("--max-trials", "4"),
        ("--request-timeout", "1"),
        ("--results-file", results.to_str().unwrap()),
        ("-f", csv.to_str().unwrap()),
    ];
    // A flag in `extra` takes the place of its default.
    let mut args: Vec<&str> = Vec::new();
    for (flag, value) in defaults {
        if !extra.contains(&flag) {
            args.extend([flag, value]);
        }
    }
    args.extend_from_slice(extra);
    let out = tokio::time::timeout(HANG, run_cli(&args))
        .await
        .unwrap_or_else(|_| panic!("inferperf hung with {extra:?}"));
    Run {
        results: read_json(&results, &out),
        csv: std::fs::read_to_string(&csv).unwrap_or_default(),
        out,
    }
}

fn read_json(path: &Path, out: &Output) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "no results file ({e}): exit {:?}\n{}\n{}",
            out.status.code(),
            stdout(out),
            stderr(out)
        )
    });
    serde_json::from_str(&text).expect("results file is JSON")
}

/// Runs through a proxy that gives every `every`-th inference request `fault`.
async fn run_with(fault: Fault, every: u64, extra: &[&str]) -> Run {
    let server = start_server(&[]).await;
    let plan: Plan = Arc::new(move |n| {
        if n % every == every - 1 {
            fault
        } else {
            Fault::Pass
        }
    });
    let proxy = fault_proxy::start(server.http_addr, plan).await;
    run(&proxy.addr.to_string(), extra).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_reset_after_the_request_are_connection_errors() {
    let run = run_with(Fault::Reset, 10, &[]).await;
    run.assert_finished();
    run.assert_share(0, "connection", 0.10);
    run.assert_share(1, "connection", 0.10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_gives_timeouts_not_a_hang() {
    // One request in 200 is never answered: each costs its slot the 1 s timeout.
    let run = run_with(Fault::Silent, 200, &["--request-timeout", "0.3"]).await;
    run.assert_finished();
    let timeouts: u64 = (0..2).map(|l| run.errors(l, "timeout").0).sum();
    assert!(timeouts > 0, "{}", run.describe());
    assert_eq!(run.all_error_kinds(), vec!["timeout"], "{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dribbled_answers_are_slow_successes() {
    let run = run_with(Fault::Dribble(1), 20, &[]).await;
    run.assert_finished();
    assert!(run.all_error_kinds().is_empty(), "{}", run.describe());
    // A dribbled answer (about 150 bytes, 1 ms apart) takes over 100 ms: the p99 shows it.
    let p99 = run.levels()[0]["merged"]["latency"]["percentiles"]["p99"]
        .as_f64()
        .unwrap();
    assert!(p99 > 50e6, "p99 {p99} ns\n{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursts_of_429_500_503_are_counted_by_status() {
    let server = start_server(&[]).await;
    // In every 200 requests: 20 × 503, then 10 × 429, then 5 × 500.
    let plan: Plan = Arc::new(|n| match n % 200 {
        100..=119 => Fault::Status(503),
        120..=129 => Fault::Status(429),
        130..=134 => Fault::Status(500),
        _ => Fault::Pass,
    });
    let proxy = fault_proxy::start(server.http_addr, plan).await;
    let run = run(&proxy.addr.to_string(), &[]).await;
    run.assert_finished();
    for level in 0..2 {
        run.assert_share(level, "HTTP 503", 0.100);
        run.assert_share(level, "HTTP 429", 0.050);
        run.assert_share(level, "HTTP 500", 0.025);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_answers_are_bad_responses() {
    let run = run_with(Fault::Garbage, 10, &[]).await;
    run.assert_finished();
    run.assert_share(0, "bad response (unreadable)", 0.10);
    run.assert_share(1, "bad response (unreadable)", 0.10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_shorter_than_its_content_length_is_never_a_success() {
    let run = run_with(Fault::ShortBody, 10, &[]).await;
    run.assert_finished();
    run.assert_share(0, "bad response (truncated)", 0.10);
    run.assert_share(1, "bad response (truncated)", 0.10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_after_the_declared_body_are_bad_responses() {
    let run = run_with(Fault::LongBody, 10, &[]).await;
    run.assert_finished();
    run.assert_share(0, "bad response (longer than declared)", 0.10);
    run.assert_share(1, "bad response (longer than declared)", 0.10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_without_content_length_ends_where_the_server_closes() {
    // Legal HTTP/1.1: the body runs to the close, and the answer is a success.
    let run = run_with(Fault::NoLength, 10, &[]).await;
    run.assert_finished();
    assert!(run.all_error_kinds().is_empty(), "{}", run.describe());
    assert!(run.ok(0) > 100 && run.ok(1) > 100, "{}", run.describe());
}

/// `inferperf serve` in a process of its own on `port`.
fn serve(port: u16) -> std::process::Child {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args(["serve", "--host", "127.0.0.1", "--http-port"])
        .arg(port.to_string())
        .args(["--grpc-port", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("inferperf serve starts");
    wait_listening(port);
    child
}

fn wait_listening(port: u16) {
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("inferperf serve never listened on {port}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_level_and_restarted_is_measured_on() {
    let port = free_port();
    let mut server = serve(port);
    let url = format!("127.0.0.1:{port}");
    let restarter = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_millis(1500));
        server.kill().unwrap();
        server.wait().unwrap();
        std::thread::sleep(Duration::from_millis(700));
        let mut again = serve(port);
        std::thread::sleep(Duration::from_secs(20));
        let _ = again.kill();
        let _ = again.wait();
    });
    let run = run(&url, &["-p", "1000", "--max-trials", "6"]).await;
    run.assert_finished();
    let connection: u64 = (0..2).map(|l| run.errors(l, "connection").0).sum();
    assert!(connection > 0, "{}", run.describe());
    assert!(run.ok(0) > 0 && run.ok(1) > 0, "{}", run.describe());
    restarter.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_for_good_ends_the_run_with_what_was_measured() {
    let port = free_port();
    let mut server = serve(port);
    let url = format!("127.0.0.1:{port}");
    let killer = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_millis(2500));
        server.kill().unwrap();
        server.wait().unwrap();
    });
    let run = run(&url, &["--concurrency-range", "1:3", "--max-trials", "3"]).await;
    killer.await.unwrap();
    assert_eq!(run.code(), 99, "{}", run.describe());
    assert!(
        stderr(&run.out).contains("stopped answering"),
        "{}",
        run.describe()
    );
    assert!(run.ok(0) > 0, "{}", run.describe());
    let rows = run.csv.lines().filter(|l| l.starts_with("1,")).count();
    assert_eq!(rows, 1, "the first level is in the CSV:\n{}", run.csv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_body_is_a_bad_response_not_memory_growth() {
    // Every 20th answer declares and sends 64 MiB; the cap is 1 MiB.
    let run = run_with(
        Fault::Huge(64 << 20),
        20,
        &["--max-response-bytes", "1048576"],
    )
    .await;
    run.assert_finished();
    assert_eq!(
        run.all_error_kinds(),
        vec!["bad response (too large)"],
        "{}",
        run.describe()
    );
    let (too_large, completed) = run.errors(0, "bad response (too large)");
    assert!(too_large > 0 && completed > too_large, "{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_stream_cut_mid_answer_is_counted_and_the_run_goes_on() {
    // 5 answers 20 ms apart per request; every connection is cut 700 ms after it opened.
    let server = start_server(&["tokens=stream:responses=5,first_ms=10,interval_ms=20"]).await;
    let proxy = fault_proxy::start_cutting(server.grpc_addr, Duration::from_millis(700)).await;
    let run = run(
        &proxy.addr.to_string(),
        &["-m", "tokens", "-i", "grpc", "--streaming"],
    )
    .await;
    run.assert_finished();
    // A cut connection fails what was in flight on it: a connection error, not a success.
    assert_eq!(
        run.all_error_kinds(),
        vec!["connection"],
        "{}",
        run.describe()
    );
    assert!(run.ok(0) > 0 && run.ok(1) > 0, "{}", run.describe());
    assert!(
        proxy.requests.load(std::sync::atomic::Ordering::SeqCst) > 2,
        "the client connected anew after each cut"
    );
}
