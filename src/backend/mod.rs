//! Client backends: how a request reaches the server and how its answers come back. Each
//! API is an [`Adapter`] — discovery, encoding a dataset entry once, opening a connection —
//! in its own file or folder ([`kserve`], [`local`], [`tfserving`], [`torchserve`],
//! [`dynamic_grpc`], …), registered in [`Api`] and
//! [`Connection`] below; the connection kinds they share ([`http1`], [`h2`]) and what every
//! API's answers are checked against ([`check`]) sit beside them. [`Target`] is the resolved
//! server and model.

pub mod check;
pub mod compression;
pub mod dynamic_grpc;
pub mod h2;
pub mod h2_unary;
pub mod http1;
pub mod kserve;
pub mod local;
pub mod memo;
pub mod openai;
pub mod outcome;
pub mod replicas;
pub mod statistics;
pub mod tfserving;
pub mod tls;
pub mod torchserve;
pub mod triton_c_api;

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::time::Sleep;

use crate::config::{Config, Protocol, ServiceKind};
use crate::data::{Dataset, Entry};
use crate::error::{RunError, RunResult};
use crate::model::{ModelSpec, SequenceStep, TensorSpec};
use crate::wire::{InferRequest, RequestedOutput};
pub use check::AnswerCheck;
pub use outcome::{
    grpc_code_name, AnswerText, ErrorKind, Exchange, Failure, Malformation, TokenSource, Tokens,
};

/// What one API does for a run. Each adapter implements it; [`Api`] dispatches to them
/// statically (an enum, not a trait object: a boxed future per request would cost an
/// allocation on the hot path, and the set of APIs is known when the program is built).
#[allow(async_fn_in_trait)]
pub trait Adapter {
    /// Reads what the model takes and returns.
    async fn discover(&self, target: &Target) -> RunResult<Discovered>;
    /// Encodes one dataset entry, once, when the run starts.
    fn encode(&self, target: &Target, model: &ModelSpec, entry: &Entry) -> RunResult<Payload>;
    /// Opens the connection of in-flight slot `slot`.
    async fn open(&self, target: &Target, slot: usize) -> Result<Connection, ErrorKind>;
}

/// The registered adapters.
#[derive(Debug, Clone)]
pub enum Api {
    /// KServe v2 over HTTP or gRPC (Triton, KServe, MLServer, the embedded server).
    Kserve(kserve::Kserve),
    /// The built-in models in this process.
    Local(local::Local),
    /// OpenAI-compatible servers (chat, completions, embeddings).
    OpenAi(openai::OpenAi),
    /// TF Serving (gRPC PredictionService or REST).
    TfServing(tfserving::TfServing),
    /// TorchServe's HTTP inference API.
    TorchServe(torchserve::TorchServe),
    /// Any gRPC method, with generated messages (perf_analyzer's dynamic gRPC).
    DynamicGrpc(dynamic_grpc::DynamicGrpc),
    /// Triton in this process, through its C API.
    TritonCApi(triton_c_api::TritonCApi),
}

impl Api {
    /// The adapter the flags ask for.
    pub fn for_config(cfg: &Config) -> Api {
        match cfg.service_kind {
            ServiceKind::Triton => Api::Kserve(kserve::Kserve::new(cfg)),
            ServiceKind::Local => Api::Local(local::Local::new(cfg)),
            ServiceKind::OpenAi => Api::OpenAi(openai::OpenAi::new(cfg)),
            ServiceKind::TfServing => Api::TfServing(tfserving::TfServing::new(cfg)),
            ServiceKind::TorchServe => Api::TorchServe(torchserve::TorchServe::new(cfg)),
            ServiceKind::DynamicGrpc => Api::DynamicGrpc(dynamic_grpc::DynamicGrpc::new(cfg)),
            ServiceKind::TritonCApi => Api::TritonCApi(triton_c_api::TritonCApi::new(cfg)),
        }
    }

    async fn discover(&self, target: &Target) -> RunResult<Discovered> {
        match self {
            Api::Kserve(a) => a.discover(target).await,
            Api::Local(a) => a.discover(target).await,
            Api::OpenAi(a) => a.discover(target).await,
            Api::TfServing(a) => a.discover(target).await,
            Api::TorchServe(a) => a.discover(target).await,
            Api::DynamicGrpc(a) => a.discover(target).await,
            Api::TritonCApi(a) => a.discover(target).await,
        }
    }

