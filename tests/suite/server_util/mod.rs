//! Helpers for the embedded server's tests: start it on free ports with given models, talk
//! to it over HTTP (hyper) and gRPC (the generated tonic client, unary and streaming),
//! build requests, and keep `c` requests in flight for a while.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tonic::transport::Channel;

use inferperf_server::{self as server, ModelDef, RunningServer, ServeOptions};
use inferperf_wire::model::DataType;
use inferperf_wire::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use inferperf_wire::proto::infer_parameter::ParameterChoice;
use inferperf_wire::proto::{
    ModelInferRequest, ModelInferResponse, ModelStatistics, ModelStatisticsRequest,
    ModelStreamInferResponse,
};
use inferperf_wire::{self as wire, InferRequest, Tensor};

pub type Grpc = GrpcInferenceServiceClient<Channel>;

/// Starts the server on free loopback ports with these models and a metrics port.
pub async fn start(models: &[&str]) -> RunningServer {
    let models: Vec<ModelDef> = models.iter().map(|m| m.parse().unwrap()).collect();
    server::start(ServeOptions {
        http_port: 0,
        grpc_port: 0,
        metrics_port: Some(0),
        models,
        ..ServeOptions::default()
    })
    .await
    .expect("the server starts")
}

pub async fn grpc(server: &RunningServer) -> Grpc {
    let url = format!("http://{}", server.grpc_addr);
    let channel = tonic::transport::Endpoint::from_shared(url).unwrap();
    GrpcInferenceServiceClient::new(channel.connect().await.unwrap())
}

/// A status and body of one HTTP exchange.
pub struct Answer {
    pub status: StatusCode,
    pub content_type: String,
    pub header_len: Option<usize>,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Clone)]
pub struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    addr: SocketAddr,
}

impl Http {
    pub fn new(addr: SocketAddr) -> Http {
        let client = Client::builder(TokioExecutor::new()).build_http();
        Http { client, addr }
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
        header_len: Option<usize>,
    ) -> Answer {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.addr));
        if let Some(n) = header_len {
            req = req.header(wire::HEADER_CONTENT_LENGTH, n);
        }
        let resp = self
            .client
            .request(req.body(Full::new(body)).unwrap())
            .await
            .unwrap();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_string())
        };
        Answer {
            status: resp.status(),
            content_type: header("content-type").unwrap_or_default(),
            header_len: header(wire::HEADER_CONTENT_LENGTH).map(|v| v.parse().unwrap()),
            body: resp.into_body().collect().await.unwrap().to_bytes(),
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, Bytes::new(), None).await
    }

    pub async fn infer(&self, model: &str, req: &InferRequest) -> Answer {
        self.infer_as(model, req, true).await
    }

    /// Sends `req` with its inputs as binary tensor data or as JSON.
    pub async fn infer_as(&self, model: &str, req: &InferRequest, binary_inputs: bool) -> Answer {
        let body = wire::encode_http_request(req, binary_inputs).unwrap();
        let path = format!("/v2/models/{model}/infer");
        self.send(Method::POST, &path, body.body, body.header_len)
            .await
    }
}

/// An FP32 tensor `INPUT0` of `[batch] + dims` holding 0.5, 1.5, 2.5, ...
pub fn fp32(batch: i64, dims: &[i64]) -> Tensor {
    let shape: Vec<i64> = std::iter::once(batch).chain(dims.iter().copied()).collect();
    let n: i64 = shape.iter().product();
    let mut data = BytesMut::new();
    (0..n).for_each(|i| data.put_f32_le(i as f32 + 0.5));
    Tensor {
        name: "INPUT0".into(),
        datatype: DataType::Fp32,
        shape,
        data: data.freeze(),
    }
}

pub fn request(inputs: Vec<Tensor>) -> InferRequest {
    InferRequest {
        id: "r".into(),
        inputs,
        ..Default::default()
    }
}

/// The model's statistics over gRPC.
pub async fn grpc_stats(client: &mut Grpc, model: &str) -> ModelStatistics {
    let req = ModelStatisticsRequest {
        name: model.into(),
        version: String::new(),
    };
    let mut stats = client
        .model_statistics(req)
        .await
        .unwrap()
        .into_inner()
        .model_stats;
    assert_eq!(stats.len(), 1);
    stats.remove(0)
}

/// Count and mean (ms) of one duration statistic between two snapshots.
pub fn delta(
    before: &ModelStatistics,
    after: &ModelStatistics,
    pick: fn(&ModelStatistics) -> (u64, u64),
) -> (u64, f64) {
    let ((c0, n0), (c1, n1)) = (pick(before), pick(after));
    let count = c1 - c0;
    let mean_ms = if count == 0 {
        0.0
    } else {
        (n1 - n0) as f64 / count as f64 / 1e6
    };
    (count, mean_ms)
}

pub fn queue(s: &ModelStatistics) -> (u64, u64) {
    let q = s.inference_stats.as_ref().unwrap().queue.unwrap();
    (q.count, q.ns)
}

pub fn compute_infer(s: &ModelStatistics) -> (u64, u64) {
    let q = s.inference_stats.as_ref().unwrap().compute_infer.unwrap();
    (q.count, q.ns)
}

pub fn success(s: &ModelStatistics) -> (u64, u64) {
    let q = s.inference_stats.as_ref().unwrap().success.unwrap();
    (q.count, q.ns)
}

pub fn fail(s: &ModelStatistics) -> (u64, u64) {
    let q = s.inference_stats.as_ref().unwrap().fail.unwrap();
    (q.count, q.ns)
}

