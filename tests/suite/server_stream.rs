//! The decoupled `stream` kind against the real server: over gRPC `ModelStreamInfer` each
//! request gets its responses on time and as they are produced, flagged with
//! `triton_final_response`, then an empty final one; requests in flight on one stream all
//! complete; instances bound how many streams run at once; unary inference is refused as
//! Triton refuses it; the configuration says decoupled; and `response_stats` counts each
//! response under its index, over gRPC and HTTP alike.

use crate::server_util;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Mutex;

use inferperf_server::InferError;
use inferperf_wire as wire;
use inferperf_wire::proto::{ModelConfigRequest, ModelInferResponse};
use server_util::*;

/// Timing tests take turns so that they do not measure each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

const STREAM: &str = "s=stream:responses=5,first_ms=10,interval_ms=4";

/// When each answer of one request arrived, and the answers.
struct Received {
    at: Vec<Instant>,
    answers: Vec<ModelInferResponse>,
}

/// Reads one request's answers up to its final one.
async fn receive(stream: &mut GrpcStream) -> Received {
    let mut received = Received {
        at: Vec::new(),
        answers: Vec::new(),
    };
    loop {
        let answer = stream.next().await;
        received.at.push(Instant::now());
        assert_eq!(answer.error_message, "", "{answer:?}");
        let response = answer.infer_response.unwrap();
        let last = final_flag(&response) == Some(true);
        received.answers.push(response);
        if last {
            return received;
        }
    }
}