    fn encode(&self, target: &Target, model: &ModelSpec, entry: &Entry) -> RunResult<Payload> {
        match self {
            Api::Kserve(a) => a.encode(target, model, entry),
            Api::Local(a) => a.encode(target, model, entry),
            Api::OpenAi(a) => a.encode(target, model, entry),
            Api::TfServing(a) => a.encode(target, model, entry),
            Api::TorchServe(a) => a.encode(target, model, entry),
            Api::DynamicGrpc(a) => a.encode(target, model, entry),
            Api::TritonCApi(a) => a.encode(target, model, entry),
        }
    }

    /// `request` as one step of a sequence: KServe requests carry the step's parameters;
    /// the other APIs have no sequences and send the request unchanged.
    pub fn in_sequence(&self, request: &Request, step: &SequenceStep) -> Request {
        let payload = match (&request.payload, self) {
            (Payload::Http(bytes), Api::Kserve(_)) => {
                kserve::sequence::patch_http(bytes, step).map(Payload::Http)
            }
            (Payload::Grpc(bytes), Api::Kserve(_)) => {
                kserve::sequence::patch_grpc(bytes, step).map(Payload::Grpc)
            }
            (Payload::Local(req), _) => {
                let mut req = InferRequest::clone(req);
                req.parameters
                    .extend(kserve::sequence::json_parameters(step));
                Some(Payload::Local(Arc::new(req)))
            }
            _ => None,
        };
        Request {
            payload: payload.unwrap_or_else(|| request.payload.clone()),
            ..request.clone()
        }
    }

    async fn open(&self, target: &Target, slot: usize) -> Result<Connection, ErrorKind> {
        match self {
            Api::Kserve(a) => a.open(target, slot).await,
            Api::Local(a) => a.open(target, slot).await,
            Api::OpenAi(a) => a.open(target, slot).await,
            Api::TfServing(a) => a.open(target, slot).await,
            Api::TorchServe(a) => a.open(target, slot).await,
            Api::DynamicGrpc(a) => a.open(target, slot).await,
            Api::TritonCApi(a) => a.open(target, slot).await,
        }
    }
}

/// One request as it goes on the wire, encoded once, with what a correct answer to it is.
#[derive(Debug, Clone)]
pub struct Request {
    /// Its place in the dataset.
    pub index: usize,
    pub payload: Payload,
    /// Shared, so that a request re-framed per sequence step costs no copy of it.
    pub check: Arc<AnswerCheck>,
    /// A prompt's input tokens as the dataset counts them (0 for tensors).
    pub input_tokens: u32,
    /// A prompt's `max_tokens` (the answer's length asked for).
    pub max_tokens: Option<u32>,
}

/// A request's bytes (or, in process, its value), ready to send.
#[derive(Debug, Clone)]
pub enum Payload {
    /// The whole HTTP request (request line, headers and body), framed once.
    Http(Bytes),
    /// A protobuf message in gRPC's length-prefixed framing.
    Grpc(Bytes),
    /// The request itself, for in-process calls.
    Local(Arc<InferRequest>),
}

/// The server and model a run talks to, resolved once.
#[derive(Debug, Clone)]
pub struct Target {
    pub api: Api,
    pub protocol: Protocol,
    /// `host:port` as the user gave it.
    pub authority: String,
    /// The addresses `authority` resolves to, IPv4 first.
    pub addrs: Vec<SocketAddr>,
    pub model: String,
    pub version: String,
    /// `-H` headers (lower-case names).
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    /// `--max-response-bytes`: the largest answer body or message taken.
    pub max_response_bytes: usize,
    /// `--streaming`: requests go over a stream, so decoupled models can be measured.
    pub streaming: bool,
    /// `--validation-tolerance`.
    pub tolerance: f64,
    /// The in-process models, for `--service-kind local`.
    pub local: Option<crate::server::LocalServer>,
    /// Triton in this process, for `--service-kind triton_c_api`.
    pub triton: Option<Arc<triton_c_api::InProcessTriton>>,
    /// The gRPC connections the run's slots share.
    pub grpc: Arc<h2::SharedConnections>,
    /// TLS to the server, when the run asks for it.
    pub tls: Option<Arc<tls::TlsClient>>,
    /// `--grpc-compression-algorithm`: request messages compressed with it, and the one
    /// encoding advertised for answers.
    pub grpc_compression: Option<crate::config::GrpcCompression>,
}

impl Target {
    /// Resolves the server's address; a name that does not resolve is a clear error.
    pub async fn resolve(cfg: &Config) -> RunResult<Target> {
        Target::resolve_at(cfg, &cfg.url).await
    }

