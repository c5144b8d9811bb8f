//! The embedded server speaks KServe v2 as the protocol says: metadata, configuration and
//! inference over HTTP (JSON and binary) and gRPC, for every datatype, plus the errors a
//! client must be able to tell apart (unknown model, bad shape, model failure).

use crate::server_util;

use std::net::SocketAddr;

use bytes::{BufMut, Bytes, BytesMut};
use half::{bf16, f16};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use tonic::transport::Channel;

use inferperf_server::{self as server, ModelDef, RunningServer, ServeOptions};
use inferperf_wire::model::DataType;
use inferperf_wire::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use inferperf_wire::proto::{
    ModelConfigRequest, ModelInferRequest, ModelMetadataRequest, ModelReadyRequest,
    ServerLiveRequest, ServerMetadataRequest,
};
use inferperf_wire::{self as wire, InferRequest, InferResponse, RequestedOutput, Tensor};
use server_util::Http;

fn model_name(datatype: DataType) -> String {
    format!("id_{}", datatype.as_str().to_lowercase())
}

async fn start() -> RunningServer {
    let mut models = server::default_models();
    for t in DataType::ALL {
        let def = format!(
            "{}=identity:datatype={t},shape=4,max_batch=4",
            model_name(t)
        );
        models.push(def.parse::<ModelDef>().unwrap());
    }
    models.push("broken=fail:rate=1".parse().unwrap());
    let opts = ServeOptions {
        http_port: 0,
        grpc_port: 0,
        models,
        ..ServeOptions::default()
    };
    server::start(opts).await.unwrap()
}

async fn grpc(addr: SocketAddr) -> GrpcInferenceServiceClient<Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap();
    GrpcInferenceServiceClient::new(channel.connect().await.unwrap())
}

/// `n` distinct values of the datatype, all representable in JSON.
fn sample(datatype: DataType, n: usize) -> Bytes {
    let mut b = BytesMut::new();
    for i in 0..n {
        let x = i as i64 * 37 - 50;
        match datatype {
            DataType::Bool => b.put_u8((i % 2) as u8),
            DataType::Uint8 => b.put_u8(x as u8),
            DataType::Uint16 => b.put_u16_le(x as u16),
            DataType::Uint32 => b.put_u32_le(x as u32),
            DataType::Uint64 => b.put_u64_le(x as u64),
            DataType::Int8 => b.put_i8(x as i8),
            DataType::Int16 => b.put_i16_le(x as i16),
            DataType::Int32 => b.put_i32_le(x as i32),
            DataType::Int64 => b.put_i64_le(x << 40),
            DataType::Fp16 => b.put_slice(&f16::from_f64(x as f64 / 3.0).to_le_bytes()),
            DataType::Bf16 => b.put_slice(&bf16::from_f64(x as f64 / 3.0).to_le_bytes()),
            DataType::Fp32 => b.put_f32_le(x as f32 / 3.0),
            DataType::Fp64 => b.put_f64_le(x as f64 / 3.0),
            DataType::Bytes => {
                let s = format!("élément {x}");
                b.put_u32_le(s.len() as u32);
                b.put_slice(s.as_bytes());
            }
        }
    }
    b.freeze()
}

fn tensor(name: &str, datatype: DataType, shape: Vec<i64>) -> Tensor {
    let n = shape.iter().product::<i64>() as usize;
    Tensor {
        name: name.into(),
        datatype,
        shape,
        data: sample(datatype, n),
    }
}

fn identity_request(datatype: DataType, binary_output: bool) -> InferRequest {
    InferRequest {
        id: format!("req-{datatype}"),
        inputs: vec![tensor("INPUT0", datatype, vec![2, 4])],
        outputs: vec![RequestedOutput {
            name: "OUTPUT0".into(),
            binary: binary_output,
        }],
        binary_output,
        ..Default::default()
    }
}

