//! perf_analyzer's remaining options against the embedded server: `--request-count` in
//! every load mode counted by the server itself.

use crate::common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_count_sends_exactly_n_in_every_load_mode() {
    let server = start_server(&["identity=identity"]).await;
    let u = url(&server, "http");
    let dir = tempfile::tempdir().unwrap();
    let gaps = dir.path().join("gaps.txt");
    std::fs::write(&gaps, "2000\n5000\n").unwrap();
    let gaps = gaps.to_str().unwrap();
    let modes: [&[&str]; 4] = [
        &["--concurrency-range", "3"],
        &["--request-rate-range", "30"],
        &[
            "--request-rate-range",
            "30",
            "--request-distribution",
            "poisson",
        ],
        &["--request-intervals", gaps],
    ];
    for (i, mode) in modes.iter().enumerate() {
        let before = served(&server, "identity");
        let count = 37 + i as u64;
        let n = count.to_string();
        let mut args = vec!["-m", "identity", "-u", &u, "--request-count", &n];
        args.extend_from_slice(mode);
        let results = profile(&args).await;
        assert_eq!(results.len(), 1, "{mode:?}");
        assert_eq!(results[0].windows.len(), 1, "{mode:?}");
        assert_eq!(results[0].merged.completed(), count, "{mode:?}");
        assert_eq!(served(&server, "identity") - before, count, "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_parameters_arrive_typed_over_http_and_grpc() {
    let server = start_server(&["identity=identity"]).await;
    // A different value per protocol, so that the second check cannot read the first's.
    for (protocol, tokens) in [("http", 256), ("grpc", 512)] {
        let u = url(&server, protocol);
        let max_tokens = format!("max_tokens:{tokens}:int");
        let results = profile(&[
            "-m",
            "identity",
            "-u",
            &u,
            "-i",
            protocol,
            "--request-count",
            "5",
            "--request-parameter",
            "max_tokens:1:int",
            "--request-parameter",
            &max_tokens,
            "--request-parameter",
            "ignore_eos:true:bool",
            "--request-parameter",
            "note:a:b c:string",
        ])
        .await;
        assert_eq!(results[0].merged.completed(), 5, "{protocol}");
        let got = server
            .local
            .last_parameters("identity")
            .expect("parameters");
        let want = serde_json::json!({"max_tokens": tokens, "ignore_eos": true, "note": "a:b c"});
        assert_eq!(serde_json::Value::Object(got), want, "{protocol}");
    }
}

/// Two identity requests and their expected answers, the second one wrong at element 7
/// when `wrong`.
fn validation_file(dir: &std::path::Path, wrong: bool) -> String {
    let values: Vec<f32> = (0..16).map(|i| i as f32 + 0.25).collect();
    let mut expected = values.clone();
    if wrong {
        expected[7] = 99.5;
    }
    let path = dir.join(if wrong { "wrong.json" } else { "right.json" });
    let doc = serde_json::json!({
        "data": [{"INPUT0": values}, {"INPUT0": values}],
        "validation_data": [{"OUTPUT0": values}, {"OUTPUT0": expected}],
    });
    std::fs::write(&path, doc.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_grpc_requests_and_answers_are_validated() {
    use inferperf::backend::outcome::ErrorKind;
    let server = start_server(&["identity=identity"]).await;
    let u = url(&server, "grpc");
    let dir = tempfile::tempdir().unwrap();
    for algorithm in ["gzip", "deflate"] {
        for wrong in [false, true] {
            let file = validation_file(dir.path(), wrong);
            let results = profile(&[
                "-m",
                "identity",
                "-u",
                &u,
                "-i",
                "grpc",
                "--grpc-compression-algorithm",
                algorithm,
                "--input-data",
                &file,
                "--request-count",
                "40",
            ])
            .await;
            let w = &results[0].merged;
            // The server answers compressed in the encoding asked for: a wrong value found
            // means the answer was inflated and compared.
            let want = if wrong { (20, Some(&20)) } else { (40, None) };
            let got = (w.ok, w.errors.get(&ErrorKind::Validation));
            assert_eq!(got, want, "{algorithm} wrong={wrong}: {:?}", w.errors);
            assert_eq!(w.error_count(), want.1.copied().unwrap_or(0), "{algorithm}");
        }
    }
}

/// A raw gRPC call with this `grpc-encoding` and a message flagged compressed: the status.
async fn status_of_encoding(addr: std::net::SocketAddr, encoding: &str) -> String {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let request = http::Request::post(format!(
        "http://{addr}/inference.GRPCInferenceService/ServerLive"
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .header("grpc-encoding", encoding)
    .body(())
    .unwrap();
    let (response, mut body) = sender.send_request(request, false).unwrap();
    // The server may answer (and close the stream) before the message is sent.
    let _ = body.send_data(bytes::Bytes::from_static(b"\x01\0\0\0\x02ab"), true);
    let response = response.await.unwrap();
    if let Some(status) = response.headers().get("grpc-status") {
        return status.to_str().unwrap().to_string();
    }
    let mut stream = response.into_body();
    while stream.data().await.is_some() {}
    let trailers = stream.trailers().await.unwrap().unwrap_or_default();
    trailers["grpc-status"].to_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_refuses_an_unknown_grpc_encoding_as_unimplemented() {
    let server = start_server(&["identity=identity"]).await;
    assert_eq!(status_of_encoding(server.grpc_addr, "snappy").await, "12");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_settings_are_set_for_the_run_and_restored_after_it() {
    use serde_json::json;
    let server = start_server(&["identity=identity", "add_sub=add_sub"]).await;
    let trace = server.local.trace_settings();
    let earlier = json!({"trace_rate": "7", "trace_level": ["TENSORS"]});
    trace
        .update("identity", earlier.as_object().unwrap())
        .unwrap();
    let before = trace.get("identity");
    let u = url(&server, "http");
    let out = run_cli(&[
        "-m",
        "identity",
        "-u",
        &u,
        "--request-count",
        "5",
        "--trace-level",
        "TIMESTAMPS",
        "--trace-level",
        "tensors",
        "--trace-rate",
        "100",
        "--trace-count",
        "-1",
        "--log-frequency",
        "5",
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let updates = trace.updates();
    assert_eq!(updates.len(), 3, "{updates:?}");
    let set = json!({
        "trace_level": ["TIMESTAMPS", "TENSORS"],
        "trace_rate": "100",
        "trace_count": "-1",
        "log_frequency": "5",
    });
    assert_eq!(
        updates[1],
        ("identity".to_string(), set.as_object().unwrap().clone())
    );
    let restored = json!({
        "trace_level": ["TENSORS"],
        "trace_rate": "7",
        "trace_count": "-1",
        "log_frequency": "0",
    });
    assert_eq!(
        updates[2],
        (
            "identity".to_string(),
            restored.as_object().unwrap().clone()
        )
    );
    assert_eq!(trace.get("identity"), before);
    // Another model's settings were never touched; a model without the route fails early.
    assert_eq!(
        trace.get("add_sub"),
        inferperf_server::TraceSettings::default().get("x")
    );
    let missing = run_cli(&[
        "-m",
        "nope",
        "-u",
        &u,
        "--request-count",
        "5",
        "--trace-rate",
        "9",
    ])
    .await;
    assert_ne!(missing.status.code(), Some(0));
}