/// Five responses with OUTPUT0 = INPUT0 flagged not final, then an empty final one, all
/// with the request's id.
fn check_answers(answers: &[ModelInferResponse], id: &str, input: &wire::Tensor) {
    let flags: Vec<Option<bool>> = answers.iter().map(final_flag).collect();
    let mut expected = vec![Some(false); 5];
    expected.push(Some(true));
    assert_eq!(flags, expected, "{id}");
    for answer in &answers[..5] {
        let response = wire::from_grpc_response(answer.clone()).unwrap();
        assert_eq!(response.id, id);
        assert_eq!(response.outputs.len(), 1);
        let output = &response.outputs[0];
        assert_eq!(output.name, "OUTPUT0");
        assert_eq!((&output.shape, &output.data), (&input.shape, &input.data));
    }
    let last = &answers[5];
    assert_eq!(last.id, id);
    assert!(last.outputs.is_empty() && last.raw_output_contents.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_streams_timed_responses_then_an_empty_final_one() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&[STREAM]).await;
    let mut stream = GrpcStream::open(&mut grpc(&server).await).await;
    let input = fp32(1, &[16]);
    let (mut firsts, mut gaps, mut spans) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..12 {
        let id = format!("req-{i}");
        let sent = Instant::now();
        stream.send("s", &id, &request(vec![input.clone()])).await;
        let received = receive(&mut stream).await;
        check_answers(&received.answers, &id, &input);
        firsts.push(received.at[0] - sent);
        gaps.extend(received.at[..5].windows(2).map(|w| w[1] - w[0]));
        spans.push(received.at[4] - received.at[0]);
    }
    let (first, gap, span) = (median_ms(firsts), median_ms(gaps), median_ms(spans));
    eprintln!("median first response {first:.2} ms, gap {gap:.2} ms, first to fifth {span:.2} ms");
    assert!(
        (9.5..30.0).contains(&first),
        "first response after {first:.2} ms"
    );
    assert!((3.5..12.0).contains(&gap), "gap {gap:.2} ms");
    // Delivered as produced: the fifth arrives about 4 × 4 ms after the first.
    assert!(span >= 14.0, "first to fifth {span:.2} ms");
    // An open stream would hold the graceful shutdown for its whole grace period.
    drop(stream);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_on_one_stream_all_complete_in_order() {
    let server = start(&["s=stream:responses=5,first_ms=10,interval_ms=4,instances=2"]).await;
    let mut stream = GrpcStream::open(&mut grpc(&server).await).await;
    let inputs = [fp32(1, &[16]), fp32(2, &[16])];
    for (id, input) in ["a", "b"].iter().zip(&inputs) {
        stream.send("s", id, &request(vec![input.clone()])).await;
    }
    let mut by_id: HashMap<String, Vec<ModelInferResponse>> = HashMap::new();
    let mut order = Vec::new();
    while by_id.values().map(|a| a.len()).sum::<usize>() < 12 {
        let answer = stream.next().await;
        assert_eq!(answer.error_message, "");
        let response = answer.infer_response.unwrap();
        order.push(response.id.clone());
        by_id.entry(response.id.clone()).or_default().push(response);
    }
    check_answers(&by_id["a"], "a", &inputs[0]);
    check_answers(&by_id["b"], "b", &inputs[1]);
    // Two instances run both at once, so their answers interleave.
    let first_b = order.iter().position(|id| id == "b").unwrap();
    let last_a = order.iter().rposition(|id| id == "a").unwrap();
    eprintln!("answer order: {}", order.join(""));
    assert!(first_b < last_a, "{order:?}");
    // An open stream would hold the graceful shutdown for its whole grace period.
    drop(stream);
    server.shutdown().await;
}

/// Streams completed per second with two streams kept busy for `secs`.
async fn streams_per_second(server: &inferperf_server::RunningServer, model: &str) -> f64 {
    let client = grpc(server).await;
    let model = model.to_string();
    let driven = drive(2, Duration::from_secs(2), move || {
        let (mut client, model) = (client.clone(), model.clone());
        async move {
            let mut stream = GrpcStream::open(&mut client).await;
            stream
                .send(&model, "x", &request(vec![fp32(1, &[16])]))
                .await;
            receive(&mut stream).await.answers.len() == 6
        }
    })
    .await;
    assert_eq!(driven.errors, 0);
    driven.ok as f64 / driven.elapsed.as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_bound_how_many_streams_run_at_once() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&[
        "one=stream:responses=5,first_ms=10,interval_ms=4,instances=1",
        "two=stream:responses=5,first_ms=10,interval_ms=4,instances=2",
    ])
    .await;
    // Each stream holds an instance for 10 + 4 × 4 = 26 ms.
    let one = streams_per_second(&server, "one").await;
    let two = streams_per_second(&server, "two").await;
    eprintln!(
        "2 in flight: {one:.1} streams/s with 1 instance, {two:.1} with 2 (ideal 38.5, 76.9)"
    );
    assert!(one <= 1000.0 / 26.0 * 1.05, "one instance: {one:.1}/s");
    assert!(
        two >= one * 1.5,
        "two instances: {two:.1}/s beside {one:.1}/s"
    );
    let mut client = grpc(&server).await;
    let queued = grpc_stats(&mut client, "one").await;
    let q = queued.inference_stats.unwrap().queue.unwrap();
    let queue_ms = q.ns as f64 / q.count as f64 / 1e6;
    eprintln!("one instance: mean queue {queue_ms:.1} ms");
    assert!(queue_ms >= 15.0, "the second stream waits for the first");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_inference_on_a_decoupled_model_is_refused_as_triton_does() {
    let server = start(&[STREAM, "i=identity"]).await;
    let req = request(vec![fp32(1, &[16])]);
    let answer = Http::new(server.http_addr).infer("s", &req).await;
    assert_eq!(answer.status, 501);
    assert_eq!(
        answer.json()["error"],
        "HTTP end point doesn't support models with decoupled transaction policy"
    );
    let mut client = grpc(&server).await;
    let status = client
        .model_infer(wire::to_grpc_request("s", "", &req))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    assert_eq!(
        status.message(),
        "ModelInfer RPC doesn't support models with decoupled transaction policy"
    );
    let local = server.local.infer("s", "", req.clone()).await.unwrap_err();
    assert!(matches!(local, InferError::Unsupported(_)), "{local:?}");
    assert!(local.message().contains("decoupled"), "{local}");
    assert!(server.local.is_decoupled("s") && !server.local.is_decoupled("i"));
    // Nothing was run or counted.
    let s = grpc_stats(&mut client, "s").await;
    assert_eq!((success(&s).0, fail(&s).0, s.execution_count), (0, 0, 0));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_is_not_decoupled_answers_once_flagged_final() {
    let server = start(&[STREAM, "i=identity"]).await;
    let mut stream = GrpcStream::open(&mut grpc(&server).await).await;
    let input = fp32(1, &[16]);
    stream.send("i", "one", &request(vec![input.clone()])).await;
    let answer = stream.next().await;
    let response = answer.infer_response.unwrap();
    assert_eq!(
        (response.id.as_str(), final_flag(&response)),
        ("one", Some(true))
    );
    assert_eq!(response.raw_output_contents, [input.data.to_vec()]);
    // Errors keep their form: the message, and the request's id.
    stream
        .send("nope", "two", &request(vec![input.clone()]))
        .await;
    let answer = stream.next().await;
    assert!(answer.error_message.contains("unknown model"), "{answer:?}");
    assert_eq!(answer.infer_response.unwrap().id, "two");
    // In-process: the same answers through infer_stream.
    let mut items = server
        .local
        .infer_stream("i", "", request(vec![input.clone()]))
        .await
        .unwrap();
    let only = items.recv().await.unwrap().unwrap();
    assert!(only.last && items.recv().await.is_none());
    let mut items = server
        .local
        .infer_stream("s", "", request(vec![input.clone()]))
        .await
        .unwrap();
    let mut lasts = Vec::new();
    while let Some(item) = items.recv().await {
        let answer = item.unwrap();
        lasts.push((answer.last, answer.response.outputs.len()));
    }
    assert_eq!(
        lasts,
        [
            (false, 1),
            (false, 1),
            (false, 1),
            (false, 1),
            (false, 1),
            (true, 0)
        ]
    );
    let bad = server
        .local
        .infer_stream("s", "", request(vec![fp32(1, &[15])]))
        .await;
    assert_eq!(bad.unwrap_err().http_status(), 400);
    // An open stream would hold the graceful shutdown for its whole grace period.
    drop(stream);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_says_decoupled() {
    let server = start(&[STREAM, "i=identity"]).await;
    let mut client = grpc(&server).await;
    let http = Http::new(server.http_addr);
    for (model, decoupled) in [("s", true), ("i", false)] {
        let req = ModelConfigRequest {
            name: model.into(),
            version: String::new(),
        };
        let config = client
            .model_config(req)
            .await
            .unwrap()
            .into_inner()
            .config
            .unwrap();
        assert_eq!(
            config.model_transaction_policy.unwrap().decoupled,
            decoupled
        );
        let json = http.get(&format!("/v2/models/{model}/config")).await.json();
        assert_eq!(
            json["model_transaction_policy"]["decoupled"], decoupled,
            "{json}"
        );
    }
    server.shutdown().await;
}

/// A count of one response statistic from the HTTP JSON.
fn json_count(stats: &Value, index: &str, what: &str) -> u64 {
    stats["response_stats"][index][what]["count"]
        .as_u64()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_stats_count_every_response_under_its_index() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let server = start(&[STREAM, "i=identity"]).await;
    let mut client = grpc(&server).await;
    let mut stream = GrpcStream::open(&mut client).await;
    let requests = 6;
    for i in 0..requests {
        stream
            .send("s", &format!("r{i}"), &request(vec![fp32(1, &[16])]))
            .await;
        receive(&mut stream).await;
    }
    stream
        .send("i", "plain", &request(vec![fp32(1, &[16])]))
        .await;
    stream.next().await;
    let s = grpc_stats(&mut client, "s").await;
    assert_eq!(
        (success(&s).0, s.inference_count, s.execution_count),
        (6, 6, 6)
    );
    let mut keys: Vec<&String> = s.response_stats.keys().collect();
    keys.sort();
    assert_eq!(keys, ["0", "1", "2", "3", "4", "5"]);
    for k in ["0", "1", "2", "3", "4"] {
        let r = &s.response_stats[k];
        let counts = [
            r.success,
            r.compute_infer,
            r.compute_output,
            r.empty_response,
            r.fail,
        ]
        .map(|d| d.unwrap().count);
        assert_eq!(counts, [requests, requests, requests, 0, 0], "{k}");
    }
    let last = &s.response_stats["5"];
    assert_eq!(
        (
            last.empty_response.unwrap().count,
            last.success.unwrap().count
        ),
        (requests, 0)
    );
    let mean_ms = |k: &str| {
        let d = s.response_stats[k].success.unwrap();
        d.ns as f64 / d.count as f64 / 1e6
    };
    // Responses keep to a schedule from the execution's start: one that comes late (a busy
    // machine) makes the gap to the next shorter, but none comes early, so the response
    // times add up to at least first_ms + 4 × interval_ms.
    let schedule_ms: f64 = ["0", "1", "2", "3", "4"].into_iter().map(mean_ms).sum();
    eprintln!(
        "mean response time: first {:.2} ms, all five {schedule_ms:.2} ms",
        mean_ms("0")
    );
    assert!(mean_ms("0") >= 9.5 && schedule_ms >= 25.5);
    assert!(grpc_stats(&mut client, "i").await.response_stats.is_empty());

    let http = Http::new(server.http_addr);
    let json = http.get("/v2/models/s/stats").await.json();
    let json = &json["model_stats"][0];
    for k in ["0", "4"] {
        assert_eq!(json_count(json, k, "success"), requests, "{k}");
        assert_eq!(json_count(json, k, "compute_infer"), requests, "{k}");
    }
    assert_eq!(json_count(json, "5", "empty_response"), requests);
    let plain = http.get("/v2/models/i/stats").await.json();
    assert_eq!(
        plain["model_stats"][0]["response_stats"],
        serde_json::json!({})
    );
    // An open stream would hold the graceful shutdown for its whole grace period.
    drop(stream);
    server.shutdown().await;
}
