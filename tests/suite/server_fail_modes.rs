//! The `fail` kind's answers that claim success: `mode=bad_body` answers 200 / OK with no
//! outputs and `mode=wrong_values` with outputs of the right form but wrong numbers, over
//! HTTP (JSON and binary) and gRPC, at the asked rate, counted by the server as successes;
//! and bad model options stop `inferperf serve` with one sentence.

use crate::server_util;

use std::time::Duration;

use bytes::{BufMut, BytesMut};

use inferperf_wire::model::DataType;
use inferperf_wire::{self as wire, InferRequest, InferResponse, RequestedOutput, Tensor};
use server_util::*;

/// The request with OUTPUT0 asked for, as binary data or JSON.
fn asking(input: Tensor, binary: bool) -> InferRequest {
    InferRequest {
        outputs: vec![RequestedOutput {
            name: "OUTPUT0".into(),
            binary,
        }],
        binary_output: binary,
        ..request(vec![input])
    }
}

/// The answers over HTTP JSON, HTTP binary and gRPC, each checked to be a success.
async fn answers(
    server: &inferperf_server::RunningServer,
    model: &str,
    input: &Tensor,
) -> Vec<InferResponse> {
    let http = Http::new(server.http_addr);
    let mut out = Vec::new();
    for binary in [false, true] {
        let answer = http
            .infer_as(model, &asking(input.clone(), binary), binary)
            .await;
        assert_eq!(answer.status, 200, "{model}");
        out.push(wire::decode_http_response(&answer.body, answer.header_len).unwrap());
    }
    let msg = wire::to_grpc_request(model, "", &asking(input.clone(), true));
    let response = grpc(server)
        .await
        .model_infer(msg)
        .await
        .unwrap()
        .into_inner();
    out.push(wire::from_grpc_response(response).unwrap());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_body_answers_success_without_outputs() {
    let server = start(&["bad=fail:mode=bad_body,rate=1"]).await;
    let input = fp32(2, &[16]);
    for response in answers(&server, "bad", &input).await {
        assert_eq!(
            (response.model_name.as_str(), response.id.as_str()),
            ("bad", "r")
        );
        assert!(response.outputs.is_empty(), "{response:?}");
    }
    let json = Http::new(server.http_addr)
        .infer_as("bad", &asking(input.clone(), true), true)
        .await;
    assert_eq!(
        (json.header_len, json.json()["outputs"].clone()),
        (None, serde_json::json!([]))
    );
    let s = grpc_stats(&mut grpc(&server).await, "bad").await;
    assert_eq!((success(&s).0, fail(&s).0), (4, 0));
    server.shutdown().await;
}

fn tensor(datatype: DataType, data: BytesMut, n: i64) -> Tensor {
    Tensor {
        name: "INPUT0".into(),
        datatype,
        shape: vec![1, n],
        data: data.freeze(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_values_keep_the_form_and_change_every_element() {
    let server = start(&[
        "fp32=fail:mode=wrong_values,rate=1",
        "int32=fail:mode=wrong_values,rate=1,datatype=INT32,shape=3",
        "bool=fail:mode=wrong_values,rate=1,datatype=BOOL,shape=3",
        "text=fail:mode=wrong_values,rate=1,datatype=BYTES,shape=2",
    ])
    .await;
    let mut ints = BytesMut::new();
    [0, -1, i32::MAX].iter().for_each(|v| ints.put_i32_le(*v));
    let text = wire::encode_bytes_elements("INPUT0", ["", "word"]).unwrap();
    let cases = [
        ("fp32", fp32(1, &[16])),
        ("int32", tensor(DataType::Int32, ints, 3)),
        (
            "bool",
            tensor(DataType::Bool, BytesMut::from(&[0u8, 1, 0][..]), 3),
        ),
        (
            "text",
            tensor(DataType::Bytes, BytesMut::from(&text[..]), 2),
        ),
    ];
    for (model, input) in cases {
        for response in answers(&server, model, &input).await {
            let [output] = response.outputs.as_slice() else {
                panic!("{model}: {response:?}");
            };
            assert_eq!(output.name, "OUTPUT0");
            assert_eq!(
                (output.datatype, &output.shape),
                (input.datatype, &input.shape)
            );
            assert_ne!(output.data, input.data, "{model}");
            let size = input.datatype.element_size().unwrap_or(4);
            if input.datatype != DataType::Bytes {
                let differ =
                    (output.data.chunks(size).zip(input.data.chunks(size))).all(|(a, b)| a != b);
                assert!(differ, "{model}: an element kept its value");
            }
        }
    }
    let s = grpc_stats(&mut grpc(&server).await, "int32").await;
    assert_eq!((success(&s).0, fail(&s).0), (3, 0));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fraction_rate_spoils_about_that_share_of_requests() {
    let server = start(&[
        "bad=fail:mode=bad_body,rate=0.3",
        "wrong=fail:mode=wrong_values,rate=0.3",
    ])
    .await;
    let n = 2000;
    let http = Http::new(server.http_addr);
    let input = fp32(1, &[16]);
    let req = asking(input.clone(), true);
    let spoiled_http = send_n(n, 8, move |_| {
        let (http, req) = (http.clone(), req.clone());
        async move {
            let answer = http.infer("bad", &req).await;
            let response = wire::decode_http_response(&answer.body, answer.header_len).unwrap();
            answer.status == 200 && response.outputs.is_empty()
        }
    })
    .await;
    let client = grpc(&server).await;
    let msg = wire::to_grpc_request("wrong", "", &asking(input.clone(), true));
    let spoiled_grpc = send_n(n, 8, move |_| {
        let (mut client, msg, data) = (client.clone(), msg.clone(), input.data.clone());
        async move {
            let response = client.model_infer(msg).await.unwrap().into_inner();
            response.raw_output_contents[0] != data
        }
    })
    .await;
    let (bad, wrong) = (
        spoiled_http as f64 / n as f64,
        spoiled_grpc as f64 / n as f64,
    );
    eprintln!("spoiled: bad_body {bad:.3} over HTTP, wrong_values {wrong:.3} over gRPC");
    assert!((0.25..=0.35).contains(&bad), "bad_body share {bad}");
    assert!((0.25..=0.35).contains(&wrong), "wrong_values share {wrong}");
    let mut client = grpc(&server).await;
    for model in ["bad", "wrong"] {
        let s = grpc_stats(&mut client, model).await;
        assert_eq!((success(&s).0, fail(&s).0), (n as u64, 0), "{model}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn bad_model_options_stop_serve_with_one_sentence() {
    let cases = [
        ("s=stream:responses=-1", "'responses=-1'"),
        ("f=fail:mode=nope", "'mode=nope'"),
        (
            "f=fail:code=500,mode=bad_body",
            "code= goes only with mode=error",
        ),
    ];
    for (model, expected) in cases {
        let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
            .args([
                "serve",
                "--http-port",
                "0",
                "--grpc-port",
                "0",
                "--model",
                model,
            ])
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(20), run)
            .await
            .expect("serve refuses at once")
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{model}: {}", stderr.trim());
        assert_eq!(out.status.code(), Some(3), "{model}: {stderr}");
        assert!(stderr.contains(expected), "{model}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{model}: {stderr}");
    }
}