    /// Resolves the server at `url` (one of `-u`'s), with the run's other settings.
    pub async fn resolve_at(cfg: &Config, url: &str) -> RunResult<Target> {
        let mut target = Target {
            api: Api::for_config(cfg),
            protocol: cfg.protocol,
            authority: url.to_string(),
            addrs: Vec::new(),
            model: cfg.model_name.clone(),
            version: cfg.model_version.clone(),
            headers: cfg.headers.clone(),
            timeout: cfg.request_timeout,
            max_response_bytes: cfg.max_response_bytes,
            streaming: cfg.streaming,
            tolerance: cfg.validation_tolerance,
            local: None,
            triton: None,
            grpc: Arc::new(h2::SharedConnections::new(cfg.grpc_connection_share)),
            tls: None,
            grpc_compression: cfg.grpc_compression,
        };
        if cfg.service_kind == ServiceKind::Local {
            let server =
                crate::server::LocalServer::new(cfg.local_models.clone()).map_err(|e| {
                    RunError::bad_option(format!(
                        "The --model definitions cannot be served: {e:#}."
                    ))
                })?;
            target.authority = "local".into();
            target.headers.clear();
            target.local = Some(server);
            return Ok(target);
        }
        if let Some(settings) = &cfg.triton_c_api {
            let mut models = vec![cfg.model_name.clone()];
            models.extend(
                (cfg.bls_composing_models.iter())
                    .map(|m| m.split(':').next().unwrap_or(m).to_string()),
            );
            let settings = settings.clone();
            let started = tokio::task::spawn_blocking(move || {
                triton_c_api::InProcessTriton::start(&settings, &models)
            });
            let started = started.await.map_err(|e| {
                RunError::failed(format!("Starting Triton in process failed: {e}."))
            })?;
            target.authority = "in-process Triton".into();
            target.headers.clear();
            target.triton = Some(Arc::new(started?));
            return Ok(target);
        }
        target.addrs = tokio::net::lookup_host(url)
            .await
            .map_err(|e| {
                RunError::failed(format!(
                    "Cannot resolve the server address '{url}': {e}. Check -u."
                ))
            })?
            .collect();
        target.addrs.sort_by_key(|a| a.is_ipv6());
        if let Some(settings) = &cfg.tls {
            target.tls = Some(Arc::new(tls::TlsClient::new(settings, url)?));
        }
        Ok(target)
    }

    /// The lane of in-flight slot `slot`: the slots of one lane share a connection (gRPC)
    /// and so run on the same client thread; elsewhere each slot is its own lane.
    pub fn lane(&self, slot: usize) -> usize {
        match (self.protocol, &self.local, &self.triton) {
            (Protocol::Grpc, None, None) => self.grpc.lane(slot),
            _ => slot,
        }
    }

    /// How many consecutive slots make one lane (see [`Target::lane`]).
    pub fn lane_width(&self) -> usize {
        match (self.protocol, &self.local, &self.triton) {
            (Protocol::Grpc, None, None) => self.grpc.width(),
            _ => 1,
        }
    }

    /// The run's shared-memory regions (`--shared-memory system`).
    pub fn shm(&self) -> Option<&Arc<kserve::shm::ShmSession>> {
        match &self.api {
            Api::Kserve(kserve) => kserve.shm(),
            _ => None,
        }
    }

    /// Path prefix of the model's REST resources: `/v2/models/M[/versions/V]`.
    pub fn model_path(&self) -> String {
        kserve::rest::model_path(&self.model, &self.version)
    }

    fn protocol_name(&self) -> &'static str {
        match self.protocol {
            Protocol::Http => "HTTP",
            Protocol::Grpc => "gRPC",
        }
    }

    /// The sentence for a server that cannot be reached at the start of a run.
    pub fn unreachable(&self, detail: &str) -> RunError {
        RunError::failed(format!(
            "Cannot reach the server at {} over {}: {detail}. Start the server, or fix -u and -i.",
            self.authority,
            self.protocol_name()
        ))
    }

    /// The sentence for a first connection that failed: the TLS handshake's cause when TLS
    /// failed, a plain connection to a TLS server said as such, else [`Target::unreachable`].
    pub async fn connect_failure(&self, detail: &str) -> RunError {
        match &self.tls {
            Some(tls) => match tls.failure() {
                Some(cause) => RunError::failed(format!(
                    "The TLS connection to {} failed: {cause}.",
                    self.authority
                )),
                None => self.unreachable(detail),
            },
            None if tls::speaks_tls(&self.addrs, self.timeout).await => {
                let scheme = match self.protocol {
                    Protocol::Http => "https",
                    Protocol::Grpc => "grpcs",
                };
                RunError::failed(format!(
                    "The server at {} speaks TLS and this run connected in plain text: give -u as {scheme}://{} (with --ssl-* flags for its certificates).",
                    self.authority, self.authority
                ))
            }
            None => self.unreachable(detail),
        }
    }

    /// Encodes every entry of the dataset for this target's API, once.
    pub fn encode(&self, model: &ModelSpec, dataset: &Dataset) -> RunResult<Vec<Request>> {
        dataset
            .entries
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                Ok(Request {
                    index,
                    payload: self.api.encode(self, model, entry)?,
                    check: Arc::new(AnswerCheck::new(model, entry, self.tolerance)),
                    input_tokens: entry.prompt.as_ref().map_or(0, |p| p.input_tokens),
                    max_tokens: entry.prompt.as_ref().and_then(|p| p.max_tokens),
                })
            })
            .collect()
    }
}

