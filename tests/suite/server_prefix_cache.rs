//! The `llm` kind's prefix cache and its `/metrics` against the real embedded server, so that
//! a client's cache and queue figures have a known truth: a shared prefix cached block by
//! block and the prefill it saves, least recently used blocks evicted (and all of them on
//! `POST /reset_prefix_cache`), vLLM's metric names
//! with the values of the requests sent (on the HTTP port and the metrics port), the
//! requests running and waiting when the batch is full, a client that leaves counted as
//! abandoned and its slot given to a waiting request, and prompts counted with a
//! `tokenizer=PATH` as the client counts them.

use crate::server_util;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::sync::Mutex;

use inferperf_server::RunningServer;
use server_util::*;

/// The timed tests take turns so that they do not disturb each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// A streamed answer's facts: when its first event came, its usage chunk, the events read.
#[derive(Debug)]
struct Answered {
    ttft: Duration,
    usage: Option<Value>,
    events: usize,
}

/// Posts a streaming request and reads it to its end (server_util's reader), or leaves
/// after `stop_after` events.
async fn stream(addr: SocketAddr, path: &str, body: Value, stop_after: Option<usize>) -> Answered {
    let streamed = stream_n(addr, path, body, stop_after).await;
    assert_eq!(streamed.status, StatusCode::OK);
    let first = streamed.events.first().expect("an event").at;
    let data = streamed.events.iter().rev().filter_map(|e| e.data.as_ref());
    let usage = data.map(|d| &d["usage"]).find(|u| !u.is_null()).cloned();
    Answered {
        ttft: first - streamed.sent,
        usage,
        events: streamed.events.len(),
    }
}

async fn post(server: &RunningServer, path: &str, body: Value) -> Value {
    let http = Http::new(server.http_addr);
    let answer = (http.send(Method::POST, path, Bytes::from(body.to_string()), None)).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    answer.json()
}

/// `n` words starting with `tag`: `tag0 tag1 …`, each one token.
fn words(tag: &str, n: usize) -> String {
    let words: Vec<String> = (0..n).map(|i| format!("{tag}{i}")).collect();
    words.join(" ")
}

/// The metrics page of the HTTP port.
async fn metrics(server: &RunningServer) -> String {
    let answer = Http::new(server.http_addr).get("/metrics").await;
    assert_eq!(answer.status, StatusCode::OK);
    String::from_utf8(answer.body.to_vec()).unwrap()
}

