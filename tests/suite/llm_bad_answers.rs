//! OpenAI-compatible servers that answer badly: an event stream that breaks off, an event
//! that is not JSON, an error event, a stream with no output (`choices: []` and usage
//! only), and a server that answers in one piece when a stream was asked for; and Triton's
//! generate extension answering badly (an error event, an answer without `text_output`,
//! an HTTP 500 with Triton's `{"error"}`). Each bad answer is counted as an error of its
//! kind (or, for the unstreamed answer, as one answer with a note) and the run goes on. The server here is a few lines of raw
//! HTTP, because a real server does not misbehave on demand.

use crate::common;

use std::net::SocketAddr;

use inferperf::backend::{ErrorKind, Malformation, TokenSource};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How the fake server answers streamed requests.
#[derive(Clone, Copy)]
enum Misbehaviour {
    BreakOff,
    Malformed,
    ErrorEvent,
    EmptyStream,
    Unstreamed,
    /// Triton's generate: two steps, then `{"error": ...}`.
    TritonErrorEvent,
    /// Triton's generate: a whole answer without `text_output`.
    TritonNoText,
    /// Triton's generate: HTTP 500 with `{"error": ...}` for each request of the run.
    TritonStatus,
}

async fn serve(listener: TcpListener, how: Misbehaviour) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(connection(socket, how));
    }
}

/// Reads one request (head and body); `None` when the client closed.
async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let length: usize = head
                .lines()
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

fn chunk(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n", data.len())
}

fn event(json: &str) -> String {
    chunk(&format!("data: {json}\n\n"))
}

const CONTENT: &str = r#"{"choices":[{"index":0,"delta":{"content":"tok "}}]}"#;
const WHOLE: &str = r#"{"choices":[{"message":{"content":"tok tok tok"}}],"usage":{"prompt_tokens":4,"completion_tokens":3}}"#;

