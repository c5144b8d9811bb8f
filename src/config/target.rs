//! The target section of the configuration: which server and model a run talks to, over
//! which API and protocol, and how each request travels (headers, TLS, timeouts, tensor
//! formats, streaming) and how its answer is checked. The backend resolves a `Target` from
//! this section alone.

use std::time::Duration;

use serde_json::{Map, Value};

use super::aiperf::{Lowered, OpenAiWire};
use super::api::ApiFlags;
use super::load::arrival;
use super::parse::*;
use super::shm::ShmConfig;
use super::tfserving::TfServingConfig;
use super::{
    aiperf, bounds, openai, request_options, server_hooks, shm, tfserving, tls, torchserve,
};
use super::{
    ApiSettings, Endpoint, GrpcCompression, OpenAiConfig, Protocol, RequestParameter, ServiceKind,
    TensorFormat, TlsSettings,
};
use crate::cli::ProfileArgs;
use inferperf_server::ModelDef;
use inferperf_wire::error::{RunError, RunResult};

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

/// `--service-kind` and `-i`, and the flags that belong to one API (`--grpc-method`,
/// `--shared-memory`, TorchServe's): read first, so that a flag given to the wrong API is
/// named before anything else; every section then asks which API a run speaks.
pub(super) struct OwnFlags {
    pub kind: ServiceKind,
    pub protocol: Protocol,
    grpc_method: Option<String>,
    shm: ShmConfig,
    torchserve: Option<super::torchserve::TorchServeConfig>,
}

impl OwnFlags {
    pub(super) fn parse(args: &ProfileArgs) -> RunResult<OwnFlags> {
        let kind = ServiceKind::parse(args.service_kind.as_deref().unwrap_or("triton"))?;
        let protocol = match (parse_protocol(&args.protocol)?, kind) {
            // perf_analyzer's dynamic gRPC forces gRPC.
            (_, ServiceKind::DynamicGrpc) => Protocol::Grpc,
            (protocol, _) => protocol,
        };
        Ok(OwnFlags {
            kind,
            protocol,
            grpc_method: request_options::parse_grpc_method(args, kind)?,
            shm: shm::parse(args, kind)?,
            torchserve: torchserve::parse(args, kind, protocol)?,
        })
    }
}

impl TargetConfig {
    /// The target's flags: the servers, the model, TLS, how requests travel and the API's
    /// own settings (`llm` and `wire`: the OpenAI settings, read with the dataset's).
    pub(super) fn parse(
        args: &ProfileArgs,
        lowered: &Lowered,
        own: OwnFlags,
        llm: Option<OpenAiConfig>,
        wire: OpenAiWire,
    ) -> RunResult<TargetConfig> {
        let (kind, protocol) = (own.kind, own.protocol);
        let (urls, secure_url) = server_urls(args, kind, protocol)?;
        let model_name = match &own.grpc_method {
            Some(method) if args.model_name.trim().is_empty() => method.clone(),
            _ => non_empty(&args.model_name, "-m")?,
        };
        let tls = tls::parse_tls(args, protocol, kind, secure_url)?;
        let api = api_settings(args, own, llm, wire)?;
        Ok(TargetConfig {
            model_name,
            model_version: args.model_version.trim().to_string(),
            url: urls[0].clone(),
            urls,
            tls,
            api,
            protocol,
            input_format: tensor_format(&args.input_tensor_format, "--input-tensor-format")?,
            output_format: tensor_format(&args.output_tensor_format, "--output-tensor-format")?,
            headers: parse_headers(&args.headers)?,
            request_timeout: bounds::request_timeout(args.request_timeout)?,
            max_response_bytes: bounds::max_response_bytes(args.max_response_bytes)?,
            grpc_connection_share: parse_connection_share(args.grpc_connection_share, protocol)?,
            streaming: parse_streaming(args.streaming, protocol, kind)?,
            validation_tolerance: parse_tolerance(args.validation_tolerance)?,
            grpc_compression: request_options::parse_grpc_compression(&args.pa, protocol, kind)?,
            server_in_process: false,
            cancellation: arrival::parse_cancellation(args)?,
            hooks: server_hooks::parse(&args.aiperf_server)?,
            connection_per_request: lowered.runtime.connection_per_request,
        })
    }
}

/// The `-u` servers, or the API's default address (TF Serving's, TorchServe's ports) when
/// none was given; and whether a URL asked for TLS.
fn server_urls(
    args: &ProfileArgs,
    kind: ServiceKind,
    protocol: Protocol,
) -> RunResult<(Vec<String>, bool)> {
    let default_url = tfserving::default_url(kind, protocol).or(torchserve::default_url(kind));
    match default_url {
        Some(default) if args.url.is_empty() => parse_urls(&[default.to_string()], protocol),
        _ => parse_urls(&args.url, protocol),
    }
}

fn tensor_format(flag_value: &Option<String>, flag: &str) -> RunResult<Option<TensorFormat>> {
    flag_value
        .as_deref()
        .map(|f| parse_tensor_format(f, flag))
        .transpose()
}

/// The settings only the run's API takes, each refused under another API.
fn api_settings(
    args: &ProfileArgs,
    own: OwnFlags,
    llm: Option<OpenAiConfig>,
    wire: OpenAiWire,
) -> RunResult<ApiSettings> {
    let OwnFlags {
        kind,
        protocol,
        grpc_method,
        shm,
        torchserve,
    } = own;
    let flags = ApiFlags {
        local_models: parse_local_models(kind, &args.local_models)?,
        llm,
        wire,
        tfserving: tfserving::parse(args, kind)?,
        torchserve,
        grpc_method,
        triton_c_api: request_options::parse_triton_c_api(&args.pa, kind, args.verbose >= 1)?,
        request_parameters: request_options::parse_request_parameters(&args.pa.request_parameters)?,
        bls_composing_models: request_options::parse_bls_composing_models(&args.pa, kind)?,
        shm,
        trace_settings: request_options::parse_trace_settings(&args.pa, protocol, kind)?,
    };
    ApiSettings::assemble(kind, flags)
}

/// The LLM flags: read for `--service-kind openai` (HTTP only), refused elsewhere.
pub(super) fn parse_llm(
    args: &ProfileArgs,
    kind: ServiceKind,
    protocol: Protocol,
) -> RunResult<Option<OpenAiConfig>> {
    if kind != ServiceKind::OpenAi {
        openai::refuse_without_openai(&args.llm)?;
        aiperf::refuse_without_openai(&args.aiperf)?;
        return Ok(None);
    }
    if protocol != Protocol::Http {
        return Err(RunError::bad_option(
            "--service-kind openai speaks HTTP: drop -i grpc (and give the HTTP port in -u).",
        ));
    }
    if args.batch_size != 1 {
        return Err(RunError::bad_option(
            "--service-kind openai sends one prompt per request: drop -b (or use -b 1).",
        ));
    }
    let mut llm = OpenAiConfig::parse(&args.llm)?;
    if args.llm.num_prompts.is_none() {
        llm.num_prompts =
            openai::default_entries(args.sessions.conversation_num, args.request_count);
    }
    if args.streaming && !llm.endpoint.streams() {
        return Err(RunError::bad_option(match llm.endpoint {
            Endpoint::Embeddings => "--streaming does not apply to v1/embeddings (an embedding comes in one piece): drop --streaming.".to_string(),
            other => format!("--streaming does not apply to --endpoint-type {} (its answer comes in one piece): drop --streaming.", other.kind_name()),
        }));
    }
    Ok(Some(llm))
}