/// The value of `name{model_name="model"…}` on the page (the first such line).
fn metric(page: &str, name: &str, labels: &str) -> f64 {
    let start = format!("{name}{{{labels}}} ");
    let line = page.lines().find(|l| l.starts_with(&start));
    let line = line.unwrap_or_else(|| panic!("no {start:?} in\n{page}"));
    line[start.len()..].parse().unwrap()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn cached(usage: &Value) -> u64 {
    usage["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or_else(|| panic!("no cached_tokens in {usage}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_prefix_is_cached_by_blocks_and_saves_its_prefill() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let model = "p=llm:ttft_ms=10,itl_ms=2,prefill_us_per_token=1000,prefix_cache=4096";
    let server = start(&[model]).await;
    let prefix = words("shared", 64);
    let ask = |suffix: &str| {
        json!({"model": "p", "prompt": format!("{prefix} {suffix}"), "max_tokens": 2,
               "stream": true, "stream_options": {"include_usage": true}})
    };
    let addr = server.http_addr;
    let first = stream(addr, "/v1/completions", ask(&words("one", 10)), None).await;
    let second = stream(addr, "/v1/completions", ask(&words("two", 10)), None).await;
    let (u1, u2) = (first.usage.unwrap(), second.usage.unwrap());
    assert_eq!((u1["prompt_tokens"].as_u64(), cached(&u1)), (Some(74), 0));
    assert_eq!((u2["prompt_tokens"].as_u64(), cached(&u2)), (Some(74), 64));
    // TTFT = 10 ms + 1 ms × uncached tokens: 84 ms, then 20 ms.
    let (t1, t2) = (ms(first.ttft), ms(second.ttft));
    assert!((83.5..130.0).contains(&t1), "first TTFT {t1} ms");
    assert!((19.5..60.0).contains(&t2), "second TTFT {t2} ms");
    assert!((40.0..90.0).contains(&(t1 - t2)), "saved {} ms", t1 - t2);

    // A chat answer in full: 50 of its words are the prefix, three whole blocks (48).
    let chat = json!({"model": "p", "max_tokens": 1, "messages": [
        {"role": "user", "content": format!("{} other", words("shared", 50))}]});
    let whole = post(&server, "/v1/chat/completions", chat).await;
    assert_eq!(cached(&whole["usage"]), 48, "{whole}");
    assert_eq!(whole["usage"]["prompt_tokens"], 51);

    // The page counts what was sent: every prompt token queried, the cached ones hit.
    for page in [metrics(&server).await, metrics_port_page(&server).await] {
        let label = "model_name=\"p\"";
        assert_eq!(
            metric(&page, "vllm:prefix_cache_queries_total", label),
            199.0
        );
        assert_eq!(metric(&page, "vllm:prefix_cache_hits_total", label), 112.0);
        assert_eq!(metric(&page, "vllm:prompt_tokens_total", label), 199.0);
        assert_eq!(metric(&page, "vllm:generation_tokens_total", label), 5.0);
        let length = "model_name=\"p\",finished_reason=\"length\"";
        assert_eq!(metric(&page, "vllm:request_success_total", length), 3.0);
        assert_eq!(metric(&page, "vllm:num_requests_running", label), 0.0);
        assert_eq!(metric(&page, "vllm:num_requests_waiting", label), 0.0);
        // The shared prefix's 4 blocks (every other block was partial) of the 256 held.
        let usage = metric(&page, "vllm:kv_cache_usage_perc", label);
        assert!((usage - 4.0 / 256.0).abs() < 1e-9, "{usage}");
        for family in ["vllm:prefix_cache_hits_total", "vllm:num_requests_waiting"] {
            assert!(page.contains(&format!("# HELP {family} ")), "{family}");
        }
        assert!(page.contains("# TYPE vllm:prefix_cache_hits_total counter"));
        assert!(page.contains("# TYPE vllm:num_requests_waiting gauge"));
        assert!(
            page.contains("nv_inference_count{model=\"p\""),
            "Triton's stay"
        );
    }
}

async fn metrics_port_page(server: &RunningServer) -> String {
    let metrics = Http::new(server.metrics_addr.expect("a metrics port"));
    let answer = metrics.get("/metrics").await;
    String::from_utf8(answer.body.to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_cache_evicts_the_least_recently_used_blocks() {
    let _turn = ONE_AT_A_TIME.lock().await;
    // Room for four blocks of 16.
    let server = start(&["l=llm:ttft_ms=1,itl_ms=1,prefix_cache=64,block=16"]).await;
    let send = |prompt: String| {
        let body = json!({"model": "l", "prompt": prompt, "max_tokens": 1});
        let server = &server;
        async move { cached(&post(server, "/v1/completions", body).await["usage"]) }
    };
    let (a, b) = (words("a", 64), words("b", 32));
    assert_eq!(send(a.clone()).await, 0);
    assert_eq!(send(a.clone()).await, 64);
    // b's two blocks push out a's two last ones; a's first two stay.
    assert_eq!(send(b.clone()).await, 0);
    assert_eq!(send(a.clone()).await, 32);
    // 64 new tokens evict everything before them.
    assert_eq!(send(words("c", 64)).await, 0);
    assert_eq!(send(b).await, 0);
    let page = metrics(&server).await;
    let usage = metric(&page, "vllm:kv_cache_usage_perc", "model_name=\"l\"");
    assert_eq!(usage, 1.0);
    // vLLM's reset (AIPerf's --reset-kv-cache): nothing held, so nothing hits.
    post(&server, "/reset_prefix_cache", json!({})).await;
    let page = metrics(&server).await;
    assert_eq!(
        metric(&page, "vllm:kv_cache_usage_perc", "model_name=\"l\""),
        0.0
    );
    assert_eq!(send(words("c", 64)).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_batch_shows_requests_running_and_waiting() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["w=llm:ttft_ms=5,itl_ms=20,max_batch=2,instances=1"]).await;
    let addr = server.http_addr;
    let body = json!({"model": "w", "prompt": "x", "max_tokens": 40, "stream": true});
    let streams: Vec<_> = (0..5)
        .map(|_| tokio::spawn(stream(addr, "/v1/completions", body.clone(), None)))
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let page = metrics(&server).await;
    let label = "model_name=\"w\"";
    assert_eq!(metric(&page, "vllm:num_requests_running", label), 2.0);
    assert_eq!(metric(&page, "vllm:num_requests_waiting", label), 3.0);
    for s in streams {
        s.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_is_counted_and_its_slot_goes_to_a_waiting_request() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["x=llm:ttft_ms=20,itl_ms=5,max_batch=1"]).await;
    let addr = server.http_addr;
    // 1000 tokens hold the one slot for 5 s unless the client leaves.
    let long = json!({"model": "x", "prompt": "p", "max_tokens": 1000, "stream": true});
    let holder = tokio::spawn(stream(addr, "/v1/completions", long, Some(20)));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let short = json!({"model": "x", "prompt": "q", "max_tokens": 2, "stream": true});
    let waiting = tokio::spawn(stream(addr, "/v1/completions", short, None));
    let label = "model_name=\"x\"";
    // Seen waiting while the holder streams (on a busy machine it may take a while to
    // arrive); the holder leaves after 20 events (about 115 ms), the waiting one starts then.
    let mut waiting_seen = 0.0;
    for _ in 0..40 {
        let page = metrics(&server).await;
        waiting_seen = metric(&page, "vllm:num_requests_waiting", label);
        if waiting_seen == 1.0 || holder.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(waiting_seen, 1.0);
    let left = holder.await.unwrap();
    assert_eq!(left.events, 20);
    let served = waiting.await.unwrap();
    let ttft = ms(served.ttft);
    assert!((30.0..400.0).contains(&ttft), "waited {ttft} ms, not 5 s");
    let page = metrics(&server).await;
    assert_eq!(
        metric(&page, "inferperf:requests_abandoned_total", label),
        1.0
    );
    let abort = "model_name=\"x\",finished_reason=\"abort\"";
    assert_eq!(metric(&page, "vllm:request_success_total", abort), 1.0);
    assert_eq!(metric(&page, "vllm:num_requests_running", label), 0.0);
}

/// A tokenizer.json that splits words and punctuation apart (`Whitespace`), so its count
/// differs from the server's word count; a few words have ids of their own.
fn punctuation_tokenizer(dir: &Path) -> PathBuf {
    let vocab = json!({"[UNK]": 0, "hello": 1, ",": 2, "world": 3, "!": 4, "a": 5, "-": 6});
    let json = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    });
    let file = dir.join("tokenizer.json");
    std::fs::write(&file, json.to_string()).unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokenizer_counts_prompts_as_the_client_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = punctuation_tokenizer(dir.path());
    let path = file.to_str().unwrap();
    let model = format!("t=llm:ttft_ms=1,itl_ms=1,tokenizer={path},prefix_cache=1024");
    let server = start(&[model.as_str()]).await;
    let client = inferperf::data::tokenizer::load(path, None).unwrap();
    let text = "hello, world! a-b ".repeat(6);
    let expected = client.count(&text).unwrap();
    assert_eq!(expected, 42, "7 tokens a piece, 3 words");
    let body = json!({"model": "t", "messages": [{"role": "user", "content": text}],
                      "max_tokens": 1});
    let first = post(&server, "/v1/chat/completions", body.clone()).await;
    assert_eq!(first["usage"]["prompt_tokens"], expected);
    assert_eq!(cached(&first["usage"]), 0);
    // The blocks are of tokens: 42 tokens are two whole blocks of 16.
    let again = post(&server, "/v1/chat/completions", body).await;
    assert_eq!(cached(&again["usage"]), 32);
    // vLLM's /tokenize counts with the model's tokenizer when it names the model.
    let counted = post(
        &server,
        "/tokenize",
        json!({"model": "t", "prompt": "hello, b"}),
    )
    .await;
    assert_eq!(
        (&counted["count"], &counted["tokens"]),
        (&json!(3), &json!([1, 2, 0]))
    );
    let words = post(&server, "/tokenize", json!({"prompt": "hello, b"})).await;
    assert_eq!(words["count"], 2);
}
