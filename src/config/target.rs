//! The target section of the configuration: which server and model a run talks to, over
//! which API and protocol, and how each request travels (headers, TLS, timeouts, tensor
//! formats, streaming) and how its answer is checked. The backend resolves a `Target` from
//! this section alone.

use std::time::Duration;

use serde_json::{Map, Value};

use super::shm::ShmConfig;
use super::tfserving::TfServingConfig;
use super::{
    ApiSettings, GrpcCompression, OpenAiConfig, Protocol, RequestParameter, ServiceKind,
    TensorFormat, TlsSettings,
};
use inferperf_server::ModelDef;

/// The settings of the target box.
#[derive(Debug, Clone)]
pub struct TargetConfig {
    pub model_name: String,
    /// `-x`; empty lets the server choose.
    pub model_version: String,
    /// `host:port` (a scheme, if the user gave one, is removed); the first of `urls`.
    pub url: String,
    /// Every `-u` server as `host:port`, in order (one unless several were given): the
    /// replicas the load is spread over.
    pub urls: Vec<String>,
    /// TLS to the server (`https://`, `grpcs://` or the `--ssl-*` flags); `None`: plain.
    pub tls: Option<TlsSettings>,
    /// `--service-kind` and the settings only that API takes.
    pub api: ApiSettings,
    pub protocol: Protocol,
    /// `-H` headers, sent with every HTTP request and as gRPC metadata.
    pub headers: Vec<(String, String)>,
    /// Longest wait for one answer before it counts as a timeout.
    pub request_timeout: Duration,
    /// `--max-response-bytes`.
    pub max_response_bytes: usize,
    /// In-flight gRPC requests per HTTP/2 connection (`--grpc-connection-share`).
    pub grpc_connection_share: usize,
    /// `--grpc-compression-algorithm`: how gRPC request messages are compressed.
    pub grpc_compression: Option<GrpcCompression>,
    /// `--streaming`: every request over gRPC's `ModelStreamInfer` (or a streamed answer).
    pub streaming: bool,
    /// `None`: binary when the server lists the binary tensor extension, else JSON.
    pub input_format: Option<TensorFormat>,
    pub output_format: Option<TensorFormat>,
    /// `--validation-tolerance`: how far a float output may be from `validation_data`.
    pub validation_tolerance: f64,
    /// The server runs in this process (`inferperf demo`): the client CPU the report shows
    /// is the client's and the server's together, so it cannot say the client was the limit.
    /// Set by the caller, not by a flag.
    pub server_in_process: bool,
    /// `--request-cancellation-rate` and `--request-cancellation-delay`, when given.
    pub cancellation: Option<super::RequestCancellation>,
    /// AIPerf's control calls around the run (wait for the model, KV-cache reset, the
    /// engine's profiler).
    pub hooks: super::ServerHooks,
    /// AIPerf's `--connection-reuse-strategy never`: a new connection for every request.
    pub connection_per_request: bool,
}

impl TargetConfig {
    /// Which API the run talks to (`--service-kind`).
    pub fn service_kind(&self) -> ServiceKind {
        self.api.kind()
    }

    /// The LLM settings of `--service-kind openai`.
    pub fn llm(&self) -> Option<&OpenAiConfig> {
        match &self.api {
            ApiSettings::OpenAi(openai) => Some(&openai.llm),
            _ => None,
        }
    }

    /// The OpenAI settings, to be changed (a sweep's run writes its own artifact folder).
    pub fn llm_mut(&mut self) -> Option<&mut OpenAiConfig> {
        match &mut self.api {
            ApiSettings::OpenAi(openai) => Some(&mut openai.llm),
            _ => None,
        }
    }

    /// `--bls-composing-models` (KServe, the local models and Triton in process take it).
    pub fn bls_composing_models(&self) -> &[String] {
        match &self.api {
            ApiSettings::Kserve(kserve) => &kserve.bls_composing_models,
            ApiSettings::Local(local) => &local.bls_composing_models,
            ApiSettings::TritonCApi(triton) => &triton.bls_composing_models,
            _ => &[],
        }
    }

    /// `--request-parameter`s (KServe and Triton in process take them).
    pub fn request_parameters(&self) -> &[RequestParameter] {
        match &self.api {
            ApiSettings::Kserve(kserve) => &kserve.request_parameters,
            ApiSettings::TritonCApi(triton) => &triton.request_parameters,
            _ => &[],
        }
    }

    /// `--shared-memory` / `--output-shared-memory-size` (the defaults for APIs without it).
    pub fn shm(&self) -> ShmConfig {
        match &self.api {
            ApiSettings::Kserve(kserve) => kserve.shm,
            _ => ShmConfig::default(),
        }
    }

    /// The trace settings to set for the run, when it asks for any (KServe over HTTP only).
    pub fn trace_settings(&self) -> Option<&Map<String, Value>> {
        match &self.api {
            ApiSettings::Kserve(kserve) if !kserve.trace_settings.is_empty() => {
                Some(&kserve.trace_settings)
            }
            _ => None,
        }
    }

    /// The `--model` definitions of `--service-kind local` (none for the other APIs).
    pub fn local_models(&self) -> &[ModelDef] {
        match &self.api {
            ApiSettings::Local(local) => &local.models,
            _ => &[],
        }
    }

    /// The TF Serving settings of `--service-kind tfserving`.
    pub fn tfserving(&self) -> Option<&TfServingConfig> {
        match &self.api {
            ApiSettings::TfServing(tfserving) => Some(tfserving),
            _ => None,
        }
    }
}
