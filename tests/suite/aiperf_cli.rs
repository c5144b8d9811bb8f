//! AIPerf 0.13's command line run by the real binary against the embedded server's `llm`
//! model: `--concurrency N --request-count M` is one measurement of exactly M requests,
//! `--benchmark-duration S` one window of about S seconds (with a count too: the first bound
//! ends it), and an AIPerf flag inferperf lacks is refused by name with exit 3.

use serde_json::Value;

use crate::common;

/// What a run left: exit code, standard output and error, results file.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    doc: Value,
}

/// Runs `inferperf profile` with an AIPerf command line (plus a results file).
async fn run(addr: &str, rest: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    let mut args = vec![
        "profile",
        "--model",
        "llm",
        "--url",
        addr,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--synthetic-input-tokens-mean",
        "16",
        "--output-tokens-mean",
        "8",
        "--no-progress",
        "--results-file",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(rest);
    let out = common::run_cli(&args).await;
    let doc = match std::fs::read_to_string(&results) {
        Ok(text) => serde_json::from_str(&text).expect("results.json is JSON"),
        Err(_) => Value::Null,
    };
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: common::stdout(&out),
        stderr: common::stderr(&out),
        doc,
    }
}

fn levels(doc: &Value) -> &Vec<Value> {
    doc["levels"].as_array().expect("levels")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_and_request_count_are_one_measurement_of_that_many_requests() {
    let server = common::start_server(&["llm=llm:ttft_ms=5,itl_ms=1"]).await;
    let addr = format!("http://{}", server.http_addr);
    let run = run(&addr, &["--concurrency", "2", "--request-count", "20"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = &run.doc;
    let levels = levels(doc);
    assert_eq!(levels.len(), 1, "one level: {doc}");
    let level = &levels[0];
    assert_eq!(level["load"]["concurrency"], 2, "{level}");
    assert_eq!(level["end"], "single_window");
    let windows = level["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 1, "one window");
    assert_eq!(windows[0]["ok"], 20);
    assert_eq!(windows[0]["completed"], 20);
    // AIPerf's chat requests ask for their length as max_completion_tokens, which the
    // embedded model honours: every answer has the 8 tokens asked.
    let tokens = &windows[0]["tokens"];
    assert_eq!(tokens["output_tokens"]["mean"], 8.0, "{tokens}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn benchmark_duration_is_one_window_of_that_many_seconds() {
    let server = common::start_server(&["llm=llm:ttft_ms=5,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let run = run(&addr, &["--concurrency", "2", "--benchmark-duration", "2"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = &run.doc;
    let levels = levels(doc);
    assert_eq!(levels.len(), 1, "one level: {doc}");
    assert_eq!(levels[0]["end"], "single_window");
    let windows = levels[0]["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 1, "one window, no stability trials");
    let seconds = windows[0]["duration_s"].as_f64().unwrap();
    assert!((1.95..2.5).contains(&seconds), "window of {seconds} s");
    // Two in flight, each answer about 5 + 8 ms: far more than 20 requests in 2 s.
    let ok = windows[0]["ok"].as_u64().unwrap();
    assert!(ok > 20, "{ok} requests in 2 s");
    assert!(
        run.stdout.contains("Using a single window of 2000 msec"),
        "{}",
        run.stdout
    );
}

/// AIPerf's --benchmark-duration beside --request-count: the run ends at whichever comes
/// first (AIPerf's time-based tutorial gives both).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn benchmark_duration_and_request_count_end_at_the_first_bound() {
    let server = common::start_server(&["llm=llm:ttft_ms=5,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    // The duration first: 20/s for 1 s is about 20 of the 1000 requests.
    let rate = ["--request-rate", "20", "--random-seed", "3"];
    let by_time = run(
        &addr,
        &[
            &rate[..],
            &["--benchmark-duration", "1", "--request-count", "1000"],
        ]
        .concat(),
    )
    .await;
    assert_eq!(by_time.code, 0, "{}", by_time.stderr);
    let window = &levels(&by_time.doc)[0]["windows"][0];
    let ok = window["ok"].as_u64().unwrap();
    assert!(
        (5..=40).contains(&ok),
        "{ok} requests in 1 s at 20/s: {window}"
    );
    // The count first: 6 requests at 20/s end long before 30 s.
    let by_count = run(
        &addr,
        &[
            &rate[..],
            &["--benchmark-duration", "30", "--request-count", "6"],
        ]
        .concat(),
    )
    .await;
    assert_eq!(by_count.code, 0, "{}", by_count.stderr);
    let window = &levels(&by_count.doc)[0]["windows"][0];
    assert_eq!(window["ok"], 6, "{window}");
    let seconds = window["duration_s"].as_f64().unwrap();
    assert!(
        seconds < 5.0,
        "6 requests at 20/s took a window of {seconds} s"
    );
}

/// A timestamped trace is replayed at its timestamps (AIPerf's default), and
/// --benchmark-duration ends the replay early: a trace of 3 s cut at 1 s sends its first
/// second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn benchmark_duration_cuts_a_trace_replay() {
    let server = common::start_server(&["llm=llm:ttft_ms=5,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let lines: Vec<String> = (0..30)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_length\": 8, \"output_length\": 2}}",
                i * 100
            )
        })
        .collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let flags = [
        "--input-file",
        trace.to_str().unwrap(),
        "--benchmark-duration",
        "1",
    ];
    let run = run(&addr, &flags).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let window = &levels(&run.doc)[0]["windows"][0];
    let ok = window["ok"].as_u64().unwrap();
    assert!(
        (8..=12).contains(&ok),
        "{ok} of the trace's 30 requests in its first second: {window}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_rate_and_request_count_are_one_open_loop_measurement() {
    let server = common::start_server(&["llm=llm:ttft_ms=5,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let flags = [
        "--request-rate",
        "40",
        "--request-count",
        "40",
        "--random-seed",
        "3",
    ];
    let run = run(&addr, &flags).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = &run.doc;
    let levels = levels(doc);
    assert_eq!(levels.len(), 1, "one level: {doc}");
    assert_eq!(
        levels[0]["load"]["request_rate"], 40.0,
        "{}",
        levels[0]["load"]
    );
    let windows = levels[0]["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 1);
    assert_eq!(windows[0]["ok"], 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aiperf_flag_inferperf_refuses_exits_3_with_its_name_and_reason() {
    for (flag, value) in [
        ("--zmq-host", "127.0.0.1"),
        // A prefix of --streaming: clap alone would have taken it for that flag.
        ("--stream", "otel"),
        ("--search-recipe", "pareto-sweep"),
    ] {
        let args = [
            "profile",
            "--model",
            "llm",
            "--endpoint-type",
            "chat",
            "--concurrency",
            "2",
            flag,
            value,
        ];
        let out = common::run_cli(&args).await;
        let stderr = common::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{flag}: {stderr}");
        let expected = format!("error: {flag} is AIPerf's, and inferperf does not take it: ");
        assert!(stderr.starts_with(&expected), "{stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one sentence: {stderr}"
        );
    }
    // A bad value of an AIPerf flag inferperf has is one sentence and exit 3 too.
    let out = common::run_cli(&["--model", "llm", "--endpoint-type", "rerank"]).await;
    assert_eq!(out.status.code(), Some(3));
    assert!(common::stderr(&out).contains("--endpoint-type 'rerank'"));
}
