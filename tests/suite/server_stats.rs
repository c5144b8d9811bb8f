//! The statistics extension, the Prometheus page, the stream and the in-process API of the
//! embedded server: counters equal exactly the requests sent, HTTP and gRPC report the same
//! numbers, the metrics text is well formed, every streamed request gets its answer, and
//! `LocalServer::infer` answers as HTTP and gRPC do.

use crate::server_util;

use std::collections::HashMap;

use bytes::{BufMut, BytesMut};
use serde_json::Value;

use inferperf_wire::model::DataType;
use inferperf_wire::proto::ModelInferRequest;
use inferperf_wire::{self as wire, Tensor};
use server_util::*;

const MODELS: [&str; 4] = [
    "identity=identity",
    "add_sub=add_sub:shape=4",
    "plain=identity:shape=2,max_batch=0",
    "batched=identity:shape=2,max_batch=8,queue_delay_us=20000",
];

fn int32(name: &str, values: &[i32]) -> Tensor {
    let mut b = BytesMut::new();
    values.iter().for_each(|v| b.put_i32_le(*v));
    Tensor {
        name: name.into(),
        datatype: DataType::Int32,
        shape: vec![values.len() as i64],
        data: b.freeze(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_equal_the_requests_sent() {
    let server = start(&MODELS).await;
    let http = Http::new(server.http_addr);
    let mut client = grpc(&server).await;
    // identity, no dynamic batching: batch 3 per request, one execution each.
    for _ in 0..5 {
        assert_eq!(
            http.infer("identity", &request(vec![fp32(3, &[16])]))
                .await
                .status,
            200
        );
    }
    let msg = wire::to_grpc_request("identity", "", &request(vec![fp32(2, &[16])]));
    for _ in 0..4 {
        client.model_infer(msg.clone()).await.unwrap();
    }
    server
        .local
        .infer("identity", "", request(vec![fp32(1, &[16])]))
        .await
        .unwrap();
    let bad = request(vec![fp32(1, &[15])]);
    assert_eq!(http.infer("identity", &bad).await.status, 400);

    let s = grpc_stats(&mut client, "identity").await;
    assert_eq!(
        (s.inference_count, s.execution_count),
        (5 * 3 + 4 * 2 + 1, 10)
    );
    assert_eq!((success(&s).0, queue(&s).0, fail(&s).0), (10, 10, 1));
    let i = s.inference_stats.as_ref().unwrap();
    let counts: Vec<u64> = [i.compute_input, i.compute_infer, i.compute_output]
        .iter()
        .map(|d| d.unwrap().count)
        .collect();
    assert_eq!(counts, [10, 10, 10]);
    let sizes: HashMap<u64, u64> = (s.batch_stats.iter())
        .map(|b| (b.batch_size, b.compute_infer.unwrap().count))
        .collect();
    assert_eq!(sizes, HashMap::from([(3, 5), (2, 4), (1, 1)]));
    assert!(success(&s).1 >= queue(&s).1 + i.compute_infer.unwrap().ns);

    // A model without batching counts batch size 1.
    let plain = request(vec![Tensor {
        shape: vec![2],
        ..fp32(1, &[2])
    }]);
    for _ in 0..7 {
        assert_eq!(http.infer("plain", &plain).await.status, 200);
    }
    let s = grpc_stats(&mut client, "plain").await;
    assert_eq!(
        (s.inference_count, s.execution_count, success(&s).0),
        (7, 7, 7)
    );
    assert_eq!((s.batch_stats.len(), s.batch_stats[0].batch_size), (1, 1));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_batching_counts_requests_elements_and_executions() {
    let server = start(&MODELS).await;
    let client = grpc(&server).await;
    // 8 requests of 2 elements within the 20 ms delay: 16 elements, executions of ≤ 8.
    let msg = wire::to_grpc_request("batched", "", &request(vec![fp32(2, &[2])]));
    let c = client.clone();
    let ok = send_n(8, 8, move |_| {
        let (mut c, m) = (c.clone(), msg.clone());
        async move { c.model_infer(m).await.is_ok() }
    })
    .await;
    assert_eq!(ok, 8);
    let s = grpc_stats(&mut client.clone(), "batched").await;
    assert_eq!((s.inference_count, success(&s).0), (16, 8));
    assert!(
        s.execution_count < 8 && s.execution_count >= 2,
        "{}",
        s.execution_count
    );
    let elements: u64 = s
        .batch_stats
        .iter()
        .map(|b| b.batch_size * b.compute_input.unwrap().count)
        .sum();
    assert_eq!(elements, 16);
    server.shutdown().await;
}

fn duration_ok(v: &Value) -> bool {
    v["count"].is_u64() && v["ns"].is_u64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_grpc_statistics_agree() {
    let server = start(&MODELS).await;
    let http = Http::new(server.http_addr);
    for _ in 0..3 {
        http.infer("identity", &request(vec![fp32(2, &[16])])).await;
    }
    let meta = http.get("/v2").await.json();
    assert!(meta["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "statistics"));
    let all = http.get("/v2/models/stats").await.json();
    let names: Vec<&str> = (all["model_stats"].as_array().unwrap().iter())
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add_sub", "batched", "identity", "plain"]);
    let one = http.get("/v2/models/identity/stats").await.json();
    let versioned = http
        .get("/v2/models/identity/versions/1/stats")
        .await
        .json();
    let m = &one["model_stats"][0];
    assert_eq!(
        versioned["model_stats"][0]["inference_count"],
        m["inference_count"]
    );
    assert_eq!(
        (m["name"].as_str(), m["version"].as_str()),
        (Some("identity"), Some("1"))
    );
    assert!(m["last_inference"].as_u64().unwrap() > 1_600_000_000_000);
    let kinds = [
        "success",
        "fail",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
        "cache_hit",
        "cache_miss",
    ];
    assert!(
        kinds.iter().all(|k| duration_ok(&m["inference_stats"][k])),
        "{m}"
    );
    let batch = &m["batch_stats"][0];
    assert_eq!(batch["batch_size"], 2);
    assert!(["compute_input", "compute_infer", "compute_output"]
        .iter()
        .all(|k| duration_ok(&batch[k])));

    let g = grpc_stats(&mut grpc(&server).await, "identity").await;
    assert_eq!(m["inference_count"], g.inference_count);
    assert_eq!(m["execution_count"], g.execution_count);
    assert_eq!(m["inference_stats"]["success"]["ns"], success(&g).1);
    assert_eq!(m["inference_stats"]["queue"]["ns"], queue(&g).1);
    assert_eq!(http.get("/v2/models/nope/stats").await.status, 404);
    assert_eq!(
        http.get("/v2/models/identity/versions/2/stats")
            .await
            .status,
        404
    );
    let everything = inferperf_wire::proto::ModelStatisticsRequest::default();
    let all = grpc(&server)
        .await
        .model_statistics(everything)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.model_stats.len(), 4);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_text_has_tritons_counters() {
    let server = start(&MODELS).await;
    let http = Http::new(server.http_addr);
    for _ in 0..4 {
        http.infer("identity", &request(vec![fp32(2, &[16])])).await;
    }
    http.infer("identity", &request(vec![fp32(1, &[3])])).await;
    // Burn some CPU so that the process's CPU time (counted in 10 ms ticks) is above 0.
    let spin = std::time::Instant::now();
    while spin.elapsed() < std::time::Duration::from_millis(50) {
        std::hint::spin_loop();
    }
    let metrics = Http::new(server.metrics_addr.expect("a metrics port"));
    let answer = metrics.get("/metrics").await;
    assert_eq!(answer.status, 200);
    let text = String::from_utf8(answer.body.to_vec()).unwrap();
    let mut values = HashMap::new();
    for line in text.lines() {
        if line.starts_with('#') {
            let words: Vec<&str> = line.splitn(4, ' ').collect();
            assert!(
                matches!(words[1], "HELP" | "TYPE") && words.len() >= 4,
                "{line}"
            );
            continue;
        }
        let (key, value) = line.rsplit_once(' ').unwrap();
        values.insert(
            key.to_string(),
            value.parse::<f64>().unwrap_or_else(|_| panic!("{line}")),
        );
    }
    let id = |name: &str| values[&format!("{name}{{model=\"identity\",version=\"1\"}}")];
    assert_eq!(id("nv_inference_request_success"), 4.0);
    assert_eq!(id("nv_inference_request_failure"), 1.0);
    assert_eq!(id("nv_inference_count"), 8.0);
    assert_eq!(id("nv_inference_exec_count"), 4.0);
    for name in [
        "request",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
    ] {
        assert!(id(&format!("nv_inference_{name}_duration_us")) >= 0.0);
    }
    assert!(id("nv_inference_request_duration_us") >= id("nv_inference_queue_duration_us"));
    assert!(text.contains("# TYPE nv_inference_count counter"));
    assert!(values["process_cpu_seconds_total"] > 0.0);
    assert!(values["process_resident_memory_bytes"] > 1e6);
    assert_eq!(metrics.get("/nope").await.status, 404);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_answers_every_request() {
    let server = start(&MODELS).await;
    let mut client = grpc(&server).await;
    let mut requests: Vec<ModelInferRequest> = (0..50)
        .map(|i| {
            let mut msg = wire::to_grpc_request("identity", "", &request(vec![fp32(1, &[16])]));
            msg.id = format!("req-{i}");
            msg
        })
        .collect();
    requests[7].model_name = "nope".into();
    requests[9] = wire::to_grpc_request("identity", "", &request(vec![fp32(1, &[15])]));
    requests[9].id = "req-9".into();
    let answers = client
        .model_stream_infer(futures::stream::iter(requests))
        .await
        .unwrap();
    let mut answers = answers.into_inner();
    let mut seen = HashMap::new();
    while let Some(answer) = answers.message().await.unwrap() {
        let resp = answer.infer_response.clone().unwrap();
        seen.insert(resp.id.clone(), answer);
    }
    assert_eq!(seen.len(), 50);
    assert!(
        seen["req-7"].error_message.contains("unknown model"),
        "{:?}",
        seen["req-7"]
    );
    assert!(
        seen["req-9"].error_message.contains("[1, 15]"),
        "{:?}",
        seen["req-9"]
    );
    let good = seen["req-3"].infer_response.clone().unwrap();
    assert!(seen["req-3"].error_message.is_empty());
    let good = wire::from_grpc_response(good).unwrap();
    assert_eq!(good.outputs[0].data, fp32(1, &[16]).data);
    let s = grpc_stats(&mut client, "identity").await;
    assert_eq!((success(&s).0, fail(&s).0), (48, 1));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_http_and_grpc_give_the_same_outputs() {
    let server = start(&MODELS).await;
    let http = Http::new(server.http_addr);
    let mut client = grpc(&server).await;
    let cases = [
        ("identity", request(vec![fp32(3, &[16])])),
        (
            "add_sub",
            request(vec![
                int32("INPUT0", &[1, -2, 3, i32::MAX]),
                int32("INPUT1", &[5, 6, -7, 1]),
            ]),
        ),
        ("batched", request(vec![fp32(2, &[2])])),
    ];
    for (model, req) in cases {
        let local = server.local.infer(model, "", req.clone()).await.unwrap();
        let answer = http.infer(model, &req).await;
        let over_http = wire::decode_http_response(&answer.body, answer.header_len).unwrap();
        let msg = wire::to_grpc_request(model, "", &req);
        let over_grpc =
            wire::from_grpc_response(client.model_infer(msg).await.unwrap().into_inner()).unwrap();
        assert_eq!(local.outputs, over_http.outputs, "{model}");
        assert_eq!(local.outputs, over_grpc.outputs, "{model}");
        assert_eq!((local.model_name.as_str(), local.id.as_str()), (model, "r"));
    }
    let meta = server.local.metadata("identity").unwrap();
    assert_eq!(
        (meta.inputs[0].shape.as_slice(), meta.platform.as_str()),
        (&[-1, 16][..], "inferperf")
    );
    let config = server.local.config("batched").unwrap();
    assert_eq!(config.max_batch_size, 8);
    assert!(config.scheduling_choice.is_some());
    assert!(server.local.metadata("nope").is_none());
    let err = server
        .local
        .infer("nope", "", request(vec![]))
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), 404);
    server.shutdown().await;
}
