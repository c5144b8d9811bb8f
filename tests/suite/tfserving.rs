//! `--service-kind tfserving` against the embedded server's TF Serving endpoints: over gRPC
//! (Predict, GetModelMetadata) and REST (both body forms), every request inferperf counts is
//! one the server counted, with no errors; a signature or model that is not there ends the
//! run with its sentence and exit 99; and every datatype crosses the wire intact.

use crate::common;

use common::*;
use inferperf_wire::proto::tensorflow::serving::prediction_service_client::PredictionServiceClient;
use inferperf_wire::proto::tensorflow::serving::{
    GetModelMetadataRequest, ModelSpec, PredictRequest,
};
use inferperf_wire::proto::tensorflow::SignatureDef;
use inferperf_wire::tfserving::{from_tensor_proto, to_tensor_proto};
use prost::Message;

const REQUESTS: &str = "300";

/// Profiles `identity` with exactly 300 requests at concurrency 4 and checks them against
/// the server's own count.
async fn requests_match_the_servers_count(protocol: &str, extra: &[&str]) {
    let server = start_server(&["identity=identity", "plain=identity:shape=4,max_batch=0"]).await;
    for (model, batch) in [("identity", "3"), ("plain", "1")] {
        let before = server.local.statistics(model).unwrap().inference_count;
        let url = url(&server, protocol);
        let mut args = vec![
            "-m",
            model,
            "--service-kind",
            "tfserving",
            "-u",
            &url,
            "-i",
            protocol,
            "-b",
            batch,
            "--concurrency-range",
            "4",
            "--request-count",
            REQUESTS,
        ];
        args.extend_from_slice(extra);
        let results = profile(&args).await;
        let merged = &results[0].merged;
        assert_eq!(
            merged.error_count(),
            0,
            "{protocol} {model}: {:?}",
            merged.errors
        );
        assert!(merged.throughput() > 0.0);
        let counted = server.local.statistics(model).unwrap().inference_count - before;
        let batch: u64 = batch.parse().unwrap();
        let sent = merged.ok * batch;
        // The server counts every request; the run reports those of its window (the
        // requests still in flight when it closed are counted by the server only).
        assert!(
            counted >= sent && counted <= sent + 4 * batch,
            "{protocol} {model}: inferperf {sent} inferences, server {counted}"
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_predict_is_counted_by_the_server() {
    requests_match_the_servers_count("grpc", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_inputs_and_instances_are_counted_by_the_server() {
    requests_match_the_servers_count("http", &[]).await;
    requests_match_the_servers_count("http", &["--tfserving-rest-format", "instances"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_signature_or_model_is_one_sentence_and_exit_99() {
    let server = start_server(&["identity=identity"]).await;
    for protocol in ["grpc", "http"] {
        let url = url(&server, protocol);
        let base = ["--service-kind", "tfserving", "-u", &url, "-i", protocol];
        let mut args = vec!["-m", "identity", "--model-signature-name", "classify"];
        args.extend_from_slice(&base);
        let out = run_cli(&args).await;
        assert_eq!(out.status.code(), Some(99), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("has no signature 'classify' (it has serving_default)"),
            "{}",
            stderr(&out)
        );
        let mut args = vec!["-m", "nothing"];
        args.extend_from_slice(&base);
        let out = run_cli(&args).await;
        assert_eq!(out.status.code(), Some(99), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("has no model 'nothing'"),
            "{}",
            stderr(&out)
        );
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
    server.shutdown().await;
}

/// Every datatype the server's `identity` can take comes back as it was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_datatype_is_predicted_back_unchanged() {
    use inferperf_wire::model::DataType;
    let models: Vec<String> = DataType::ALL
        .iter()
        .map(|d| {
            format!(
                "id_{}=identity:shape=3,datatype={}",
                d.as_str().to_lowercase(),
                d.as_str()
            )
        })
        .collect();
    let defs: Vec<&str> = models.iter().map(String::as_str).collect();
    let server = start_server(&defs).await;
    let endpoint = format!("http://{}", server.grpc_addr);
    let channel = tonic::transport::Endpoint::from_shared(endpoint).unwrap();
    let mut client = PredictionServiceClient::new(channel.connect().await.unwrap());
    for datatype in DataType::ALL {
        let name = format!("id_{}", datatype.as_str().to_lowercase());
        let spec = ModelSpec {
            name: name.clone(),
            ..Default::default()
        };
        let meta = client
            .get_model_metadata(GetModelMetadataRequest {
                model_spec: Some(spec.clone()),
                metadata_field: vec!["signature_def".into()],
            })
            .await
            .unwrap()
            .into_inner();
        let map = inferperf_wire::proto::tensorflow::serving::SignatureDefMap::decode(
            &meta.metadata["signature_def"].value[..],
        )
        .unwrap();
        let signature: &SignatureDef = &map.signature_def["serving_default"];
        let (input, info) = signature.inputs.iter().next().unwrap();
        let output = signature.outputs.keys().next().unwrap();
        let data = match datatype.element_size() {
            Some(size) => {
                bytes::Bytes::from((0..(6 * size) as u8).map(|b| b % 2).collect::<Vec<_>>())
            }
            None => {
                inferperf_wire::encode_bytes_elements("x", ["a", "bb", "", "d", "e", "f"]).unwrap()
            }
        };
        let tensor = inferperf_wire::Tensor {
            name: input.clone(),
            datatype,
            shape: vec![2, 3],
            data,
        };
        assert_eq!(info.dtype, to_tensor_proto(&tensor).unwrap().dtype);
        let answer = client
            .predict(PredictRequest {
                model_spec: Some(spec),
                inputs: [(input.clone(), to_tensor_proto(&tensor).unwrap())]
                    .into_iter()
                    .collect(),
                output_filter: vec![],
            })
            .await
            .unwrap()
            .into_inner();
        let got = from_tensor_proto(output, &answer.outputs[output]).unwrap();
        assert_eq!(got.data, tensor.data, "{datatype}");
        assert_eq!(got.shape, tensor.shape, "{datatype}");
    }
    server.shutdown().await;
}

/// A success without the signature's outputs is a bad response, over gRPC and REST.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_the_outputs_is_a_bad_response() {
    use inferperf::backend::{ErrorKind, Malformation};
    let server = start_server(&["bad=fail:mode=bad_body,rate=1"]).await;
    for protocol in ["grpc", "http"] {
        let url = url(&server, protocol);
        let results = profile(&[
            "-m",
            "bad",
            "--service-kind",
            "tfserving",
            "-u",
            &url,
            "-i",
            protocol,
            "--concurrency-range",
            "2",
            "--request-count",
            "50",
        ])
        .await;
        let merged = &results[0].merged;
        assert_eq!(merged.ok, 0, "{protocol}");
        let missing = ErrorKind::BadResponse(Malformation::MissingOutput);
        assert!(
            merged.errors.get(&missing).is_some_and(|&n| n >= 50),
            "{protocol}: {:?}",
            merged.errors
        );
    }
    server.shutdown().await;
}

#[test]
fn tf_servings_own_ports_are_the_defaults() {
    let url = |protocol: &str| {
        config(&["-m", "m", "--service-kind", "tfserving", "-i", protocol])
            .target
            .url
    };
    assert_eq!(url("grpc"), "localhost:8500");
    assert_eq!(url("http"), "localhost:8501");
    let triton = config(&["-m", "m", "-i", "grpc"]);
    assert_eq!(triton.target.url, "localhost:8001");
    assert!(triton.target.tfserving().is_none());
}