async fn connection(mut socket: TcpStream, how: Misbehaviour) {
    let mut buf = Vec::new();
    while let Some(request) = read_request(&mut socket, &mut buf).await {
        let whole = |body: &str| {
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        if request.starts_with("GET") {
            let list = r#"{"object":"list","data":[{"id":"chat"}]}"#;
            let _ = socket.write_all(whole(list).as_bytes()).await;
            continue;
        }
        let streamed = request.contains("\"stream\":true");
        if request.starts_with("POST /v2/models/chat/generate") {
            let _ = socket.write_all(triton(how, streamed).as_bytes()).await;
            continue;
        }
        if !streamed || matches!(how, Misbehaviour::Unstreamed) {
            let _ = socket.write_all(whole(WHOLE).as_bytes()).await;
            continue;
        }
        let mut out = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        if matches!(how, Misbehaviour::EmptyStream) {
            out += &event(r#"{"choices":[]}"#);
            out += &event(r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3}}"#);
            out += &event("[DONE]");
            out += "0\r\n\r\n";
            let _ = socket.write_all(out.as_bytes()).await;
            continue;
        }
        out += &event(CONTENT);
        out += &event(CONTENT);
        match how {
            Misbehaviour::BreakOff => {
                let _ = socket.write_all(out.as_bytes()).await;
                return;
            }
            Misbehaviour::Malformed => out += &event("{\"choices\": [oops"),
            Misbehaviour::ErrorEvent => out += &event(r#"{"error":{"message":"overloaded"}}"#),
            _ => unreachable!(),
        }
        out += &event("[DONE]");
        out += "0\r\n\r\n";
        let _ = socket.write_all(out.as_bytes()).await;
    }
}

/// The answer of a Triton generate request: the discovery probe's (unstreamed, of one
/// token) is right; the run's are bad as `how` says.
fn triton(how: Misbehaviour, streamed: bool) -> String {
    const STEP: &str = r#"{"model_name":"chat","model_version":"1","text_output":"tok "}"#;
    let probe = !streamed && !matches!(how, Misbehaviour::TritonNoText);
    let whole = |status: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    match how {
        _ if probe => whole("200 OK", STEP),
        Misbehaviour::TritonNoText => {
            whole("200 OK", r#"{"model_name":"chat","model_version":"1"}"#)
        }
        Misbehaviour::TritonStatus => whole(
            "500 Internal Server Error",
            r#"{"error":"in ensemble 'chat', out of memory"}"#,
        ),
        _ => {
            let mut out = String::from(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
            );
            out += &event(STEP);
            out += &event(STEP);
            out += &event(r#"{"error":"overloaded"}"#);
            out + "0\r\n\r\n"
        }
    }
}

/// A Triton generate run against the fake server (streamed unless the answer is whole).
async fn run_triton(how: Misbehaviour) -> inferperf::measure::window::WindowStats {
    let addr = start(how).await.to_string();
    let mut args = vec!["-m", "chat", "--endpoint-type", "generate", "-u", &addr];
    args.extend(["--concurrency", "2", "--request-count", "20", "--osl", "3"]);
    if !matches!(how, Misbehaviour::TritonNoText) {
        args.push("--streaming");
    }
    let results = common::profile(&args).await;
    results[0].merged.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triton_generates_bad_answers_are_errors_of_their_kind() {
    let w = run_triton(Misbehaviour::TritonErrorEvent).await;
    assert_eq!(
        w.errors.get(&ErrorKind::StreamError),
        Some(&20),
        "{:?}",
        w.errors
    );
    assert_eq!(w.ok, 0);
    assert!(
        w.notes[0].text.contains("overloaded"),
        "{}",
        w.notes[0].text
    );
    let w = run_triton(Misbehaviour::TritonNoText).await;
    let kind = ErrorKind::BadResponse(Malformation::MissingOutput);
    assert_eq!(w.errors.get(&kind), Some(&20), "{:?}", w.errors);
    assert!(
        w.notes[0].text.contains("no text_output"),
        "{}",
        w.notes[0].text
    );
    let w = run_triton(Misbehaviour::TritonStatus).await;
    assert_eq!(
        w.errors.get(&ErrorKind::HttpStatus(500)),
        Some(&20),
        "{:?}",
        w.errors
    );
    assert!(
        w.notes[0].text.contains("out of memory"),
        "{}",
        w.notes[0].text
    );
}

async fn start(how: Misbehaviour) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, how));
    addr
}

async fn run(how: Misbehaviour) -> inferperf::measure::window::WindowStats {
    let addr = start(how).await.to_string();
    let results = common::profile(&[
        "-m",
        "chat",
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/chat/completions",
        "-u",
        &addr,
        "--streaming",
        "--concurrency-range",
        "2",
        "--request-count",
        "20",
        "--output-tokens-mean",
        "3",
        "--synthetic-input-tokens-mean",
        "4",
    ])
    .await;
    assert_eq!(results.len(), 1);
    results[0].merged.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_breaks_off_is_a_truncated_answer() {
    let w = run(Misbehaviour::BreakOff).await;
    let kind = ErrorKind::BadResponse(Malformation::Truncated);
    assert_eq!(w.errors.get(&kind), Some(&20), "{:?}", w.errors);
    assert_eq!(w.ok, 0);
    let note = &w.notes[0].text;
    assert!(
        note.contains("ended without data: [DONE], after 2 events"),
        "{note}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_that_is_not_json_is_an_unreadable_answer() {
    let w = run(Misbehaviour::Malformed).await;
    let kind = ErrorKind::BadResponse(Malformation::Unreadable);
    assert_eq!(w.errors.get(&kind), Some(&20), "{:?}", w.errors);
    assert!(w.notes[0].text.contains("not JSON"), "{}", w.notes[0].text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_event_is_a_stream_error() {
    let w = run(Misbehaviour::ErrorEvent).await;
    assert_eq!(w.errors.get(&ErrorKind::StreamError), Some(&20));
    assert!(w.notes[0].text.contains("overloaded"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_without_output_is_an_empty_answer() {
    let w = run(Misbehaviour::EmptyStream).await;
    let kind = ErrorKind::BadResponse(Malformation::Empty);
    assert_eq!(w.errors.get(&kind), Some(&20), "{:?}", w.errors);
    assert_eq!(w.ok, 0);
    assert!(w.tokens.is_none(), "no token figure from usage alone");
    let note = &w.notes[0].text;
    assert!(
        note.contains("without an event that carries output"),
        "{note}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_in_one_piece_is_one_answer_with_a_note() {
    let w = run(Misbehaviour::Unstreamed).await;
    assert_eq!((w.ok, w.error_count()), (20, 0));
    let tokens = w.tokens.as_ref().expect("token figures");
    assert_eq!(tokens.unstreamed, 20);
    assert_eq!(tokens.output_tokens.sum(), 60, "usage says 3 each");
    assert_eq!(tokens.input_tokens.sum(), 80, "usage says 4 each");
    assert_eq!(tokens.main_source(), TokenSource::Usage);
    assert_eq!(w.responses.sum(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_the_server_does_not_list_is_one_sentence() {
    let addr = start(Misbehaviour::BreakOff).await.to_string();
    let out = common::run_cli(&[
        "-m",
        "other",
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/chat/completions",
        "-u",
        &addr,
    ])
    .await;
    assert_eq!(out.status.code(), Some(3));
    let err = common::stderr(&out);
    assert!(
        err.contains("Model 'other' is not among the models the server lists at /v1/models (chat)"),
        "{err}"
    );
}
