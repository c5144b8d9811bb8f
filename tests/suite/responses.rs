//! The OpenAI Responses API (`POST /v1/responses`), as AIPerf's `--endpoint-type responses`
//! and GenAI-Perf's `--endpoint v1/responses`: against the embedded server's `llm` kind,
//! whose counts are the truth, a stream's `response.output_text.delta` events are timed and
//! its tokens taken from the `usage` of `response.completed`; an answer in one piece is
//! read from its `output`. Against a few lines of raw HTTP that answer badly, a bad answer
//! is an error of its kind, and the requests are the Responses API's.

use crate::common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use inferperf::backend::{ErrorKind, Malformation, TokenSource};
use inferperf_server::TokenCounts;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn counts(server: &inferperf_server::RunningServer) -> TokenCounts {
    let all = server.local.openai_statistics();
    all.into_iter().find(|(name, _)| name == "chat").unwrap().1
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_response_is_timed_and_its_usage_counted() {
    let server = common::start_server(&["chat=llm:ttft_ms=30,itl_ms=4,max_batch=8"]).await;
    let addr = server.http_addr.to_string();
    let results = common::profile(&[
        "-m",
        "chat",
        "--endpoint-type",
        "responses",
        "-u",
        &addr,
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
    ])
    .await;
    let w = &results[0].merged;
    assert_eq!((w.ok, w.error_count()), (40, 0), "{:?}", w.errors);
    let tokens = w.tokens.as_ref().expect("token figures");
    assert_eq!(tokens.main_source(), TokenSource::Usage);
    assert_eq!(tokens.output_tokens.sum(), 40 * 12);
    assert_eq!(tokens.input_tokens.sum(), 40 * 50);
    assert_eq!(tokens.unstreamed, 0);
    // Each delta event is an answer, the first of them the first token.
    assert_eq!(w.responses.sum(), 40 * 12, "one answer per delta event");
    let ttft = ms(w.first_response.mean());
    assert!((30.0..30.0 * 1.2).contains(&ttft), "TTFT {ttft} ms");
    let itl = ms(tokens.inter_token.mean());
    assert!((4.0 * 0.85..4.0 * 1.15).contains(&itl), "ITL {itl} ms");
    // The server counts the discovery probe (one token) too.
    let truth = counts(&server);
    assert_eq!(truth.requests, 41);
    assert_eq!(truth.completion_tokens, 40 * 12 + 1);
    assert_eq!(truth.streamed, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_in_one_piece_is_read_from_its_output() {
    let server = common::start_server(&["chat=llm:ttft_ms=5,itl_ms=1,max_batch=8"]).await;
    let addr = server.http_addr.to_string();
    let results = common::profile(&[
        "-m",
        "chat",
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/responses",
        "-u",
        &addr,
        "--concurrency-range",
        "2",
        "--request-count",
        "10",
        "--output-tokens-mean",
        "7",
        "--output-tokens-mean-deterministic",
        "--synthetic-input-tokens-mean",
        "20",
    ])
    .await;
    let w = &results[0].merged;
    assert_eq!((w.ok, w.error_count()), (10, 0), "{:?}", w.errors);
    let tokens = w.tokens.as_ref().expect("token figures");
    assert_eq!(tokens.main_source(), TokenSource::Usage);
    assert_eq!(tokens.output_tokens.sum(), 10 * 7);
    assert_eq!(tokens.input_tokens.sum(), 10 * 20);
    assert_eq!(w.responses.sum(), 10, "one answer per request");
    assert!(
        w.first_response.mean() > 0.0,
        "the answer's time is its TTFT"
    );
    assert_eq!(counts(&server).streamed, 0);
}

/// How the raw server answers a Responses request.
#[derive(Clone, Copy)]
enum Answer {
    /// Deltas, then the end event with its usage: a good stream.
    Stream,
    /// Deltas, then the body ends without `response.completed`.
    BreakOff,
    /// `response.failed` with the server's words.
    Failed,
    /// A whole answer whose output has no text.
    NoText,
}

const DELTA: &str = r#"{"type":"response.output_text.delta","delta":"tok "}"#;
const COMPLETED: &str = r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":4,"output_tokens":2}}}"#;
const FAILED: &str = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"out of memory"}}}"#;
const NO_TEXT: &str = r#"{"object":"response","output":[{"type":"message","content":[]}],"usage":{"input_tokens":4,"output_tokens":0}}"#;

fn event(kind: &str, json: &str) -> String {
    let data = format!("event: {kind}\ndata: {json}\n\n");
    format!("{:x}\r\n{data}\r\n", data.len())
}

