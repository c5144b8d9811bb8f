//! The engine's own account of a level (`--server-metrics`), against the embedded `llm`
//! engine's truth: at twice its batch in flight, 4 requests running and 4 waiting; its full
//! prefix cache read as 100% KV usage;
//! its counts of requests and tokens those the client counted; its TTFT and inter-token
//! percentiles, from the bucket deltas of its histograms, in the buckets the client's fall
//! in; the engine named on the page it came from (vLLM's names, or SGLang's); and the pages
//! of several replicas added up.

use inferperf::measure::level::LevelResult;
use inferperf::measure::server::engine_figures::EngineFigures;
use inferperf::measure::server::engine_metrics::Engine;
use inferperf::results::{self, ResultsFile};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hyper::Method;
use serde_json::json;

use crate::server_util::Http;

use crate::common;

/// vLLM's TTFT buckets, in ms, up to a second.
const TTFT_BOUNDS_MS: [f64; 12] = [
    1.0, 5.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 250.0, 500.0, 750.0, 1000.0,
];

fn bucket_of(ms: f64) -> usize {
    TTFT_BOUNDS_MS.partition_point(|&b| b < ms)
}

/// What a run at twice the batch left.
struct Run {
    level: LevelResult,
    figures: EngineFigures,
    file: ResultsFile,
    /// AIPerf's `server_metrics_export.json` and `.csv` of the level.
    server_json: serde_json::Value,
    server_csv: String,
    /// The `-f` CSV.
    levels_csv: String,
}

/// A level at 8 in flight on a batch of 4, its engine figures, and the results file the run
/// wrote (checked against the schema).
async fn run_at_twice_the_batch(names: &str) -> Run {
    let model =
        format!("chat=llm:ttft_ms=20,itl_ms=5,max_batch=4,output_tokens=16,prefix_cache=320,metrics={names}");
    let server = common::start_server(&[&model]).await;
    let addr = server.http_addr.to_string();
    let page = format!("http://{addr}/metrics");
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let results = dir.path().join("results.json");
    let artifacts = dir.path().join("artifacts");
    let csv = dir.path().join("levels.csv");
    let extra = [
        "-f",
        csv.to_str().unwrap(),
        "--results-file",
        results.to_str().unwrap(),
        "--artifact-dir",
        artifacts.to_str().unwrap(),
        "--concurrency-range",
        "8",
        "--synthetic-input-tokens-mean",
        "40",
        "--server-metrics",
        &page,
        "--metrics-interval",
        "100",
        "-p",
        "1500",
        "--max-trials",
        "3",
    ];
    let flags = common::chat_flags(&addr, tokenizer.to_str().unwrap(), &extra);
    let level = common::profile_with_reports(&flags).await.remove(0);
    let metrics = level.merged.metrics.clone().expect("the page was scraped");
    let figures = EngineFigures::of(&metrics).expect("the engine's series were read");
    common::assert_valid(&results);
    let folder = artifacts.join("chat-openai-chat-concurrency8");
    let read = |name: &str| std::fs::read_to_string(folder.join(name)).unwrap();
    Run {
        level,
        figures,
        file: results::read(&results).unwrap(),
        server_json: serde_json::from_str(&read("server_metrics_export.json")).unwrap(),
        server_csv: read("server_metrics_export.csv"),
        levels_csv: std::fs::read_to_string(&csv).unwrap(),
    }
}

