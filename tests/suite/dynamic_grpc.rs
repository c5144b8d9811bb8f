//! `--service-kind dynamic_grpc --grpc-method P.S/M` against the embedded server's gRPC port:
//! the messages a `message_generator` command prints (KServe `ModelInferRequest`s, made
//! here with prost) are sent as they are, one call per request, on a unary method
//! (ModelInfer) and on a bidirectional one (ModelStreamInfer, several messages a call), and
//! the server's own statistics count every message; a status other than OK is an error of
//! the request, counted by its code, never a success (the run goes on and reports them);
//! bad flags and generators are one sentence with exit 3.

use crate::common;

use common::{profile, run_cli, served, start_server, stderr, stdout, url};
use inferperf_wire::proto::model_infer_request::InferInputTensor;
use inferperf_wire::proto::{InferTensorContents, ModelInferRequest};
use prost::Message;

/// An identity request (FP32 [1, 16]) as protobuf bytes.
fn identity_request(model: &str) -> Vec<u8> {
    ModelInferRequest {
        model_name: model.into(),
        inputs: vec![InferInputTensor {
            name: "INPUT0".into(),
            datatype: "FP32".into(),
            shape: vec![1, 16],
            contents: Some(InferTensorContents {
                fp32_contents: vec![0.5; 16],
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode_to_vec()
}

/// A data file whose one entry's generator prints `count` length-prefixed messages.
fn data_file(dir: &std::path::Path, message: &[u8], count: usize) -> String {
    let mut out = Vec::new();
    for _ in 0..count {
        out.extend_from_slice(&(message.len() as u32).to_le_bytes());
        out.extend_from_slice(message);
    }
    let messages = dir.join(format!("messages{count}.bin"));
    std::fs::write(&messages, out).unwrap();
    let doc = serde_json::json!({
        "data": [{"message_generator": format!("cat '{}'", messages.display())}]
    });
    let data = dir.join(format!("data{count}.json"));
    std::fs::write(&data, doc.to_string()).unwrap();
    data.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_and_bidirectional_methods_carry_the_generated_messages() {
    let server = start_server(&["identity=identity"]).await;
    let dir = tempfile::tempdir().unwrap();
    let u = url(&server, "grpc");
    let cases = [
        ("inference.GRPCInferenceService/ModelInfer", 1),
        ("inference.GRPCInferenceService/ModelStreamInfer", 3),
    ];
    for (method, per_call) in cases {
        let data = data_file(dir.path(), &identity_request("identity"), per_call);
        let before = served(&server, "identity");
        let results = profile(&[
            "--service-kind",
            "dynamic_grpc",
            "--grpc-method",
            method,
            "-u",
            &u,
            "--input-data",
            &data,
            "--concurrency-range",
            "2",
            "--request-count",
            "60",
            "--no-progress",
        ])
        .await;
        let merged = &results[0].merged;
        assert_eq!(merged.error_count(), 0, "{method}: {:?}", merged.errors);
        assert_eq!(merged.ok, 60, "{method}");
        let after = served(&server, "identity");
        assert_eq!(after - before, 60 * per_call as u64, "{method}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_ends_badly_is_an_error_and_the_run_goes_on() {
    let server = start_server(&["identity=identity"]).await;
    let dir = tempfile::tempdir().unwrap();
    let u = url(&server, "grpc");
    // A request for a model the server does not have: ModelInfer answers NOT_FOUND-like
    // errors; a method it does not have answers UNIMPLEMENTED.
    let unknown_model = data_file(dir.path(), &identity_request("nope"), 1);
    let good = data_file(dir.path(), &identity_request("identity"), 2);
    for (method, data, code) in [
        (
            "inference.GRPCInferenceService/ModelInfer",
            &unknown_model,
            "NOT_FOUND",
        ),
        (
            "inference.GRPCInferenceService/NoSuchMethod",
            &good,
            "UNIMPLEMENTED",
        ),
    ] {
        let out = run_cli(&[
            "--service-kind",
            "dynamic_grpc",
            "--grpc-method",
            method,
            "-u",
            &u,
            "--input-data",
            data,
            "--request-count",
            "20",
            "--no-progress",
        ])
        .await;
        let text = stdout(&out) + &stderr(&out);
        // Every call failed: the run reports them all, then ends as an error.
        assert_eq!(out.status.code(), Some(99), "{method}: {text}");
        assert!(
            text.contains("No request succeeded: all 20 failed"),
            "{method}: {text}"
        );
        let counted = format!("Errors: 20 (100.00%): gRPC {code} × 20");
        assert!(text.contains(&counted), "{method}: {text}");
        assert!(text.contains("Request count: 0"), "{method}: {text}");
    }
    assert_eq!(served(&server, "identity"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_flags_and_generators_are_one_sentence_with_exit_3() {
    let server = start_server(&["identity=identity"]).await;
    let dir = tempfile::tempdir().unwrap();
    let u = url(&server, "grpc");
    let data = data_file(dir.path(), &identity_request("identity"), 1);
    let failing = dir.path().join("failing.json");
    std::fs::write(
        &failing,
        r#"{"data": [{"message_generator": "echo broken >&2; exit 4"}]}"#,
    )
    .unwrap();
    let garbage = dir.path().join("garbage.json");
    std::fs::write(
        &garbage,
        r#"{"data": [{"message_generator": "printf abc"}]}"#,
    )
    .unwrap();
    let (failing, garbage) = (failing.display().to_string(), garbage.display().to_string());
    let method = "inference.GRPCInferenceService/ModelInfer";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "-m",
                "svc",
                "--service-kind",
                "dynamic_grpc",
                "--input-data",
                &data,
            ],
            "add --grpc-method",
        ),
        (
            vec![
                "-m",
                "identity",
                "--grpc-method",
                method,
                "--input-data",
                &data,
            ],
            "add --service-kind dynamic_grpc",
        ),
        (
            vec![
                "--service-kind",
                "dynamic_grpc",
                "--grpc-method",
                "ModelInfer",
            ],
            "is not PACKAGE.SERVICE/METHOD",
        ),
        (
            vec!["--service-kind", "dynamic_grpc", "--grpc-method", method],
            "give such a file",
        ),
        (
            vec![
                "--service-kind",
                "dynamic_grpc",
                "--grpc-method",
                method,
                "--input-data",
                &failing,
            ],
            "failed (exit status: 4): broken",
        ),
        (
            vec![
                "--service-kind",
                "dynamic_grpc",
                "--grpc-method",
                method,
                "--input-data",
                &garbage,
            ],
            "not a whole 4-byte length",
        ),
    ];
    for (mut args, sentence) in cases {
        args.extend(["-u", &u, "--request-count", "5"]);
        let out = run_cli(&args).await;
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {text}");
        assert!(text.contains(sentence), "{args:?}: {text}");
        assert_eq!(text.trim().lines().count(), 1, "{text}");
    }
}