fn whole(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn answer(how: Answer, request: &str) -> (String, bool) {
    if request.starts_with("GET") {
        return (whole(r#"{"object":"list","data":[{"id":"chat"}]}"#), true);
    }
    if !request.contains("\"stream\":true") || matches!(how, Answer::NoText) {
        let good = r#"{"object":"response","output":[{"type":"message","content":[{"type":"output_text","text":"tok"}]}],"usage":{"input_tokens":1,"output_tokens":1}}"#;
        let body = if request.contains("\"stream\":true") {
            NO_TEXT
        } else {
            good
        };
        return (whole(body), true);
    }
    let mut out = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    out += &event(
        "response.created",
        r#"{"type":"response.created","response":{"status":"in_progress"}}"#,
    );
    out += &event("response.output_text.delta", DELTA);
    out += &event("response.output_text.delta", DELTA);
    match how {
        Answer::BreakOff => return (out, false),
        Answer::Failed => out += &event("response.failed", FAILED),
        Answer::Stream | Answer::NoText => out += &event("response.completed", COMPLETED),
    }
    out += "0\r\n\r\n";
    (out, true)
}

/// Reads one request (head and body); `None` when the client closed.
async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let length: usize = (head.lines())
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= end + 4 + length {
                let request = String::from_utf8_lossy(&buf[..end + 4 + length]).into_owned();
                buf.drain(..end + 4 + length);
                return Some(request);
            }
        }
        let mut chunk = [0u8; 4096];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A raw server answering every request as `how` says, keeping the streamed POSTs it got.
async fn start(how: Answer, posts: Arc<Mutex<Vec<String>>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let posts = posts.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while let Some(request) = read_request(&mut socket, &mut buf).await {
                    if request.contains("\"stream\":true") {
                        posts.lock().unwrap().push(request.clone());
                    }
                    let (reply, keep) = answer(how, &request);
                    let _ = socket.write_all(reply.as_bytes()).await;
                    if !keep {
                        return;
                    }
                }
            });
        }
    });
    addr
}

async fn run(how: Answer) -> (inferperf::measure::window::WindowStats, Vec<String>) {
    let posts = Arc::new(Mutex::new(Vec::new()));
    let addr = start(how, posts.clone()).await.to_string();
    let results = common::profile(&[
        "-m",
        "chat",
        "--endpoint-type",
        "responses",
        "-u",
        &addr,
        "--streaming",
        "--concurrency-range",
        "2",
        "--request-count",
        "10",
        "--output-tokens-mean",
        "2",
        "--synthetic-input-tokens-mean",
        "4",
    ])
    .await;
    let posts = posts.lock().unwrap().clone();
    (results[0].merged.clone(), posts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_the_responses_apis_and_its_usage_is_read() {
    let (w, posts) = run(Answer::Stream).await;
    assert_eq!((w.ok, w.error_count()), (10, 0), "{:?}", w.errors);
    let tokens = w.tokens.as_ref().expect("token figures");
    assert_eq!(tokens.output_tokens.sum(), 20, "usage says 2 each");
    assert_eq!(tokens.input_tokens.sum(), 40, "usage says 4 each");
    assert_eq!(w.responses.sum(), 20, "two deltas each");
    let request = &posts[0];
    assert!(request.starts_with("POST /v1/responses "), "{request}");
    let body: serde_json::Value =
        serde_json::from_str(&request[request.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    assert_eq!(body["model"], "chat");
    assert!(body["input"].is_string(), "{body}");
    assert_eq!(body["max_output_tokens"], 2);
    assert_eq!(body["stream"], true);
    assert!(body.get("stream_options").is_none(), "{body}");
    assert!(body.get("max_tokens").is_none() && body.get("messages").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_without_its_end_event_is_truncated() {
    let (w, _) = run(Answer::BreakOff).await;
    let kind = ErrorKind::BadResponse(Malformation::Truncated);
    assert_eq!(w.errors.get(&kind), Some(&10), "{:?}", w.errors);
    assert_eq!(w.ok, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_response_is_a_stream_error_with_the_servers_words() {
    let (w, _) = run(Answer::Failed).await;
    assert_eq!(
        w.errors.get(&ErrorKind::StreamError),
        Some(&10),
        "{:?}",
        w.errors
    );
    assert!(
        w.notes[0].text.contains("out of memory"),
        "{}",
        w.notes[0].text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_text_is_a_missing_output() {
    let (w, _) = run(Answer::NoText).await;
    let kind = ErrorKind::BadResponse(Malformation::MissingOutput);
    assert_eq!(w.errors.get(&kind), Some(&10), "{:?}", w.errors);
}
