//! Triton's generate extension on the embedded server's `llm` kind, over its HTTP port
//! with a plain hyper client, so that GenAI-Perf's `generate` type has a truth to be
//! checked against: `POST /v2/models/M/generate` answers `{"model_name", "model_version",
//! "text_output"}` when the last token is made; `generate_stream` sends one event per step
//! with that step's text, the first at TTFT (plus the prompt's prefill) and the rest one
//! step apart, and no `data: [DONE]`; the version route; and Triton's `{"error": "..."}`
//! for a model of another kind, an unknown model or version, a GET and a bad body.

use crate::server_util;

use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::json;
use tokio::sync::Mutex;

use inferperf_server::RunningServer;
use server_util::*;

/// The tests take turns so that they do not disturb each other's timing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn post(server: &RunningServer, path: &str, body: &str) -> Answer {
    let http = Http::new(server.http_addr);
    let body = Bytes::from(body.to_string());
    http.send(Method::POST, path, body, None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_answer_is_the_text_output_when_the_last_token_is_made() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["c=llm:ttft_ms=20,itl_ms=5"]).await;
    let started = Instant::now();
    let body =
        r#"{"text_input": "how are you", "max_tokens": 8, "stream": false, "temperature": 0}"#;
    let answer = post(&server, "/v2/models/c/generate", body).await;
    let took = ms(started.elapsed());
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(answer.content_type, "application/json");
    let expected =
        json!({"model_name": "c", "model_version": "1", "text_output": "tok ".repeat(8)});
    assert_eq!(answer.json(), expected);
    // TTFT + 7 steps.
    assert!((55.0..85.0).contains(&took), "{took} ms");
    // The version route, and the length in `parameters`.
    let body = r#"{"text_input": "a b", "parameters": {"max_tokens": 3}}"#;
    let answer = post(&server, "/v2/models/c/versions/1/generate", body).await;
    assert_eq!(answer.json()["text_output"], "tok tok tok ");
    let c = counts(&server, "c").await;
    let expected = [
        ("requests", 2),
        ("streamed", 0),
        ("prompt_tokens", 5),
        ("completion_tokens", 11),
    ];
    for (key, value) in expected {
        assert_eq!(c[key], value, "{key}: {c}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_sends_each_steps_text_on_time_and_ends_with_the_body() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&[
        "s=llm:ttft_ms=40,itl_ms=10,prefill_us_per_token=1000",
        "p=llm:ttft_ms=1,itl_ms=1,tokens_per_event=4",
    ])
    .await;
    let prompt = "one two three four five six seven eight nine ten";
    let body = json!({"text_input": prompt, "max_tokens": 6, "stream": true});
    let s = stream(server.http_addr, "/v2/models/s/generate_stream", body).await;
    assert_eq!(s.status, StatusCode::OK);
    assert_eq!(s.content_type, "text/event-stream");
    // Six steps, and nothing after them (no [DONE], no final event).
    assert_eq!(s.events.len(), 6);
    for event in &s.events {
        let expected = json!({"model_name": "s", "model_version": "1", "text_output": "tok "});
        assert_eq!(event.data.as_ref(), Some(&expected));
    }
    // TTFT = 40 ms + 10 prompt tokens × 1000 µs; then one event per 10 ms step.
    let ttft = ms(s.events[0].at - s.sent);
    assert!((49.5..60.0).contains(&ttft), "TTFT {ttft} ms");
    let gaps: Vec<f64> = (s.events.windows(2))
        .map(|w| ms(w[1].at - w[0].at))
        .collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!((9.0..11.5).contains(&mean), "{gaps:?}");
    let c = counts(&server, "s").await;
    assert_eq!(
        (&c["streamed"], &c["events"], &c["prompt_tokens"]),
        (&json!(1), &json!(6), &json!(10)),
        "{c}"
    );
    // tokens_per_event coalesces the steps' text.
    let body = json!({"text_input": "x", "max_tokens": 10});
    let s = stream(
        server.http_addr,
        "/v2/models/p/versions/1/generate_stream",
        body,
    )
    .await;
    assert_eq!(s.status, StatusCode::OK);
    let texts: Vec<&str> = (s.events.iter())
        .map(|e| e.data.as_ref().unwrap()["text_output"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["tok ".repeat(4), "tok ".repeat(4), "tok ".repeat(2)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_kinds_unknown_models_and_bad_bodies_get_tritons_errors() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&[
        "c=llm:ttft_ms=1,itl_ms=1",
        "identity=identity",
        "e=embeddings",
    ])
    .await;
    let good = r#"{"text_input": "hi", "max_tokens": 1}"#;
    let cases = [
        (
            "/v2/models/identity/generate",
            good,
            StatusCode::BAD_REQUEST,
            "serve llm models",
        ),
        (
            "/v2/models/e/generate_stream",
            good,
            StatusCode::BAD_REQUEST,
            "of kind embeddings",
        ),
        (
            "/v2/models/nope/generate",
            good,
            StatusCode::NOT_FOUND,
            "nope",
        ),
        (
            "/v2/models/c/versions/2/generate",
            good,
            StatusCode::NOT_FOUND,
            "c",
        ),
        (
            "/v2/models/c/generate",
            r#"{"prompt": "hi"}"#,
            StatusCode::BAD_REQUEST,
            "text_input",
        ),
        (
            "/v2/models/c/generate",
            "not json",
            StatusCode::BAD_REQUEST,
            "not JSON",
        ),
        (
            "/v2/models/c/generate",
            r#"{"text_input": "hi", "max_tokens": 0}"#,
            StatusCode::BAD_REQUEST,
            "out of range",
        ),
        (
            "/v2/models/c/generate_stream",
            r#"{"text_input": "hi", "max_tokens": "many"}"#,
            StatusCode::BAD_REQUEST,
            "whole number",
        ),
    ];
    for (path, body, status, says) in cases {
        let answer = post(&server, path, body).await;
        assert_eq!(answer.status, status, "{path} {body}");
        let message = answer.json()["error"].as_str().unwrap().to_string();
        assert!(message.contains(says), "{path} {body}: {message}");
    }
    let answer = Http::new(server.http_addr)
        .get("/v2/models/c/generate")
        .await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(answer.json()["error"].is_string());
    // KServe's routes of the same prefix are as they were.
    let meta = Http::new(server.http_addr).get("/v2/models/identity").await;
    assert_eq!(meta.status, StatusCode::OK);
    assert_eq!(counts(&server, "c").await["requests"], 0);
}
