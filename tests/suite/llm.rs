//! LLM runs against the embedded server's `llm` kind, whose every figure has a known truth:
//! time to first token, inter-token latency (also when an event carries several tokens),
//! tokens counted from the server's usage or from the answers' text, request rate with `--slo` on
//! LLM figures ending at the knee with goodput, answers in one piece, and embeddings. The
//! server's own counts are the ground truth for tokens and requests.

use crate::common;

use inferperf::backend::TokenSource;
use inferperf::measure::level::LevelResult;
use inferperf_server::{RunningServer, TokenCounts};

fn counts(server: &RunningServer, model: &str) -> TokenCounts {
    let all = server.local.openai_statistics();
    all.into_iter().find(|(name, _)| name == model).unwrap().1
}

fn openai<'a>(addr: &'a str, endpoint: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "-m",
        "chat",
        "--service-kind",
        "openai",
        "--endpoint",
        endpoint,
        "-u",
        addr,
    ];
    args.extend_from_slice(extra);
    args
}

/// Mean of a distribution in ms.
fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn within(value: f64, truth: f64, share: f64) -> bool {
    (value - truth).abs() <= truth * share
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_tokens_are_timed_against_the_models_truth() {
    let server = common::start_server(&["chat=llm:ttft_ms=30,itl_ms=4,max_batch=8"]).await;
    let addr = server.http_addr.to_string();
    let flags = [
        "--streaming",
        "--concurrency-range",
        "4",
        "--request-count",
        "40",
        "--output-tokens-mean",
        "12",
        "--output-tokens-mean-deterministic",
        "--synthetic-input-tokens-mean",
        "50",
    ];
    let results = common::profile(&openai(&addr, "v1/chat/completions", &flags)).await;
    let w = &results[0].merged;
    assert_eq!((w.ok, w.error_count()), (40, 0));
    let tokens = w.tokens.as_ref().expect("token figures");
    assert_eq!(tokens.main_source(), TokenSource::Usage);
    assert_eq!(tokens.output_tokens.sum(), 40 * 12);
    assert_eq!(tokens.input_tokens.sum(), 40 * 50);
    let ttft = ms(w.first_response.mean());
    assert!(ttft >= 30.0 && within(ttft, 30.0, 0.15), "TTFT {ttft} ms");
    let itl = ms(tokens.inter_token.mean());
    assert!(within(itl, 4.0, 0.15), "ITL {itl} ms");
    let gaps = ms(w.inter_response.mean());
    assert!(within(gaps, 4.0, 0.15), "inter-chunk {gaps} ms");
    assert_eq!(
        w.inter_response.count(),
        40 * 11,
        "11 gaps per 12-event stream"
    );
    // Out of prefill, a sequence waits for the running step to end and joins the next one:
    // its second token comes one to two steps after its first.
    let second = ms(tokens.second_token.mean());
    assert!(
        (4.0 * 0.9..=8.0 * 1.1).contains(&second),
        "TT2T {second} ms"
    );
    // The server counts the discovery probe (one token) too.
    let truth = counts(&server, "chat");
    assert_eq!(truth.requests, 41);
    assert_eq!(truth.completion_tokens, 40 * 12 + 1);
    assert_eq!(truth.streamed, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_several_tokens_count_each_token() {
    let server = common::start_server(&["chat=llm:ttft_ms=20,itl_ms=8,tokens_per_event=4"]).await;
    let addr = server.http_addr.to_string();
    let flags = [
        "--streaming",
        "--concurrency-range",
        "2",
        "--request-count",
        "20",
        "--output-tokens-mean",
        "20",
        "--output-tokens-mean-deterministic",
    ];
    let results = common::profile(&openai(&addr, "v1/completions", &flags)).await;
    let w = &results[0].merged;
    let tokens = w.tokens.as_ref().unwrap();
    assert_eq!(
        tokens.output_tokens.sum(),
        20 * 20,
        "usage counts tokens, not events"
    );
    assert_eq!(w.responses.sum(), 20 * 5, "five events of four tokens");
    // Four steps of 8 ms produce the 19 tokens after the first.
    let itl = ms(tokens.inter_token.mean());
    assert!(within(itl, 32.0 / 19.0, 0.15), "ITL {itl} ms");
    assert!(within(ms(w.inter_response.mean()), 8.0, 0.15));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_usage_the_answers_text_is_counted() {
    let server = common::start_server(&["chat=llm:ttft_ms=5,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.json");
    let body = r#"{"model":"chat","prompt":"one two three","max_tokens":7,"stream":true}"#;
    std::fs::write(&input, format!(r#"{{"data":[{{"payload":[{body}]}}]}}"#)).unwrap();
    let path = input.to_str().unwrap();
    let flags = [
        "--streaming",
        "--input-data",
        path,
        "--concurrency-range",
        "1",
        "--request-count",
        "5",
    ];
    let results = common::profile(&openai(&addr, "v1/completions", &flags)).await;
    let tokens = results[0].merged.tokens.as_ref().unwrap();
    // The server's tokenize endpoint counts the answers' words ("tok " per token).
    assert_eq!(tokens.main_source(), TokenSource::Tokenizer);
    assert_eq!(tokens.output_tokens.sum(), 35);
    assert_eq!(tokens.input_tokens.sum(), 15, "the prompt's words");
    assert_eq!(counts(&server, "chat").completion_tokens, 35 + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_answers_and_embeddings() {
    let server = common::start_server(&[
        "chat=llm:ttft_ms=10,itl_ms=2,output_tokens=6",
        "emb=embeddings:ms=2",
    ])
    .await;
    let addr = server.http_addr.to_string();
    let flags = ["--concurrency-range", "2", "--request-count", "10"];
    let results = common::profile(&openai(&addr, "v1/chat/completions", &flags)).await;
    let w = &results[0].merged;
    let tokens = w.tokens.as_ref().unwrap();
    assert_eq!(tokens.output_tokens.sum(), 60);
    assert_eq!(tokens.unstreamed, 0, "no stream was asked for");
    let latency = ms(w.latency.mean());
    assert!(
        latency >= 20.0 && within(latency, 20.0, 0.2),
        "{latency} ms"
    );
    let mut args = openai(&addr, "v1/embeddings", &flags);
    args[1] = "emb";
    let results = common::profile(&args).await;
    let w = &results[0].merged;
    assert_eq!((w.ok, w.error_count()), (10, 0));
    // Its input tokens are counted (as AIPerf counts them), no output tokens.
    let tokens = w.tokens.as_ref().expect("an embedding's input tokens");
    assert!(!tokens.generates());
    assert_eq!(tokens.output_tokens.sum(), 0);
    assert_eq!((tokens.by_usage, tokens.by_tokenizer), (0, 0));
    // 550 words each (the default input length), as the server counted them; the server
    // also counted the pre-flight check's request of one word.
    assert_eq!(tokens.input_tokens.count(), 10);
    assert_eq!(tokens.input_tokens.sum(), 10 * 550);
    let server_counted = counts(&server, "emb");
    assert_eq!(server_counted.requests, 11);
    assert_eq!(server_counted.prompt_tokens, 10 * 550 + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_sweep_with_llm_slos_ends_at_the_knee_with_goodput() {
    // Two sequences at a time, 20 + 9 × 2 ms each: about 52 requests per second at most.
    let server = common::start_server(&["chat=llm:ttft_ms=20,itl_ms=2,max_batch=2"]).await;
    let addr = server.http_addr.to_string();
    let flags = [
        "--streaming",
        "--request-rate-range",
        "20:120:100",
        "--output-tokens-mean",
        "10",
        "--output-tokens-mean-deterministic",
        "-p",
        "1500",
        "--slo",
        "ttft_p99<=150ms,itl_p99<=10ms",
    ];
    let results: Vec<LevelResult> =
        common::profile(&openai(&addr, "v1/chat/completions", &flags)).await;
    assert_eq!(
        results.len(),
        2,
        "the second level misses and ends the sweep"
    );
    let met = &results[0].merged;
    assert!(results[0].met_criteria());
    assert!(
        within(met.goodput(), met.throughput(), 0.05),
        "every request of the met level is within the limits: {} of {}",
        met.goodput(),
        met.throughput()
    );
    assert!(within(
        met.token_throughput(),
        met.throughput() * 10.0,
        0.01
    ));
    let over = &results[1].merged;
    assert!(!results[1].met_criteria());
    // The backlog shows: latency counts from the scheduled send.
    assert!(ms(over.first_response.percentile(99.0)) > 150.0);
    assert!(over.goodput() < over.throughput() * 0.5);
}
