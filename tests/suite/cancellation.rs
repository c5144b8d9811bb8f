//! Requests cancelled on purpose (AIPerf's `--request-cancellation-rate` and
//! `--request-cancellation-delay`) against the embedded server's `llm` kind, whose answers
//! take a known time: the share cancelled is the rate asked within a binomial bound, in a
//! closed loop and in an open loop; cancelled requests are neither errors nor in any latency
//! or token figure; a delay longer than the answers cancels nothing; and the count reaches
//! the console, the CSV and results.json.

use crate::common;

/// The llm model's answers take 60 ms to the first token and 5 ms per token after.
const MODEL: &str = "chat=llm:ttft_ms=60,itl_ms=5,max_batch=64";

fn openai<'a>(addr: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "-m",
        "chat",
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/chat/completions",
        "-u",
        addr,
        "--streaming",
        "--output-tokens-mean",
        "8",
        "--output-tokens-mean-deterministic",
    ];
    args.extend_from_slice(extra);
    args
}

/// `cancelled` of `ended` requests is within four standard deviations of `percent`.
fn within_binomial(cancelled: u64, ended: u64, percent: f64) {
    let (n, p) = (ended as f64, percent / 100.0);
    let bound = 4.0 * (n * p * (1.0 - p)).sqrt();
    assert!(
        (cancelled as f64 - n * p).abs() <= bound,
        "{cancelled} of {ended} cancelled, {percent}% asked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_cancels_its_share_and_keeps_them_out_of_every_figure() {
    let server = common::start_server(&[MODEL]).await;
    let addr = server.http_addr.to_string();
    let flags = [
        "--concurrency-range",
        "16",
        "--request-count",
        "300",
        "--request-cancellation-rate",
        "20",
        "--request-cancellation-delay",
        "0.02",
        "--random-seed",
        "5",
    ];
    let results = common::profile(&openai(&addr, &flags)).await;
    let w = &results[0].merged;
    assert_eq!(w.error_count(), 0, "{:?}", w.errors);
    let ended = w.ok + w.cancelled;
    assert!(ended >= 300, "{} answered, {} cancelled", w.ok, w.cancelled);
    within_binomial(w.cancelled, ended, 20.0);
    // Answers take at least 60 ms; a cancelled request (20 ms) is in no latency figure.
    assert_eq!(w.latency.count(), w.ok);
    let fastest_ms = w.latency.percentile(0.1) / 1e6;
    assert!(fastest_ms >= 55.0, "p0.1 latency {fastest_ms} ms");
    let tokens = w.tokens.as_ref().expect("token figures");
    assert_eq!(tokens.output_tokens.sum(), u128::from(w.ok * 8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_longer_than_the_answers_cancels_nothing() {
    let server = common::start_server(&[MODEL]).await;
    let addr = server.http_addr.to_string();
    let flags = [
        "--concurrency-range",
        "8",
        "--request-count",
        "40",
        "--request-cancellation-rate",
        "50",
        "--request-cancellation-delay",
        "5",
    ];
    let results = common::profile(&openai(&addr, &flags)).await;
    let w = &results[0].merged;
    assert_eq!((w.ok, w.cancelled, w.error_count()), (40, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_cancels_its_share_and_every_report_counts_them() {
    let server = common::start_server(&[MODEL]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("run.csv");
    let results = dir.path().join("results.json");
    let mut args = vec!["profile"];
    let flags = [
        "--request-rate-range",
        "200",
        "--request-count",
        "240",
        "--request-cancellation-rate",
        "30",
        "--request-cancellation-delay",
        "0.01",
        "-f",
        csv.to_str().unwrap(),
        "--results-file",
        results.to_str().unwrap(),
    ];
    args.extend(openai(&addr, &flags));
    let out = common::run_cli(&args).await;
    let stdout = common::stdout(&out);
    assert!(out.status.success(), "{stdout}{}", common::stderr(&out));
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Cancelled: "))
        .unwrap_or_else(|| panic!("a Cancelled line: {stdout}"));
    assert!(line.ends_with("closed 0.01 s after the send"), "{line}");
    assert!(!stdout.contains("Errors:"), "{stdout}");
    let file = common::assert_valid(&results);
    let merged = &file["levels"][0]["merged"];
    let cancelled = merged["cancelled"].as_u64().expect("a cancelled count");
    let ok = merged["ok"].as_u64().unwrap();
    assert_eq!(merged["failed"], 0);
    within_binomial(cancelled, ok + cancelled, 30.0);
    assert_eq!(
        file["settings"]["request_cancellation"],
        serde_json::json!({"rate_percent": 30.0, "delay_s": 0.01})
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut rows = text.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let row: Vec<&str> = rows.next().unwrap().split(',').collect();
    assert_eq!(header.last(), Some(&"Cancelled"));
    assert_eq!(row.last().unwrap().parse::<u64>().unwrap(), cancelled);
}
