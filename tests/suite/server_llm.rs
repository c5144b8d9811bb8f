//! The `llm` and `embeddings` kinds against the real embedded server, over its HTTP port
//! with a plain hyper client: whole chat and completions answers with their usage, sent
//! when the last token is made; streams whose first event comes at TTFT (plus the prompt's
//! prefill) and the rest one step apart, coalesced `tokens_per_event` to an event; slots
//! taken first-in first-out and a batch that decodes together; a client that leaves freeing
//! its slot; OpenAI's error objects; the model list; embeddings; KServe inference refused;
//! bad options refused with one sentence; and the server's own counts of what it served.

use crate::server_util;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::sync::Mutex;

use inferperf_server::{ModelDef, RunningServer};
use server_util::*;

/// The tests take turns so that they do not disturb each other's timing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

async fn post(server: &RunningServer, path: &str, body: Value) -> Answer {
    let http = Http::new(server.http_addr);
    let body = Bytes::from(body.to_string());
    http.send(Method::POST, path, body, None).await
}

impl Streamed {
    /// The content events: those with a choice whose finish_reason is null.
    fn content(&self) -> Vec<&Event> {
        (self.events.iter())
            .filter(|e| {
                let choice = e.data.as_ref().map(|d| &d["choices"][0]);
                choice.is_some_and(|c| c.is_object() && c["finish_reason"].is_null())
            })
            .collect()
    }

    fn ttft(&self) -> Duration {
        self.content()[0].at - self.sent
    }

    fn last_content(&self) -> Instant {
        self.content().last().unwrap().at
    }

    /// The text of the content events, each event's text in turn.
    fn texts(&self) -> Vec<String> {
        let text = |d: &Value| {
            let choice = &d["choices"][0];
            let text = choice["delta"]["content"].as_str();
            text.or(choice["text"].as_str()).unwrap().to_string()
        };
        (self.content().iter())
            .map(|e| text(e.data.as_ref().unwrap()))
            .collect()
    }