/// What [`drive`] saw: answers that were fine, answers that were errors, and how long
/// from the start until the last answer.
#[derive(Debug)]
pub struct Driven {
    pub ok: u64,
    pub errors: u64,
    pub elapsed: Duration,
}

/// Keeps `c` calls in flight for `duration` (each task starts a new call when its last
/// answer arrives), then waits for the last answers.
pub async fn drive<F, Fut>(c: usize, duration: Duration, call: F) -> Driven
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let call = Arc::new(call);
    let start = Instant::now();
    let tasks: Vec<_> = (0..c)
        .map(|_| {
            let call = call.clone();
            tokio::spawn(async move {
                let (mut ok, mut errors) = (0, 0);
                while start.elapsed() < duration {
                    if call().await {
                        ok += 1
                    } else {
                        errors += 1
                    }
                }
                (ok, errors)
            })
        })
        .collect();
    let (mut ok, mut errors) = (0, 0);
    for task in tasks {
        let (o, e) = task.await.unwrap();
        ok += o;
        errors += e;
    }
    Driven {
        ok,
        errors,
        elapsed: start.elapsed(),
    }
}

/// Sends `n` calls with `c` in flight; returns how many were fine.
pub async fn send_n<F, Fut>(n: usize, c: usize, call: F) -> usize
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    use futures::StreamExt;
    let call = Arc::new(call);
    let results = futures::stream::iter(0..n)
        .map(|i| {
            let call = call.clone();
            async move { call(i).await }
        })
        .buffer_unordered(c)
        .collect::<Vec<bool>>()
        .await;
    results.into_iter().filter(|&ok| ok).count()
}

/// One open `ModelStreamInfer` call: requests go into `requests`, answers come out of
/// `answers`.
pub struct GrpcStream {
    pub requests: tokio::sync::mpsc::Sender<ModelInferRequest>,
    pub answers: tonic::Streaming<ModelStreamInferResponse>,
}

impl GrpcStream {
    pub async fn open(client: &mut Grpc) -> GrpcStream {
        let (requests, outgoing) = tokio::sync::mpsc::channel(64);
        let outgoing = tokio_stream::wrappers::ReceiverStream::new(outgoing);
        let answers = client.model_stream_infer(outgoing).await.unwrap();
        GrpcStream {
            requests,
            answers: answers.into_inner(),
        }
    }

    /// Sends `req` to `model` under the id `id`.
    pub async fn send(&self, model: &str, id: &str, req: &InferRequest) {
        let mut msg = wire::to_grpc_request(model, "", req);
        msg.id = id.to_string();
        self.requests.send(msg).await.unwrap();
    }

    /// The next answer, failing the test after 10 s of silence.
    pub async fn next(&mut self) -> ModelStreamInferResponse {
        let next = tokio::time::timeout(Duration::from_secs(10), self.answers.message());
        next.await
            .expect("an answer within 10 s")
            .unwrap()
            .expect("the stream is open")
    }
}

/// A response's `triton_final_response` parameter, if it has one.
pub fn final_flag(r: &ModelInferResponse) -> Option<bool> {
    match r.parameters.get("triton_final_response")?.parameter_choice {
        Some(ParameterChoice::BoolParam(b)) => Some(b),
        _ => None,
    }
}

/// The median of some durations in milliseconds.
pub fn median_ms(mut values: Vec<Duration>) -> f64 {
    values.sort();
    values
        .get(values.len() / 2)
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

/// One server-sent event: when its bytes arrived and its `data:` (JSON, or `[DONE]`).
#[derive(Debug)]
pub struct Event {
    pub at: Instant,
    pub data: Option<Value>,
}

/// A streamed answer read event by event.
#[derive(Debug)]
pub struct Streamed {
    pub sent: Instant,
    pub status: StatusCode,
    pub content_type: String,
    pub events: Vec<Event>,
}

/// Posts `body` and reads the stream to its end, timing each event as its bytes arrive;
/// `stop_after` leaves after that many events.
pub async fn stream_n(
    addr: SocketAddr,
    path: &str,
    body: Value,
    stop_after: Option<usize>,
) -> Streamed {
    let client = Client::builder(TokioExecutor::new()).build_http();
    let request = Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let sent = Instant::now();
    let response = client.request(request).await.unwrap();
    let status = response.status();
    let content_type = (response.headers().get("content-type"))
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let mut body = response.into_body();
    let (mut events, mut pending) = (Vec::new(), String::new());
    let deadline = Duration::from_secs(20);
    while let Some(frame) = tokio::time::timeout(deadline, body.frame()).await.unwrap() {
        let at = Instant::now();
        let Ok(data) = frame.unwrap().into_data() else {
            continue;
        };
        pending.push_str(std::str::from_utf8(&data).unwrap());
        while let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            let data = event.trim_end().strip_prefix("data: ").unwrap();
            let data = (data != "[DONE]").then(|| serde_json::from_str(data).unwrap());
            events.push(Event { at, data });
        }
        if stop_after.is_some_and(|n| events.len() >= n) {
            break;
        }
    }
    Streamed {
        sent,
        status,
        content_type,
        events,
    }
}

pub async fn stream(addr: SocketAddr, path: &str, body: Value) -> Streamed {
    stream_n(addr, path, body, None).await
}

/// What the server counted for the model (`GET /v1/inferperf/stats`).
pub async fn counts(server: &RunningServer, model: &str) -> Value {
    let answer = Http::new(server.http_addr).get("/v1/inferperf/stats").await;
    assert_eq!(answer.status, StatusCode::OK);
    let all = answer.json();
    let data = all["data"].as_array().unwrap();
    let entry = data.iter().find(|e| e["model"] == model);
    entry.unwrap_or_else(|| panic!("{all}")).clone()
}