fn check_identity(resp: &InferResponse, req: &InferRequest, model: &str) {
    assert_eq!(
        (resp.model_name.as_str(), resp.id.as_str()),
        (model, req.id.as_str())
    );
    let expected = Tensor {
        name: "OUTPUT0".into(),
        ..req.inputs[0].clone()
    };
    assert_eq!(resp.outputs, vec![expected], "{model}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_health_metadata_and_config() {
    let server = start().await;
    let http = Http::new(server.http_addr);
    assert_eq!(http.get("/v2/health/live").await.status, StatusCode::OK);
    assert_eq!(http.get("/v2/health/ready").await.status, StatusCode::OK);
    let meta = http.get("/v2").await.json();
    assert_eq!(meta["name"], "inferperf");
    assert_eq!(
        meta["extensions"],
        json!([
            "binary_tensor_data",
            "model_configuration",
            "statistics",
            "system_shared_memory"
        ])
    );

    let identity = http.get("/v2/models/identity").await;
    assert_eq!(
        (identity.status, identity.content_type.as_str()),
        (StatusCode::OK, "application/json")
    );
    let identity = identity.json();
    assert_eq!(identity["versions"], json!(["1"]));
    assert_eq!(
        identity["inputs"],
        json!([{"name": "INPUT0", "datatype": "FP32", "shape": [-1, 16]}])
    );
    assert_eq!(identity["outputs"][0]["name"], "OUTPUT0");
    let add_sub = http.get("/v2/models/add_sub/versions/1").await.json();
    assert_eq!(
        add_sub["inputs"][1],
        json!({"name": "INPUT1", "datatype": "INT32", "shape": [16]})
    );
    assert_eq!(add_sub["outputs"].as_array().unwrap().len(), 2);

    let config = http.get("/v2/models/identity/config").await.json();
    assert_eq!(config["max_batch_size"], 8);
    assert_eq!(
        config["input"],
        json!([{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [16]}])
    );
    assert_eq!(config["instance_group"][0]["kind"], "KIND_CPU");
    assert!(config.get("dynamic_batching").is_none());
    let config = http
        .get("/v2/models/id_bytes/versions/1/config")
        .await
        .json();
    assert_eq!(config["output"][0]["data_type"], "TYPE_STRING");
    assert_eq!(
        http.get("/v2/models/add_sub/ready").await.status,
        StatusCode::OK
    );
    assert_eq!(
        http.get("/v2/models/add_sub/versions/1/ready").await.status,
        StatusCode::OK
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_identity_every_datatype_json_and_binary() {
    let server = start().await;
    let http = Http::new(server.http_addr);
    for t in DataType::ALL {
        let model = model_name(t);
        for (binary_in, binary_out) in [(false, false), (true, true), (true, false), (false, true)]
        {
            let req = identity_request(t, binary_out);
            let answer = http.infer_as(&model, &req, binary_in).await;
            assert_eq!(answer.status, StatusCode::OK, "{model}: {:?}", answer.body);
            let expected_type = if binary_out {
                "application/octet-stream"
            } else {
                "application/json"
            };
            assert_eq!(answer.content_type, expected_type);
            assert_eq!(answer.header_len.is_some(), binary_out);
            let resp = wire::decode_http_response(&answer.body, answer.header_len).unwrap();
            check_identity(&resp, &req, &model);
        }
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_add_sub_and_per_output_binary_flags() {
    let server = start().await;
    let http = Http::new(server.http_addr);
    let body = json!({
        "id": "abc",
        "inputs": [
            {"name": "INPUT0", "datatype": "INT32", "shape": [16], "data": (0..16).collect::<Vec<i32>>()},
            {"name": "INPUT1", "datatype": "INT32", "shape": [16], "data": vec![2; 16]}
        ],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": true}}, {"name": "OUTPUT1"}]
    });
    let answer = http
        .send(
            Method::POST,
            "/v2/models/add_sub/infer",
            body.to_string().into(),
            None,
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    let header_len = answer.header_len.unwrap();
    let header: Value = serde_json::from_slice(&answer.body[..header_len]).unwrap();
    assert_eq!(header["id"], "abc");
    assert_eq!(header["outputs"][0]["parameters"]["binary_data_size"], 64);
    assert_eq!(
        header["outputs"][1]["data"],
        json!((-2..14).collect::<Vec<i32>>())
    );
    let resp = wire::decode_http_response(&answer.body, Some(header_len)).unwrap();
    let sums: Vec<i32> = resp.outputs[0]
        .data
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(sums, (2..18).collect::<Vec<i32>>());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_have_the_right_status() {
    let server = start().await;
    let http = Http::new(server.http_addr);
    let unknown = http
        .infer_as("nope", &identity_request(DataType::Fp32, false), false)
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(
        unknown.json(),
        json!({"error": "Request for unknown model: 'nope' is not found"})
    );
    assert_eq!(
        http.get("/v2/models/nope").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        http.get("/v2/models/identity/versions/2").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        http.get("/v2/models/nope/ready").await.status,
        StatusCode::NOT_FOUND
    );

    let mut bad_shape = identity_request(DataType::Fp32, false);
    bad_shape.inputs = vec![tensor("INPUT0", DataType::Fp32, vec![1, 15])];
    let answer = http.infer_as("identity", &bad_shape, true).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let message = answer.json()["error"].as_str().unwrap().to_string();
    assert!(
        message.contains("'INPUT0'") && message.contains("[1, 15]"),
        "{message}"
    );

    let too_big = InferRequest {
        inputs: vec![tensor("INPUT0", DataType::Fp32, vec![9, 16])],
        ..Default::default()
    };
    assert_eq!(
        http.infer_as("identity", &too_big, true).await.status,
        StatusCode::BAD_REQUEST
    );
    let garbage = http
        .send(Method::POST, "/v2/models/identity/infer", "{".into(), None)
        .await;
    assert_eq!(garbage.status, StatusCode::BAD_REQUEST);
    let lying = http
        .send(
            Method::POST,
            "/v2/models/identity/infer",
            "{}".into(),
            Some(99),
        )
        .await;
    assert_eq!(lying.status, StatusCode::BAD_REQUEST);

    let broken = InferRequest {
        inputs: vec![tensor("INPUT0", DataType::Fp32, vec![1, 16])],
        ..Default::default()
    };
    let answer = http.infer_as("broken", &broken, false).await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(answer.json()["error"].is_string());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_metadata_config_and_health() {
    let server = start().await;
    let mut client = grpc(server.grpc_addr).await;
    assert!(
        client
            .server_live(ServerLiveRequest {})
            .await
            .unwrap()
            .into_inner()
            .live
    );
    let meta = client
        .server_metadata(ServerMetadataRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(meta.name, "inferperf");
    assert!(meta.extensions.contains(&"binary_tensor_data".to_string()));
    let ready = ModelReadyRequest {
        name: "identity".into(),
        version: String::new(),
    };
    assert!(client.model_ready(ready).await.unwrap().into_inner().ready);
    let meta = ModelMetadataRequest {
        name: "identity".into(),
        version: "1".into(),
    };
    let meta = client.model_metadata(meta).await.unwrap().into_inner();
    assert_eq!(
        (
            meta.inputs[0].datatype.as_str(),
            meta.inputs[0].shape.as_slice()
        ),
        ("FP32", &[-1, 16][..])
    );
    let config = ModelConfigRequest {
        name: "id_bf16".into(),
        version: String::new(),
    };
    let config = client
        .model_config(config)
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert_eq!(
        (config.max_batch_size, config.input[0].data_type),
        (4, DataType::Bf16.config_enum())
    );
    assert_eq!(config.output[0].dims, vec![4]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_infer_every_datatype_and_add_sub() {
    let server = start().await;
    let mut client = grpc(server.grpc_addr).await;
    for t in DataType::ALL {
        let model = model_name(t);
        let req = identity_request(t, false);
        let msg = wire::to_grpc_request(&model, "", &req);
        let resp = client.model_infer(msg).await.unwrap().into_inner();
        check_identity(&wire::from_grpc_response(resp).unwrap(), &req, &model);
    }
    let typed = ModelInferRequest {
        model_name: "add_sub".into(),
        inputs: ["INPUT0", "INPUT1"]
            .iter()
            .zip([7, -3])
            .map(
                |(name, v)| inferperf_wire::proto::model_infer_request::InferInputTensor {
                    name: name.to_string(),
                    datatype: "INT32".into(),
                    shape: vec![16],
                    contents: Some(inferperf_wire::proto::InferTensorContents {
                        int_contents: vec![v; 16],
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    };
    let resp = client.model_infer(typed).await.unwrap().into_inner();
    let resp = wire::from_grpc_response(resp).unwrap();
    let first = |t: &Tensor| i32::from_le_bytes(t.data[..4].try_into().unwrap());
    assert_eq!((first(&resp.outputs[0]), first(&resp.outputs[1])), (4, 10));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_errors_have_the_right_code() {
    let server = start().await;
    let mut client = grpc(server.grpc_addr).await;
    let req = identity_request(DataType::Fp32, false);
    let err = client
        .model_infer(wire::to_grpc_request("nope", "", &req))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound);
    assert_eq!(
        err.message(),
        "Request for unknown model: 'nope' is not found"
    );
    let meta = ModelMetadataRequest {
        name: "nope".into(),
        version: String::new(),
    };
    assert_eq!(
        client.model_metadata(meta).await.unwrap_err().code(),
        tonic::Code::NotFound
    );

    let mut bad = req.clone();
    bad.inputs = vec![tensor("INPUT0", DataType::Fp32, vec![2, 3])];
    let err = client
        .model_infer(wire::to_grpc_request("identity", "", &bad))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
    let mut msg = wire::to_grpc_request("identity", "", &req);
    msg.raw_input_contents[0].pop();
    let err = client.model_infer(msg).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");

    let broken = InferRequest {
        inputs: vec![tensor("INPUT0", DataType::Fp32, vec![1, 16])],
        ..Default::default()
    };
    let err = client
        .model_infer(wire::to_grpc_request("broken", "", &broken))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Internal);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_frees_the_ports() {
    let server = start().await;
    let (http_addr, grpc_addr) = (server.http_addr, server.grpc_addr);
    assert_eq!(
        Http::new(http_addr).get("/v2/health/live").await.status,
        StatusCode::OK
    );
    server.shutdown().await;
    assert!(tokio::net::TcpStream::connect(http_addr).await.is_err());
    assert!(tokio::net::TcpStream::connect(grpc_addr).await.is_err());
}