    fn gaps_ms(&self) -> Vec<f64> {
        let content = self.content();
        (content.windows(2))
            .map(|w| (w[1].at - w[0].at).as_secs_f64() * 1e3)
            .collect()
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_answers_come_when_the_last_token_is_made_with_their_usage() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["c=llm:ttft_ms=20,itl_ms=5"]).await;
    let messages = json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "how are you"},
    ]);
    let started = Instant::now();
    let body = json!({"model": "c", "messages": messages, "max_tokens": 8, "temperature": 0});
    let answer = post(&server, "/v1/chat/completions", body).await;
    let took = ms(started.elapsed());
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.content_type, "application/json");
    let a = answer.json();
    assert_eq!(a["object"], "chat.completion");
    assert!(a["id"].as_str().unwrap().starts_with("cmpl-"), "{a}");
    assert_eq!(a["model"], "c");
    assert!(a["created"].as_u64().unwrap() > 1_600_000_000);
    let choice = &a["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "tok ".repeat(8));
    assert_eq!(choice["finish_reason"], "length");
    let usage = json!({"prompt_tokens": 5, "completion_tokens": 8, "total_tokens": 13});
    assert_eq!(a["usage"], usage);
    // TTFT + 7 steps.
    assert!((55.0..85.0).contains(&took), "{took} ms");

    let body = json!({"model": "c", "prompt": ["a b", "c"], "max_completion_tokens": 3});
    let a = post(&server, "/v1/completions", body).await.json();
    assert_eq!(a["object"], "text_completion");
    assert_eq!(a["choices"][0]["text"], "tok tok tok ");
    assert_eq!(a["choices"][0]["finish_reason"], "length");
    assert_eq!(a["usage"]["prompt_tokens"], 3);
    assert_eq!(a["usage"]["completion_tokens"], 3);

    let c = counts(&server, "c").await;
    let expected = [
        ("requests", 2),
        ("completed", 2),
        ("streamed", 0),
        ("prompt_tokens", 8),
        ("completion_tokens", 11),
        ("events", 0),
        ("cancelled", 0),
        ("failed", 0),
    ];
    for (key, value) in expected {
        assert_eq!(c[key], value, "{key}: {c}");
    }
    // The statistics extension counts each answered request too.
    let stats = Http::new(server.http_addr).get("/v2/models/c/stats").await;
    let success = &stats.json()["model_stats"][0]["inference_stats"]["success"];
    assert_eq!(success["count"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_sends_each_event_on_time_then_the_final_usage_and_done_events() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["s=llm:ttft_ms=40,itl_ms=10,prefill_us_per_token=1000"]).await;
    let prompt = "one two three four five six seven eight nine ten";
    let body = json!({
        "model": "s",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 6,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let s = stream(server.http_addr, "/v1/chat/completions", body).await;
    assert_eq!(s.status, StatusCode::OK);
    assert_eq!(s.content_type, "text/event-stream");
    assert_eq!(s.texts(), vec!["tok ".to_string(); 6]);
    assert_eq!(words(&s.texts().concat()), 6);
    let first = s.content()[0].data.as_ref().unwrap();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    // 6 content events, the final one, the usage one and [DONE].
    assert_eq!(s.events.len(), 9, "{:?}", s.events);
    let last = s.events[6].data.as_ref().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    assert_eq!(last["choices"][0]["delta"]["content"], "");
    let usage = s.events[7].data.as_ref().unwrap();
    assert_eq!(usage["choices"], json!([]));
    let expected = json!({"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16});
    assert_eq!(usage["usage"], expected);
    assert!(s.events[8].data.is_none(), "[DONE] last");
    let ids: Vec<&Value> = (s.events.iter().filter_map(|e| e.data.as_ref()))
        .map(|d| &d["id"])
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");

    // TTFT = 40 ms + 10 prompt tokens × 1000 µs; then one event per 10 ms step.
    let ttft = ms(s.ttft());
    assert!((49.5..60.0).contains(&ttft), "TTFT {ttft} ms");
    let mut gaps = s.gaps_ms();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    gaps.sort_by(f64::total_cmp);
    assert!((9.0..11.5).contains(&mean), "{gaps:?}");
    assert!((8.5..12.0).contains(&gaps[gaps.len() / 2]), "{gaps:?}");
    // The last event never comes before TTFT + 5 steps.
    assert!(ms(s.last_content() - s.sent) >= 99.5);

    let c = counts(&server, "s").await;
    assert_eq!(
        (
            &c["streamed"],
            &c["events"],
            &c["completion_tokens"],
            &c["prompt_tokens"]
        ),
        (&json!(1), &json!(6), &json!(6), &json!(10)),
        "{c}"
    );

    // Without include_usage: no usage chunk; a completions stream has text chunks.
    let body = json!({"model": "s", "prompt": "hi", "max_tokens": 2, "stream": true});
    let s = stream(server.http_addr, "/v1/completions", body).await;
    assert_eq!(s.texts(), ["tok ", "tok "]);
    assert_eq!(s.events.len(), 4, "{:?}", s.events);
    let first = s.events[0].data.as_ref().unwrap();
    assert_eq!(first["object"], "text_completion");
    let last = s.events[2].data.as_ref().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    assert_eq!(last["choices"][0]["text"], "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_per_event_coalesces_tokens_and_usage_still_counts_them() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["k=llm:ttft_ms=10,itl_ms=8,tokens_per_event=4,output_tokens=10"]).await;
    let body = json!({"model": "k", "prompt": "x y", "stream": true,
                      "stream_options": {"include_usage": true}});
    let s = stream(server.http_addr, "/v1/completions", body).await;
    // ceil(10 / 4) = 3 events of 4, 4 and 2 tokens.
    let sizes: Vec<usize> = s.texts().iter().map(|t| words(t)).collect();
    assert_eq!(sizes, [4, 4, 2]);
    let usage = &s.events[4].data.as_ref().unwrap()["usage"];
    assert_eq!(usage["completion_tokens"], 10);
    // Its natural end comes before any limit: finish "stop".
    let last = s.events[3].data.as_ref().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    // One step per event: the last comes 2 steps after the first, TTFT + 16 ms after the
    // request (never sooner; later only when the machine stalls).
    let last = ms(s.last_content() - s.sent);
    assert!(
        (25.5..45.0).contains(&last),
        "{last} ms, gaps {:?}",
        s.gaps_ms()
    );

    // A whole answer comes with its last event: TTFT + 2 steps.
    let started = Instant::now();
    let body = json!({"model": "k", "prompt": "x", "max_tokens": 9, "ignore_eos": true});
    let a = post(&server, "/v1/completions", body).await.json();
    let took = ms(started.elapsed());
    assert_eq!(a["usage"]["completion_tokens"], 9);
    assert_eq!(a["choices"][0]["finish_reason"], "length");
    assert!((26.0..50.0).contains(&took), "{took} ms");

    let c = counts(&server, "k").await;
    assert_eq!(
        (&c["events"], &c["completion_tokens"]),
        (&json!(3), &json!(19))
    );
}

/// Streams `n` requests at once; their answers in the order they were sent.
async fn streams_at_once(addr: SocketAddr, n: usize, tokens: u32) -> Vec<Streamed> {
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let body = json!({"model": "b", "prompt": format!("p{i}"), "max_tokens": tokens,
                              "stream": true});
            tokio::spawn(async move { stream(addr, "/v1/completions", body).await })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.push(task.await.unwrap());
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_decodes_together_and_waiting_requests_take_slots_as_they_free() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["b=llm:ttft_ms=20,itl_ms=10,instances=1,max_batch=4"]).await;
    // Warm the client and server up.
    stream(
        server.http_addr,
        "/v1/completions",
        json!({"model": "b", "prompt": "w", "max_tokens": 1, "stream": true}),
    )
    .await;

    let one = &streams_at_once(server.http_addr, 1, 10).await[0];
    let alone = one.last_content() - one.sent;
    let four = streams_at_once(server.http_addr, 4, 10).await;
    let first_sent = four.iter().map(|s| s.sent).min().unwrap();
    let together = four.iter().map(|s| s.last_content()).max().unwrap() - first_sent;
    // 20 ms + 9 steps each way; a late arrival joins the next step boundary.
    assert!(ms(alone) >= 109.5, "{alone:?}");
    assert!(
        ms(together) < ms(alone) + 25.0,
        "4 streams took {together:?}, one took {alone:?}"
    );

    let eight = streams_at_once(server.http_addr, 8, 5).await;
    let mut by_ttft: Vec<&Streamed> = eight.iter().collect();
    by_ttft.sort_by_key(|s| s.content()[0].at);
    let (early, late) = by_ttft.split_at(4);
    for s in early {
        assert!(ms(s.ttft()) < 40.0, "{:?}", s.ttft());
    }
    // A slot frees with a sequence's last token; only then does a waiting request's
    // 20 ms prefill start (measured here with the client's delays on both ends).
    let first_free = early.iter().map(|s| s.last_content()).min().unwrap();
    for s in late {
        let first = s.content()[0].at;
        assert!(
            first >= first_free + Duration::from_millis(12),
            "a waiting request started {:?} after the first slot freed",
            first.saturating_duration_since(first_free)
        );
        assert!(ms(s.ttft()) > 70.0, "{:?}", s.ttft());
        assert_eq!(s.texts().len(), 5);
    }
    let c = counts(&server, "b").await;
    assert_eq!(c["completed"], 1 + 1 + 4 + 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_frees_its_slot_or_its_place_in_the_queue() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["x=llm:ttft_ms=150,itl_ms=5,max_batch=1"]).await;
    let addr = server.http_addr;
    let long = json!({"model": "x", "prompt": "p", "max_tokens": 1000, "stream": true});
    let holder = tokio::spawn(stream_n(addr, "/v1/completions", long, Some(2)));
    tokio::time::sleep(Duration::from_millis(30)).await;
    // A second request waits for the one slot, and leaves.
    let short = json!({"model": "x", "prompt": "p", "max_tokens": 2});
    let waited = tokio::time::timeout(
        Duration::from_millis(50),
        post(&server, "/v1/completions", short.clone()),
    );
    assert!(waited.await.is_err(), "no slot was free");
    // The holder leaves after two events; its slot frees at its next step, not after its
    // 1000 tokens, and goes to the next request that is still there.
    let left = holder.await.unwrap();
    assert_eq!(left.events.len(), 2);
    drop(left);
    let started = Instant::now();
    let answer = post(&server, "/v1/completions", short).await;
    assert_eq!(answer.status, StatusCode::OK);
    let took = ms(started.elapsed());
    assert!((150.0..290.0).contains(&took), "{took} ms");
    let c = counts(&server, "x").await;
    assert_eq!(
        (&c["cancelled"], &c["completed"]),
        (&json!(2), &json!(1)),
        "{c}"
    );
}

/// The error object of an answer, checked to have OpenAI's form.
fn openai_error(answer: &Answer, status: StatusCode) -> Value {
    assert_eq!(answer.status, status, "{:?}", answer.body);
    let error = answer.json()["error"].clone();
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{error}"
    );
    assert_eq!(error["type"], "invalid_request_error");
    error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_models_and_bad_requests_get_openai_errors() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&[
        "c=llm:ttft_ms=1,itl_ms=1",
        "e=embeddings",
        "identity=identity",
    ])
    .await;
    let chat =
        |model: &str| json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
    for (path, body) in [
        ("/v1/chat/completions", chat("nope")),
        ("/v1/chat/completions", chat("identity")),
        ("/v1/chat/completions", chat("e")),
        ("/v1/completions", json!({"model": "nope", "prompt": "x"})),
        ("/v1/embeddings", json!({"model": "c", "input": "x"})),
    ] {
        let answer = post(&server, path, body.clone()).await;
        let error = openai_error(&answer, StatusCode::NOT_FOUND);
        assert_eq!(error["code"], "model_not_found", "{path} {body}");
    }
    let http = Http::new(server.http_addr);
    for (path, body) in [
        ("/v1/chat/completions", "{\"model\": "),
        ("/v1/chat/completions", "[1, 2]"),
        (
            "/v1/completions",
            "{\"model\": \"c\", \"prompt\": \"x\", \"max_tokens\": \"many\"}",
        ),
        ("/v1/embeddings", "not json"),
    ] {
        let answer = http.send(Method::POST, path, Bytes::from(body), None).await;
        openai_error(&answer, StatusCode::BAD_REQUEST);
    }
    for body in [
        json!({"model": "c", "prompt": "x"}),
        json!({"model": "c", "messages": [], "max_tokens": 0}),
        json!({"model": "c", "messages": [], "n": 3}),
    ] {
        let answer = post(&server, "/v1/chat/completions", body.clone()).await;
        let error = openai_error(&answer, StatusCode::BAD_REQUEST);
        assert!(
            error["message"].as_str().unwrap().contains("model 'c'"),
            "{error}"
        );
    }
    let c = counts(&server, "c").await;
    assert_eq!(
        (&c["failed"], &c["requests"]),
        (&json!(3), &json!(0)),
        "{c}"
    );
    let answer = http.get("/v1/chat/completions").await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    let answer = http.get("/v1/nothing").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_list_names_the_openai_models() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["chat=llm", "vec=embeddings", "identity=identity"]).await;
    let http = Http::new(server.http_addr);
    let list = http.get("/v1/models").await;
    assert_eq!(list.status, StatusCode::OK);
    let model =
        |id: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": "inferperf"});
    let expected = json!({"object": "list", "data": [model("chat"), model("vec")]});
    assert_eq!(list.json(), expected);
    assert_eq!(http.get("/v1/models/chat").await.json(), model("chat"));
    let answer = http.get("/v1/models/identity").await;
    assert_eq!(
        openai_error(&answer, StatusCode::NOT_FOUND)["code"],
        "model_not_found"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_answer_one_unit_vector_per_input_with_usage() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["e=embeddings:dims=8,ms=20"]).await;
    let started = Instant::now();
    let body = json!({"model": "e", "input": ["the quick fox", "jumps"]});
    let answer = post(&server, "/v1/embeddings", body).await;
    assert!(started.elapsed() >= Duration::from_millis(20));
    assert_eq!(answer.status, StatusCode::OK);
    let a = answer.json();
    assert_eq!(a["object"], "list");
    assert_eq!(a["model"], "e");
    assert_eq!(a["usage"], json!({"prompt_tokens": 4, "total_tokens": 4}));
    let data = a["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    for (i, item) in data.iter().enumerate() {
        assert_eq!(
            (&item["object"], &item["index"]),
            (&json!("embedding"), &json!(i))
        );
        let vector: Vec<f64> = serde_json::from_value(item["embedding"].clone()).unwrap();
        assert_eq!(vector.len(), 8);
        let norm: f64 = vector.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-4, "{vector:?}");
    }
    let one = post(
        &server,
        "/v1/embeddings",
        json!({"model": "e", "input": "jumps"}),
    )
    .await;
    assert_eq!(one.json()["data"][0]["embedding"], data[1]["embedding"]);
    let c = counts(&server, "e").await;
    assert_eq!(
        (&c["requests"], &c["inputs"], &c["prompt_tokens"]),
        (&json!(2), &json!(3), &json!(5))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kserve_describes_an_llm_model_but_sends_inference_to_the_openai_routes() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&["c=llm"]).await;
    let http = Http::new(server.http_addr);
    let meta = http.get("/v2/models/c").await.json();
    assert_eq!(meta["inputs"][0]["name"], "text_input");
    assert_eq!(meta["outputs"][0]["datatype"], "BYTES");
    let answer = http.infer("c", &request(vec![fp32(1, &[16])])).await;
    assert_eq!(answer.status, StatusCode::NOT_IMPLEMENTED);
    let message = answer.json()["error"].as_str().unwrap().to_string();
    assert!(message.contains("/v1/chat/completions"), "{message}");
    let mut client = grpc(&server).await;
    let msg = inferperf_wire::to_grpc_request("c", "", &request(vec![fp32(1, &[16])]));
    let status = client.model_infer(msg).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    assert!(status.message().contains("/v1/"), "{}", status.message());
}

#[tokio::test]
async fn bad_llm_options_are_refused_with_one_sentence() {
    let _turn = ONE_AT_A_TIME.lock().await;
    for (text, names) in [
        ("x=llm:itl_ms=-1", "itl_ms=-1"),
        ("x=llm:ttft_ms=fast", "ttft_ms=fast"),
        ("x=llm:tokens_per_event=0", "tokens_per_event=0"),
        ("x=llm:max_batch=0", "max_batch=0"),
        ("x=llm:shape=4", "'shape'"),
        ("x=embeddings:dims=0", "dims=0"),
    ] {
        let err = text.parse::<ModelDef>().unwrap_err();
        assert!(err.contains(names) && !err.contains('\n'), "{text}: {err}");
    }
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args([
            "serve",
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            "--model",
            "x=llm:itl_ms=-1",
        ])
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("itl_ms=-1"), "{stderr}");
}