/// Every output the model declares, asked for (as binary data over HTTP when `binary`).
pub fn requested_outputs(model: &ModelSpec, binary: bool) -> Vec<RequestedOutput> {
    model
        .outputs
        .iter()
        .map(|o| RequestedOutput {
            name: o.name.clone(),
            binary,
        })
        .collect()
}

/// The request timeout of one slot: a single timer that each request moves forward, so
/// that bounding a request costs no timer registration of its own.
pub struct Deadline {
    timer: Pin<Box<Sleep>>,
    timeout: Duration,
}

impl Deadline {
    pub fn new(timeout: Duration) -> Self {
        Deadline {
            timer: Box::pin(tokio::time::sleep(timeout)),
            timeout,
        }
    }

    /// The timer, set to fire `timeout` after `sent`.
    fn start(&mut self, sent: Instant) -> Pin<&mut Sleep> {
        let at = tokio::time::Instant::from_std(sent + self.timeout);
        self.timer.as_mut().reset(at);
        self.timer.as_mut()
    }
}

/// One slot's connection to the server, of the kind its adapter opened. Every kind has
/// `send(&mut self, &Request, &mut Exchange) -> Result<(), Failure>`, which sends one request
/// and reads and checks its answers, and `is_usable`.
pub enum Connection {
    KserveHttp(kserve::rest::HttpConn),
    /// A unary gRPC call: KServe's ModelInfer or TF Serving's Predict.
    Grpc(kserve::unary::GrpcConn),
    KserveStream(kserve::stream::StreamConn),
    Local(local::LocalConn),
    /// A request to Triton in this process.
    TritonCApi(triton_c_api::CApiConn),
    OpenAi(openai::conn::OpenAiConn),
    TfHttp(tfserving::rest::TfHttpConn),
    TorchServe(torchserve::TsConn),
    /// A call of any gRPC method (perf_analyzer's dynamic gRPC).
    DynamicGrpc(dynamic_grpc::DynamicGrpcConn),
}

impl Connection {
    /// Opens a new connection for in-flight slot `slot`.
    pub async fn open(target: &Target, slot: usize) -> Result<Connection, ErrorKind> {
        target.api.open(target, slot).await
    }

    /// The slot's connection while it can still be used, else a new one in its place, with
    /// when opening that one began (`None`: the connection was reused). Each request checks
    /// its connection once, here (an idle connection's check reads the clock).
    pub async fn reuse_or_open<'a>(
        slot: &'a mut Option<Connection>,
        target: &Target,
        index: usize,
    ) -> Result<(&'a mut Connection, Option<Instant>), ErrorKind> {
        if slot.as_mut().is_some_and(|c| !c.is_usable()) {
            *slot = None;
        }
        if let Some(conn) = slot {
            return Ok((conn, None));
        }
        let opening = Instant::now();
        // Opening is rare (once per connection) and its future, the largest of any kind's
        // (a gRPC handshake), would otherwise be part of every slot's task for the whole
        // run: boxed, the task is a quarter smaller (10,000 slots: ~5 MiB).
        let conn = Box::pin(Connection::open(target, index)).await?;
        Ok((slot.insert(conn), Some(opening)))
    }

    /// Sends one request and reads its answers until the slot's deadline.
    pub async fn exchange(
        &mut self,
        request: &Request,
        ex: &mut Exchange<'_>,
        deadline: &mut Deadline,
    ) -> Result<(), Failure> {
        let timer = deadline.start(ex.sent);
        let send = async {
            match self {
                Connection::KserveHttp(c) => c.send(request, ex).await,
                Connection::Grpc(c) => c.send(request, ex).await,
                Connection::KserveStream(c) => c.send(request, ex).await,
                Connection::Local(c) => c.send(request, ex).await,
                Connection::TritonCApi(c) => c.send(request, ex).await,
                Connection::OpenAi(c) => c.send(request, ex).await,
                Connection::TfHttp(c) => c.send(request, ex).await,
                Connection::TorchServe(c) => c.send(request, ex).await,
                Connection::DynamicGrpc(c) => c.send(request, ex).await,
            }
        };
        tokio::select! {
            biased;
            result = send => result,
            _ = timer => Err(ErrorKind::Timeout.into()),
        }
    }

    /// False once the connection broke; the slot then opens a new one.
    pub fn is_usable(&mut self) -> bool {
        match self {
            Connection::KserveHttp(c) => c.is_usable(),
            Connection::Grpc(c) => c.is_usable(),
            Connection::KserveStream(c) => c.is_usable(),
            Connection::Local(_) | Connection::TritonCApi(_) => true,
            Connection::OpenAi(c) => c.is_usable(),
            Connection::TfHttp(c) => c.is_usable(),
            Connection::TorchServe(c) => c.is_usable(),
            Connection::DynamicGrpc(c) => c.is_usable(),
        }
    }
}

