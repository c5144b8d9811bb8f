//! AIPerf's endpoint types beyond chat, each run as `inferperf profile --endpoint-type X`
//! against the embedded server, whose counts are the truth: Anthropic's messages (streamed
//! and whole, usage merged), the three rankings APIs (the passages' cost model of the
//! `embeddings` kind), TGI's generate, Triton's generate extension (GenAI-Perf's
//! `generate`, its path naming the model), SOLIDO's RAG, chat and NIM embeddings, a Jinja
//! template and raw bodies; tool calls from `--extra-inputs` and from a trace's `tools`,
//! whose streamed arguments are answers and output tokens; `--api-key` sent and kept out of
//! every file; and the types inferperf refuses, each in one sentence.

use crate::common;

use inferperf::backend::TokenSource;
use inferperf::measure::window::WindowStats;
use inferperf_server::{RunningServer, TokenCounts};

fn counts(server: &RunningServer, model: &str) -> TokenCounts {
    let all = server.local.openai_statistics();
    all.into_iter().find(|(name, _)| name == model).unwrap().1
}

/// The words of a line of flags (none holds a space).
fn split(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `-m MODEL -u ADDR --endpoint-type TYPE` and the flags.
fn aiperf<'a>(addr: &'a str, model: &'a str, kind: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["-m", model, "-u", addr, "--endpoint-type", kind];
    args.extend_from_slice(extra);
    args
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn within(value: f64, truth: f64, share: f64) -> bool {
    (value - truth).abs() <= truth * share
}

async fn window(args: &[&str]) -> WindowStats {
    let results = common::profile(args).await;
    results[0].merged.clone()
}

/// The time to first token is the server's 30 ms, and not less; nor near the whole
/// answer's 63 ms (30 ms and eleven 3 ms gaps). The bound above leaves room for a busy
/// machine (a build beside the tests made it 36 ms).
fn assert_ttft(w: &WindowStats, what: &str) {
    let ttft = ms(w.first_response.mean());
    assert!(
        ttft >= 30.0 && within(ttft, 30.0, 0.5),
        "{what}: TTFT {ttft} ms"
    );
}

const LLM: &str = "chat=llm:ttft_ms=30,itl_ms=3,max_batch=8";
/// Twelve output tokens asked of prompts of 20, ten requests two at a time.
const LOAD: &str = "--concurrency 2 --request-count 10 --osl 12 --isl 20";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_stream_anthropics_events_and_answer_whole() {
    let server = common::start_server(&[LLM]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let words = common::word_tokenizer(dir.path());
    let mut flags = split(LOAD);
    // A tokenizer of the client's own counts the text beside the usage.
    flags.extend(["--streaming", "--tokenizer", words.to_str().unwrap()]);
    let w = window(&aiperf(&addr, "chat", "messages", &flags)).await;
    assert_eq!((w.ok, w.error_count()), (10, 0));
    let tokens = w.tokens.as_ref().expect("token figures");
    // message_start's input_tokens and message_delta's output_tokens, merged.
    assert_eq!(tokens.main_source(), TokenSource::Usage);
    assert_eq!(tokens.output_tokens.sum(), 10 * 12);
    assert_eq!(tokens.usage_input_tokens.sum(), 10 * 20);
    assert_eq!(tokens.input_tokens.sum(), 10 * 20);
    assert_eq!(
        tokens.usage_completion_diff.count(),
        10,
        "the deltas' text counted"
    );
    assert_eq!(
        tokens.usage_completion_diff.max(),
        0.0,
        "as the usage counts it"
    );
    assert_ttft(&w, "messages");
    assert_eq!(w.responses.sum(), 10 * 12, "each text delta is an answer");
    let truth = counts(&server, "chat");
    // The discovery probe is one more request of one token.
    assert_eq!((truth.requests, truth.streamed), (11, 10));
    assert_eq!(truth.completion_tokens, 10 * 12 + 1);
    // Without --streaming: one message with its content block and usage.
    let w = window(&aiperf(&addr, "chat", "messages", &split(LOAD))).await;
    assert_eq!((w.ok, w.error_count()), (10, 0));
    assert_eq!(w.tokens.as_ref().unwrap().output_tokens.sum(), 10 * 12);
    let latency = ms(w.latency.min());
    assert!(latency >= 30.0 + 11.0 * 3.0, "latency {latency} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rankings_types_send_aiperfs_passages_at_the_servers_cost() {
    // A reranker: 2 ms per request and 20 µs per word of each (query, passage) pair.
    let server = common::start_server(&["rr=embeddings:ms=2,us_per_token=20"]).await;
    let addr = server.http_addr.to_string();
    let shape = split(
        "--concurrency 1 --request-count 8 --num-dataset-entries 8 --rankings-passages-mean 4 \
         --rankings-passages-prompt-token-mean 30 --rankings-query-prompt-token-mean 10",
    );
    let mut served = 0;
    for kind in ["nim_rankings", "hf_tei_rankings", "cohere-rankings"] {
        let w = window(&aiperf(&addr, "rr", kind, &shape)).await;
        assert_eq!((w.ok, w.error_count()), (8, 0), "{kind}");
        // A ranking generates no text; its input tokens are the query's and the passages'
        // (as AIPerf counts the texts of the body): 10 + 4 × 30.
        let tokens = w.tokens.as_ref().expect("a ranking's input tokens");
        assert!(!tokens.generates(), "{kind}");
        assert_eq!(tokens.output_tokens.sum(), 0, "{kind}");
        assert_eq!(tokens.input_tokens.sum(), 8 * 130, "{kind}");
        // Each of the 4 pairs reads 10 + 30 words: 160 words, 3.2 ms beside the 2 ms (the
        // fastest request, which a busy machine delays least).
        let latency = ms(w.latency.min());
        assert!(
            (5.2..5.2 + 3.0).contains(&latency),
            "{kind}: latency {latency} ms"
        );
        served += 1;
        let truth = counts(&server, "rr");
        // Each run's probe ranks one passage of one word for a query of one word.
        assert_eq!(truth.requests, served * 9, "{kind}");
        assert_eq!(truth.inputs, served * (8 * 4 + 1), "{kind}");
        assert_eq!(truth.prompt_tokens, served * (8 * 160 + 2), "{kind}");
    }
    // AIPerf's effective defaults: 10 passages of 128 tokens, a query of 32.
    let w = window(&aiperf(
        &addr,
        "rr",
        "nim_rankings",
        &["--request-count", "2"],
    ))
    .await;
    assert_eq!(w.ok, 2);
    let truth = counts(&server, "rr");
    assert_eq!(truth.inputs, 3 * (8 * 4 + 1) + 2 * 10 + 1);
    assert_eq!(
        truth.prompt_tokens,
        3 * (8 * 160 + 2) + 2 * 10 * (32 + 128) + 2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huggingface_generate_streams_tokens_and_answers_whole() {
    let server = common::start_server(&[LLM]).await;
    let addr = server.http_addr.to_string();
    let mut flags = split(LOAD);
    flags.push("--streaming");
    let w = window(&aiperf(&addr, "chat", "huggingface_generate", &flags)).await;
    assert_eq!((w.ok, w.error_count()), (10, 0));
    let tokens = w.tokens.as_ref().unwrap();
    // TGI sends no usage: the answers' token texts are counted (the server's tokenizer).
    assert_eq!(tokens.main_source(), TokenSource::Tokenizer);
    assert_eq!(tokens.output_tokens.sum(), 10 * 12);
    assert_eq!(tokens.input_tokens.sum(), 10 * 20);
    assert_ttft(&w, "huggingface_generate");
    let truth = counts(&server, "chat");
    assert_eq!((truth.requests, truth.streamed), (11, 10));
    assert_eq!(truth.prompt_tokens, 10 * 20 + 1);
    let whole = aiperf(&addr, "chat", "huggingface_generate", &split(LOAD));
    let w = window(&whole).await;
    assert_eq!((w.ok, w.error_count()), (10, 0));
    assert_eq!(w.tokens.as_ref().unwrap().output_tokens.sum(), 10 * 12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triton_generate_streams_tokens_and_answers_whole() {
    let server = common::start_server(&[LLM, "identity=identity"]).await;
    let addr = server.http_addr.to_string();
    let mut flags = split(LOAD);
    flags.push("--streaming");
    let w = window(&aiperf(&addr, "chat", "generate", &flags)).await;
    assert_eq!((w.ok, w.error_count()), (10, 0), "{:?}", w.notes);
    let tokens = w.tokens.as_ref().unwrap();
    // Triton's generate sends no usage: the text_output of each step is counted.
    assert_eq!(tokens.main_source(), TokenSource::Tokenizer);
    assert_eq!(tokens.output_tokens.sum(), 10 * 12);
    assert_eq!(tokens.input_tokens.sum(), 10 * 20);
    assert_eq!(w.responses.sum(), 10 * 12, "each step is an answer");
    assert_ttft(&w, "generate");
    let itl = ms(tokens.inter_token.mean());
    assert!((2.7..6.0).contains(&itl), "generate: ITL {itl} ms");
    let truth = counts(&server, "chat");
    assert_eq!((truth.requests, truth.streamed), (11, 10));
    assert_eq!(truth.prompt_tokens, 10 * 20 + 1);
    assert_eq!(truth.completion_tokens, 10 * 12 + 1);
    let whole = aiperf(&addr, "chat", "generate", &split(LOAD));
    let w = window(&whole).await;
    assert_eq!((w.ok, w.error_count()), (10, 0));
    assert_eq!(w.tokens.as_ref().unwrap().output_tokens.sum(), 10 * 12);
    let latency = ms(w.latency.min());
    assert!(latency >= 30.0 + 11.0 * 3.0, "latency {latency} ms");
    assert_eq!(
        counts(&server, "chat").streamed,
        10,
        "the whole run streamed none"
    );
    // A model the extension does not serve is one sentence before the run (here the
    // server's /v1/models says so; a Triton without the list answers the probe's POST).
    let mut args = vec!["profile"];
    args.extend(aiperf(
        &addr,
        "identity",
        "generate",
        &["--request-count", "1"],
    ));
    let out = common::run_cli(&args).await;
    assert_eq!(out.status.code(), Some(3));
    let stderr = common::stderr(&out);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("'identity'"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solido_rag_and_the_embedding_types() {
    let server = common::start_server(&[LLM, "emb=embeddings:ms=1"]).await;
    let addr = server.http_addr.to_string();
    let mut flags = split(LOAD);
    flags.push("--streaming");
    let w = window(&aiperf(&addr, "chat", "solido_rag", &flags)).await;
    assert_eq!((w.ok, w.error_count()), (10, 0));
    // AIPerf's RAG body asks no length: the server's default of 16 tokens.
    assert_eq!(w.tokens.as_ref().unwrap().output_tokens.sum(), 10 * 16);
    assert_ttft(&w, "solido_rag");
    let few = split("--concurrency 1 --request-count 5 --isl 20");
    for kind in ["nim_embeddings", "chat_embeddings"] {
        let w = window(&aiperf(&addr, "emb", kind, &few)).await;
        assert_eq!((w.ok, w.error_count()), (5, 0), "{kind}");
    }
    let truth = counts(&server, "emb");
    // Each request embeds one input of 20 words (the probe's of one).
    assert_eq!((truth.requests, truth.inputs), (12, 12));
    assert_eq!(truth.prompt_tokens, 2 * (5 * 20 + 1));
}

/// A chat tool, in the JSON form of `--extra-inputs` AIPerf documents.
const TOOLS: &str = r#"{"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}], "tool_choice": "auto"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_tool_calls_are_answers_and_output_tokens() {
    let server = common::start_server(&[LLM]).await;
    let addr = server.http_addr.to_string();
    // Without the usage chunk, chat's tool-call text is counted: the name and the
    // arguments ("get_weathertok tok ... tok " is twelve words, the twelve tokens).
    let no_usage = r#"{"stream_options": {"include_usage": false}}"#;
    let mut flags = split(LOAD);
    flags.extend(["--streaming", "--extra-inputs", TOOLS]);
    flags.extend(["--extra-inputs", no_usage]);
    let w = window(&aiperf(&addr, "chat", "chat", &flags)).await;
    assert_eq!((w.ok, w.error_count()), (10, 0));
    let tokens = w.tokens.as_ref().unwrap();
    assert_eq!(tokens.main_source(), TokenSource::Tokenizer);
    assert_eq!(tokens.output_tokens.sum(), 10 * 12);
    assert_eq!(
        w.responses.sum(),
        10 * 12,
        "each tool-call delta is an answer"
    );
    assert_ttft(&w, "chat");
    assert_eq!(counts(&server, "chat").completion_tokens, 10 * 12 + 1);
    // Responses' function_call_arguments deltas and Anthropic's input_json_delta: counted
    // (by a tokenizer of the client's own) as the usage counts them.
    let dir = tempfile::tempdir().unwrap();
    let words = common::word_tokenizer(dir.path());
    let mut flags = split(LOAD);
    flags.extend(["--streaming", "--extra-inputs", TOOLS]);
    flags.extend(["--tokenizer", words.to_str().unwrap()]);
    for kind in ["responses", "messages"] {
        let w = window(&aiperf(&addr, "chat", kind, &flags)).await;
        assert_eq!((w.ok, w.error_count()), (10, 0), "{kind}");
        let tokens = w.tokens.as_ref().unwrap();
        assert_eq!(tokens.output_tokens.sum(), 10 * 12, "{kind}");
        let diff = &tokens.usage_completion_diff;
        assert_eq!(
            (diff.count(), diff.max()),
            (10, 0.0),
            "{kind}: text counted too"
        );
        assert_eq!(w.responses.sum(), 10 * 12, "{kind}");
        assert_ttft(&w, kind);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traces_tools_reach_the_body_and_its_call_is_counted() {
    let server = common::start_server(&[LLM]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let line = r#"{"messages": [{"role": "user", "content": "what is the weather"}], "tools": [{"type": "function", "function": {"name": "lookup"}}], "output_length": 6}"#;
    std::fs::write(&trace, format!("{line}\n{line}\n")).unwrap();
    let words = common::word_tokenizer(dir.path());
    let mut flags =
        split("--custom-dataset-type mooncake_trace --streaming --concurrency 1 --request-count 4");
    flags.extend(["--input-file", trace.to_str().unwrap()]);
    flags.extend(["--tokenizer", words.to_str().unwrap()]);
    let w = window(&aiperf(&addr, "chat", "chat", &flags)).await;
    assert_eq!((w.ok, w.error_count()), (4, 0));
    let tokens = w.tokens.as_ref().unwrap();
    assert_eq!(tokens.output_tokens.sum(), 4 * 6);
    // "lookup" and the arguments are six words, as the usage's six tokens.
    let diff = &tokens.usage_completion_diff;
    assert_eq!((diff.count(), diff.max()), (4, 0.0));
    assert_eq!(tokens.input_tokens.sum(), 4 * 4);
    // Only the trace's requests called a tool (the probe has none): the server's events
    // are the trace's tool-call deltas.
    let truth = counts(&server, "chat");
    assert_eq!((truth.completion_tokens, truth.events), (4 * 6 + 1, 4 * 6));
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        r#"{"text_input": "x", "tools": [{"type": "function"}]}"#,
    )
    .unwrap();
    let mut args = vec!["profile"];
    let flags = ["--input-file", bad.to_str().unwrap()];
    args.extend(aiperf(&addr, "chat", "chat", &flags));
    args.extend(["--custom-dataset-type", "mooncake_trace"]);
    let out = common::run_cli(&args).await;
    assert_eq!(out.status.code(), Some(3));
    assert!(common::stderr(&out).contains("\"tools\" go with \"messages\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_body_and_raw_bodies_are_sent_and_read_by_shape() {
    let server = common::start_server(&[LLM, "emb=embeddings:ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.json");
    let body = r#"{"model": {{ model|tojson }}, "messages": [{"role": "user", "content": {{ text|tojson }}}], "max_tokens": {{ max_tokens|tojson }}, "stream": {{ stream|tojson }}}"#;
    std::fs::write(&file, body).unwrap();
    let template = format!("payload_template:{}", file.display());
    let mut flags = split(LOAD);
    flags.extend(["--streaming", "--custom-endpoint", "/v1/chat/completions"]);
    flags.extend(["--extra-inputs", &template]);
    let w = window(&aiperf(&addr, "chat", "template", &flags)).await;
    assert_eq!((w.ok, w.error_count()), (10, 0));
    let tokens = w.tokens.as_ref().unwrap();
    assert_eq!(
        tokens.output_tokens.sum(),
        10 * 12,
        "the chunks' text, by its shape"
    );
    assert_ttft(&w, "template");
    // The server read the rendered bodies: ten prompts of 20 words and the probe's one.
    assert_eq!(counts(&server, "chat").prompt_tokens, 10 * 20 + 1);
    // An inline template of an embeddings body, its answer at a JMESPath field.
    let embed = r#"payload_template:{"model": {{ model|tojson }}, "input": {{ texts|tojson }}}"#;
    let mut flags = split("--concurrency 1 --request-count 4 --isl 20");
    flags.extend([
        "--extra-inputs",
        embed,
        "--custom-endpoint",
        "/v1/embeddings",
    ]);
    flags.extend(["--extra-inputs", "response_field:data[0].embedding"]);
    let w = window(&aiperf(&addr, "emb", "template", &flags)).await;
    assert_eq!((w.ok, w.error_count()), (4, 0));
    assert_eq!(counts(&server, "emb").prompt_tokens, 4 * 20 + 1);
    // raw: AIPerf's inputs.json, each payload sent as it is.
    let inputs = dir.path().join("inputs.json");
    let payload = r#"{"model": "chat", "messages": [{"role": "user", "content": "one two three"}], "max_tokens": 5}"#;
    let session = |id: &str| format!(r#"{{"session_id": "{id}", "payloads": [{payload}]}}"#);
    let file = format!(r#"{{"data": [{}, {}]}}"#, session("a"), session("b"));
    std::fs::write(&inputs, file).unwrap();
    let mut flags = split(
        "--custom-dataset-type inputs_json --custom-endpoint /v1/chat/completions \
         --concurrency 1 --request-count 4",
    );
    flags.extend(["--input-file", inputs.to_str().unwrap()]);
    let before = counts(&server, "chat");
    let w = window(&aiperf(&addr, "chat", "raw", &flags)).await;
    assert_eq!((w.ok, w.error_count()), (4, 0));
    assert_eq!(w.tokens.as_ref().unwrap().output_tokens.sum(), 4 * 5);
    let after = counts(&server, "chat");
    assert_eq!(after.requests, before.requests + 4, "raw sends no probe");
    assert_eq!(after.prompt_tokens, before.prompt_tokens + 4 * 3);
}

/// The files under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => dirs.push(path),
                false => files.push(path),
            }
        }
    }
    files
}

/// The request `--endpoint-type kind` sends first, as bytes, lowercased.
async fn first_request(addr: &str, kind: &str) -> String {
    first_request_with(
        addr,
        kind,
        "-H Authorization:old --api-key k1 --request-count 1",
    )
    .await
}

async fn first_request_with(addr: &str, kind: &str, flags: &str) -> String {
    let flags = split(flags);
    let cfg = common::config(&aiperf(addr, "chat", kind, &flags));
    let prepared = inferperf::commands::profile::prepare(&cfg).await.unwrap();
    let inferperf::backend::Payload::Http(bytes) = &prepared.requests[0].payload else {
        panic!("an HTTP request")
    };
    String::from_utf8_lossy(bytes).to_ascii_lowercase()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_is_sent_but_never_written() {
    let server = common::start_server(&[LLM]).await;
    let addr = server.http_addr.to_string();
    // What is sent: the key after the -H headers, in place of one of the same name.
    let chat = first_request(&addr, "chat").await;
    assert!(chat.contains("authorization: bearer k1\r\n"), "{chat}");
    assert!(!chat.contains(": old\r\n"), "{chat}");
    let messages = first_request(&addr, "messages").await;
    assert!(
        messages.starts_with("post /v1/messages http/1.1\r\n"),
        "{messages}"
    );
    assert!(messages.contains("x-api-key: k1\r\n"), "{messages}");
    assert!(
        messages.contains("anthropic-version: 2023-06-01\r\n"),
        "{messages}"
    );
    assert!(messages.contains(": old\r\n"), "messages keeps -H's own");
    // What is written: nowhere the key.
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    let artifacts = dir.path().join("artifacts");
    let mut args = vec!["profile"];
    let flags = split("--api-key sk-sekrit-key --request-count 3 --concurrency 1 --osl 2");
    args.extend(aiperf(&addr, "chat", "messages", &flags));
    args.extend(["--results-file", results.to_str().unwrap(), "--no-progress"]);
    args.extend(["--artifact-dir", artifacts.to_str().unwrap()]);
    let out = common::run_cli(&args).await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let mut files = files_under(&artifacts);
    files.push(results.clone());
    assert!(files.len() > 2, "{files:?}");
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains("sekrit"), "{} holds the key", file.display());
    }
    let printed = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(!printed.contains("sekrit"));
    assert!(std::fs::read_to_string(&results)
        .unwrap()
        .contains("x-api-key"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_content_type_is_the_one_given() {
    let server = common::start_server(&[LLM]).await;
    let addr = server.http_addr.to_string();
    let flags = "-H Content-Type:text/old --request-content-type application/vnd.x+json";
    let sent = first_request_with(&addr, "chat", flags).await;
    assert!(
        sent.contains("content-type: application/vnd.x+json\r\n"),
        "{sent}"
    );
    assert_eq!(sent.matches("content-type:").count(), 1, "{sent}");
    let sent = first_request_with(&addr, "chat", "--request-count 1").await;
    assert!(
        sent.contains("content-type: application/json\r\n"),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn types_inferperf_cannot_send_are_refused_in_one_sentence() {
    let kinds = [
        "video_generation",
        "image-edit",
        "audio_transcription",
        "image_retrieval",
        "image_generation",
        "echo",
    ];
    for kind in kinds {
        let out = common::run_cli(&["profile", "-m", "m", "--endpoint-type", kind]).await;
        assert_eq!(out.status.code(), Some(3), "{kind}");
        let stderr = common::stderr(&out);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!("--endpoint-type '{kind}'")),
            "{stderr}"
        );
    }
}