/// The engine's counts are the client's: requests within 1%, tokens within 1% and the
/// tokens of the requests in flight at the level's ends (8 held at once: 8 × 16 generated,
/// 8 × 40 prompt tokens at most), and no report warns.
fn assert_counts_agree(file: &ResultsFile) {
    let record = file.levels[0]
        .merged
        .engine
        .as_ref()
        .expect("an engine record");
    let merged = &file.levels[0].merged;
    let metrics = merged.metrics.as_ref().expect("the page was scraped");
    let seconds = merged.duration_s;
    for c in &record.counts {
        let per_request = if c.what == "generation tokens" {
            16.0
        } else {
            40.0
        };
        let held = if c.what == "requests" {
            0.0
        } else {
            8.0 * per_request
        };
        // What the client counted while the boundaries' pages were read is allowed too.
        let while_read = c.client / seconds * metrics.read_late_s;
        assert!(
            (held * 0.75..=held * 1.25).contains(&(c.in_flight - while_read)),
            "{c:?}, read up to {} s late",
            metrics.read_late_s
        );
        assert!(
            !c.disagrees(),
            "{c:?}, read up to {} s late",
            metrics.read_late_s
        );
    }
    let page = inferperf::report::html::render(file);
    assert!(
        !page.contains("The engine counted"),
        "a warning on a run alone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_figures_are_the_embedded_engines_truth() {
    let Run {
        level,
        figures: f,
        file,
        server_json,
        server_csv,
        levels_csv,
    } = run_at_twice_the_batch("vllm").await;
    let w = &level.merged;
    assert_eq!(w.error_count(), 0, "{:?}", w.errors);
    let running = f.running.unwrap();
    let waiting = f.waiting.unwrap();
    assert_eq!(running.max, 4.0, "max_batch=4 holds at most 4: {running:?}");
    assert!(running.avg > 3.5, "{running:?}");
    // 4 waiting, a little more on a busy machine: the client's next request can arrive
    // before the engine has let go of the one it just answered.
    assert!((3.0..=4.25).contains(&waiting.avg), "{waiting:?}");
    // A 320-token cache in 16-token blocks holds 20 blocks; each new 40-token prompt puts
    // its 2 full blocks in, so the cache is full after the first 10 requests and stays
    // full: the engine's KV usage reads 100% from then on (the last window wholly).
    let kv = f.kv_usage.unwrap();
    assert_eq!(kv.max, 1.0, "{kv:?}");
    let last = file.levels[0].windows.last().unwrap();
    let last_kv = last.engine.as_ref().unwrap().figures.kv_usage.unwrap();
    assert_eq!((last_kv.avg, last_kv.max), (1.0, 1.0), "{last_kv:?}");
    assert_eq!(f.preemptions, Some(0.0));
    let ok = w.ok as f64;
    assert_counts_agree(&file);
    let client_ttft_ms = w.first_response.percentile(50.0) / 1e6;
    let engine_ttft = f.ttft.unwrap();
    assert_eq!(
        bucket_of(engine_ttft.p50_ms),
        bucket_of(client_ttft_ms),
        "engine {engine_ttft:?}, client p50 {client_ttft_ms} ms"
    );
    let itl = f.itl.unwrap();
    assert!(
        itl.p50_ms <= 10.0,
        "5-ms steps fall in vLLM's first ITL bucket: {itl:?}"
    );
    // The results file holds the same figures and both sides' counts.
    let record = file.levels[0]
        .merged
        .engine
        .clone()
        .expect("an engine record");
    assert_eq!(record.figures, f);
    let requests = record.counts.iter().find(|c| c.what == "requests").unwrap();
    assert_eq!(
        (requests.engine, requests.client),
        (f.requests.unwrap(), ok)
    );
    assert_eq!(record.counts.len(), 3, "{:?}", record.counts);
    assert!(file.levels[0].windows.iter().all(|w| w.engine.is_some()));
    assert_eq!(record.figures.engine.as_deref(), Some("vllm"));
    // AIPerf's server metrics export names the series as vLLM does.
    let metrics = &server_json["metrics"];
    let running = &metrics["vllm:num_requests_running"]["series"][0]["stats"];
    assert_eq!(running["max"], 4.0, "{server_json}");
    let ttft = &metrics["vllm:time_to_first_token_seconds"];
    assert_eq!(ttft["type"], "histogram");
    let p50 = ttft["series"][0]["stats"]["p50_estimate"].as_f64().unwrap();
    assert!((p50 * 1e3 - engine_ttft.p50_ms).abs() < 1e-6, "{ttft}");
    assert!(
        server_csv.contains(",gauge,vllm:num_requests_waiting,"),
        "{server_csv}"
    );
    // The -f CSV has a column per engine figure.
    let mut lines = levels_csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|h| *h == "Engine Requests Waiting Max (requests)")
        .unwrap_or_else(|| panic!("{levels_csv}"));
    let max_waiting: f64 = row[column].parse().unwrap();
    assert_eq!(max_waiting, waiting.max, "{levels_csv}");
    // The HTML report draws the section and the Pareto point.
    let page = inferperf::report::html::render(&file);
    assert!(page.contains("What the server was doing"));
    assert!(page.contains("Engine Requests Waiting Avg"));
    assert!(page.contains("Output tokens/s against tokens/s per user"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_names_are_read_as_sglang() {
    let Run {
        level,
        figures: f,
        server_json,
        file,
        ..
    } = run_at_twice_the_batch("sglang").await;
    assert_eq!(f.running.unwrap().max, 4.0);
    assert!(level.merged.ok > 0);
    assert_counts_agree(&file);
    let running = &server_json["metrics"]["sglang:num_running_reqs"]["series"][0]["stats"];
    assert_eq!(running["max"], 4.0, "{server_json}");
    let page = "sglang:num_running_reqs{model_name=\"m\"} 1\n";
    let samples = inferperf::prometheus::parse(page).unwrap().samples;
    assert_eq!(Engine::recognise(&samples), Some(Engine::Sglang));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_is_not_prometheus_is_one_sentence_and_the_run_goes_on() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1,output_tokens=4"]).await;
    let addr = server.http_addr.to_string();
    // The OpenAI models list is JSON, not Prometheus text.
    let page = format!("http://{addr}/v1/models");
    let args = [
        "profile",
        "-m",
        "chat",
        "--endpoint-type",
        "chat",
        "-u",
        &addr,
        "--server-metrics",
        &page,
        "--request-count",
        "5",
    ];
    let out = common::run_cli(&args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let said: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("/v1/models"))
        .collect();
    assert_eq!(said.len(), 1, "{stdout}");
    assert!(said[0].contains("not Prometheus text"), "{stdout}");
    assert!(
        stdout.contains("Request count: 5") || stdout.contains("Request Count"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_pages_are_added_up_as_one_engine() {
    // Two replicas of one engine, the load (2 in flight) shared between them: each page
    // counts its replica's part.
    let model = "chat=llm:ttft_ms=2,itl_ms=1,output_tokens=4";
    let (a, b) = (
        common::start_server(&[model]).await,
        common::start_server(&[model]).await,
    );
    let (a, b) = (a.http_addr.to_string(), b.http_addr.to_string());
    let both = format!("{a},{b}");
    let (page_a, page_b) = (format!("http://{a}/metrics"), format!("http://{b}/metrics"));
    let run = |pages: Vec<String>| {
        let both = both.clone();
        async move {
            let mut args: Vec<String> = ["profile", "-m", "chat", "--endpoint-type", "chat", "-u"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            args.push(both);
            let load = [
                "--concurrency",
                "2",
                "--request-count",
                "20",
                "--server-metrics",
            ];
            args.extend(load.iter().map(|s| s.to_string()));
            args.extend(pages);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = common::run_cli(&args).await;
            assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
            let stdout = String::from_utf8_lossy(&out.stdout).to_string();
            let counted = stdout.lines().find(|l| l.contains("Counted by the engine"));
            counted
                .map(str::to_string)
                .unwrap_or_else(|| panic!("{stdout}"))
        }
    };
    let both_pages = run(vec![page_a.clone(), page_b]).await;
    assert!(
        both_pages.contains("20 requests (client 20)"),
        "{both_pages}"
    );
    // Alone, the first page counts the requests of its replica: some, not all.
    let one_page = run(vec![page_a]).await;
    let counted: u32 = (one_page.split("engine: ").nth(1))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{one_page}"));
    assert!((1..20).contains(&counted), "{one_page}");
    assert!(one_page.contains("(client 20)"), "{one_page}");
}

/// `itl_us_per_sequence`: a step lasts `itl_ms` + that much per sequence in the batch, so
/// the client's inter-token latency is 2 + 1 × 1 = 3 ms alone and 2 + 4 × 1 = 6 ms with
/// the batch of 4 full — and the Pareto trade-off appears: more tokens per second in all,
/// fewer per user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fuller_batch_decodes_slower_per_user() {
    let model = "chat=llm:ttft_ms=5,itl_ms=2,itl_us_per_sequence=1000,max_batch=4,output_tokens=48";
    let server = common::start_server(&[model]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let extra = [
        "--concurrency-range",
        "1:4:3",
        "-p",
        "1000",
        "--max-trials",
        "3",
    ];
    let flags = common::chat_flags(&addr, tokenizer.to_str().unwrap(), &extra);
    let levels = common::profile(&flags).await;
    let itl_ms = |l: &LevelResult| l.merged.tokens.as_ref().unwrap().inter_token.mean() / 1e6;
    let (alone, full) = (itl_ms(&levels[0]), itl_ms(&levels[1]));
    assert!((2.9..3.6).contains(&alone), "alone: {alone} ms");
    // Below 6 ms only for the moments a sequence is in prefill, out of the batch.
    assert!((5.4..6.6).contains(&full), "a batch of 4: {full} ms");
    // Per user, 1 / ITL: 333 tokens/s alone, 167 in the batch of 4.
    let per_user = |l: &LevelResult| l.merged.tokens.as_ref().unwrap().per_user_milli.mean();
    let (alone_user, full_user) = (per_user(&levels[0]), per_user(&levels[1]));
    assert!(alone_user > full_user * 1.6, "{alone_user} vs {full_user}");
    // In all, a request takes 5 + 47 × 3 = 146 ms alone and 5 + 47 × 6 = 287 ms in the
    // batch, so 4 in flight make 4 × 146 / 287 = 2.03 times the tokens per second — less
    // for the moments a sequence spends in prefill, so the check leaves room below.
    let ratio = levels[1].merged.token_throughput() / levels[0].merged.token_throughput();
    assert!(
        (1.7..2.3).contains(&ratio),
        "4 in flight make {ratio} times the tokens/s"
    );
}

/// Another client on the server while the level runs: the engine counts its requests too,
/// twice the client's, and the console says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_client_on_the_server_is_a_warning() {
    let model = "chat=llm:ttft_ms=5,itl_ms=2,max_batch=8,output_tokens=16,metrics=vllm";
    let server = common::start_server(&[model]).await;
    let addr = server.http_addr.to_string();
    let page = format!("http://{addr}/metrics");
    let stop = Arc::new(AtomicBool::new(false));
    let other = tokio::spawn({
        let (http, stop) = (Http::new(server.http_addr), stop.clone());
        async move {
            let body = json!({"model": "chat", "max_tokens": 16,
                "messages": [{"role": "user", "content": "one two three"}]});
            while !stop.load(Ordering::Relaxed) {
                let path = "/v1/chat/completions";
                let answer = (http.send(Method::POST, path, body.to_string().into(), None)).await;
                assert!(answer.status.is_success(), "{}", answer.status);
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let extra = ["--server-metrics", &page, "-p", "500", "--max-trials", "3"];
    let out = common::run_cli(&common::chat_flags(
        &addr,
        tokenizer.to_str().unwrap(),
        &extra,
    ))
    .await;
    stop.store(true, Ordering::Relaxed);
    other.await.unwrap();
    let stdout = common::stdout(&out);
    let warning = (stdout.lines())
        .find(|l| l.contains("[WARNING] The engine counted") && l.contains(" requests, the client"))
        .unwrap_or_else(|| panic!("{stdout}\n{}", common::stderr(&out)));
    assert!(
        warning.contains("another client used the server"),
        "{warning}"
    );
}