/// Reads what the server says about the model into a `ModelSpec`, and checks that the run
/// can measure it (a decoupled model answers only over a stream).
pub async fn discover(target: &Target) -> RunResult<ModelSpec> {
    let spec = target.api.discover(target).await?.into_spec();
    if spec.decoupled && !target.streaming {
        return Err(RunError::bad_option(format!(
            "Model '{}' is decoupled: it answers over a gRPC stream only (perhaps many answers per request); add -i grpc --streaming.",
            spec.name
        )));
    }
    Ok(spec)
}

/// What discovery read, before the batch dimension is settled.
#[derive(Debug, Default)]
pub struct Discovered {
    pub extensions: Vec<String>,
    pub name: String,
    pub version: String,
    pub platform: String,
    /// Shapes as the metadata gives them (with the batch dimension for batching models).
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    /// Triton's model configuration, when the server answered for it.
    pub config: Option<ConfigFacts>,
}

/// The parts of Triton's model configuration that matter to a run.
#[derive(Debug, Default, Clone)]
pub struct ConfigFacts {
    pub max_batch_size: u32,
    pub scheduler: crate::model::Scheduler,
    pub decoupled: bool,
    pub response_cache: bool,
    /// The models an ensemble's steps call, in step order.
    pub composing_models: Vec<String>,
    /// The sequence batcher's `CORRID` control is `TYPE_STRING`.
    pub string_sequence_ids: bool,
}

impl Discovered {
    /// Settles batching: from the configuration when there is one; without it a leading -1
    /// on every input of rank ≥ 2 is taken as the batch dimension (limit unknown).
    fn into_spec(self) -> ModelSpec {
        let assumed_batching = !self.inputs.is_empty()
            && self
                .inputs
                .iter()
                .all(|t| t.shape.len() >= 2 && t.shape[0] == -1);
        let (max_batch_size, facts) = match &self.config {
            Some(c) => (c.max_batch_size, c.clone()),
            None if assumed_batching => (u32::MAX, ConfigFacts::default()),
            None => (0, ConfigFacts::default()),
        };
        let strip = |tensors: Vec<TensorSpec>| -> Vec<TensorSpec> {
            tensors
                .into_iter()
                .map(|mut t| {
                    if max_batch_size > 0 && !t.shape.is_empty() {
                        t.shape.remove(0);
                    }
                    t
                })
                .collect()
        };
        ModelSpec {
            name: self.name,
            version: self.version,
            platform: self.platform,
            inputs: strip(self.inputs),
            outputs: strip(self.outputs),
            max_batch_size,
            scheduler: facts.scheduler,
            decoupled: facts.decoupled,
            response_cache: facts.response_cache,
            composing_models: facts.composing_models,
            has_config: self.config.is_some(),
            server_extensions: self.extensions,
            string_sequence_ids: facts.string_sequence_ids,
        }
    }
}

/// Parses a datatype named by the server, with a sentence naming the tensor when unknown.
pub fn server_datatype(text: &str, tensor: &str) -> RunResult<crate::model::DataType> {
    text.parse().map_err(|_| {
        RunError::failed(format!(
            "The server declares tensor '{tensor}' with datatype '{text}', which inferperf does not know."
        ))
    })
}

/// Microseconds-safe conversion of an elapsed duration to `u32` nanoseconds.
pub(crate) fn elapsed_ns(since: Instant) -> u32 {
    nanos(since.elapsed())
}

/// A duration in `u32` nanoseconds (saturating at about 4.3 s).
pub(crate) fn nanos(duration: Duration) -> u32 {
    duration.as_nanos().min(u32::MAX as u128) as u32
}
