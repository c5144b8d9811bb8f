//! Client backends: how a request reaches the server and how its answers come back, in two
//! floors. [`transport`] is every way bytes reach a server (TCP, TLS, HTTP/1.1, HTTP/2 and
//! gRPC, compression, the control client) and names no API. [`api`] holds one folder per
//! API, each an [`Adapter`] — starting its in-process models, discovery, encoding a dataset
//! entry once, opening a connection, reading the server's statistics; none imports a
//! sibling, and the Open Inference Protocol's messages that three of them share are in
//! [`open_inference`]. What each API can do is its row in `crate::apis`. This file is the
//! registry, the one place that names every adapter, a line each: [`Api`] and
//! [`Connection`] (every kind of connection they open) are made from those lines. The files
//! beside it name none, so that an adapter can use them without a circle: [`Target`] is
//! the resolved server and model, discovery what the server says of it, [`statistics`] the
//! shape of a statistics reader, what every API's answers are checked against is [`check`].

pub mod api;
pub mod cache_bust;
pub mod cancel;
pub mod check;
mod discovery;
pub mod hooks;
pub mod memo;
pub mod open_inference;
pub mod outcome;
pub mod replicas;
pub mod statistics;
use statistics::StatsSource;
mod target;
pub mod transport;

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::time::Sleep;

use crate::apis::{Capabilities, ServiceKind};
use crate::config::{ApiSettings, TargetConfig};
use crate::data::Entry;
use api::{dynamic_grpc, kserve, local, openai, tfserving, torchserve, triton_c_api};
pub use check::AnswerCheck;
pub use discovery::{discover, server_datatype, ConfigFacts, Discovered};
use inferperf_wire::error::RunResult;
use inferperf_wire::model::{ModelSpec, SequenceStep};
use inferperf_wire::{InferRequest, RequestedOutput};
pub use outcome::{
    grpc_code_name, AnswerText, ErrorKind, Exchange, Failure, Malformation, TokenSource, Tokens,
};
pub use target::{RequestShape, Target};

/// What one API does for a run. Each adapter implements it; [`Api`] dispatches to them
/// statically (an enum, not a trait object: a boxed future per request would cost an
/// allocation on the hot path, and the set of APIs is known when the program is built).
#[allow(async_fn_in_trait)]
pub trait Adapter {
    /// Starts what the API runs in this process (its models), before anything is asked of
    /// it, and says what the run calls that server; `None` for an API reached over the
    /// network.
    async fn start(&mut self, _target: &TargetConfig) -> RunResult<Option<&'static str>> {
        Ok(None)
    }
    /// Reads what the model takes and returns.
    async fn discover(&self, target: &Target) -> RunResult<Discovered>;
    /// Encodes one dataset entry, once, when the run starts.
    fn encode(&self, target: &Target, model: &ModelSpec, entry: &Entry) -> RunResult<Payload>;
    /// Opens the connection of in-flight slot `slot`.
    async fn open(&self, target: &Target, slot: usize) -> Result<Connection, ErrorKind>;
    /// Opens a reader of the server's statistics, for the APIs whose row has them (and the
    /// composing models' too when `all_models`). `Err` is the reason, as a phrase.
    async fn statistics(
        &self,
        _target: &Target,
        _all_models: bool,
        _models: &[String],
    ) -> Result<StatsSource, String> {
        Err("this API has no server statistics".into())
    }
    /// The adapter of the warm-up's requests, when they are encoded otherwise than the
    /// measured ones (`--cache-bust warmup_isolation_*`); `None` when they are not.
    fn for_warm_up(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
    /// A turn of a multi-turn chat session with its history (earlier prompts and the answers
    /// given), encoded as it is sent; `None` for an API that carries no conversation.
    fn encode_turn(
        &self,
        _target: &Target,
        _prompt: &crate::data::Prompt,
        _history: &[(String, String)],
    ) -> Option<Payload> {
        None
    }
    /// A request's payload as one step of a sequence, for an API whose requests carry the
    /// step's controls on the wire; `None`: sent unchanged.
    fn in_sequence(&self, _payload: &Payload, _step: &SequenceStep) -> Option<Payload> {
        None
    }
    /// The run's shared-memory regions (`--shared-memory system`), for an API that has them.
    fn shm(&self) -> Option<&Arc<kserve::shm::ShmSession>> {
        None
    }
}

/// The registry: each API's adapter beside its [`ServiceKind`], one line each. It makes
/// [`Api`] and its dispatch; what an API can do is its kind's row (`config::SERVICE_KINDS`).
macro_rules! adapters {
    ($($(#[$doc:meta])* $variant:ident($adapter:ty) = $kind:ident,)*) => {
        /// The registered adapters.
        #[derive(Debug, Clone)]
        pub enum Api {
            $($(#[$doc])* $variant($adapter),)*
        }

        impl Api {
            /// The `--service-kind` this adapter answers for.
            pub fn service_kind(&self) -> ServiceKind {
                match self {
                    $(Api::$variant(_) => ServiceKind::$kind,)*
                }
            }

            async fn start(&mut self, target: &TargetConfig) -> RunResult<Option<&'static str>> {
                match self {
                    $(Api::$variant(a) => a.start(target).await,)*
                }
            }

            async fn discover(&self, target: &Target) -> RunResult<Discovered> {
                match self {
                    $(Api::$variant(a) => a.discover(target).await,)*
                }
            }

            fn encode(&self, target: &Target, model: &ModelSpec, entry: &Entry) -> RunResult<Payload> {
                match self {
                    $(Api::$variant(a) => a.encode(target, model, entry),)*
                }
            }

            async fn open(&self, target: &Target, slot: usize) -> Result<Connection, ErrorKind> {
                match self {
                    $(Api::$variant(a) => a.open(target, slot).await,)*
                }
            }

            /// See [`Adapter::encode_turn`].
            pub fn encode_turn(
                &self,
                target: &Target,
                prompt: &crate::data::Prompt,
                history: &[(String, String)],
            ) -> Option<Payload> {
                match self {
                    $(Api::$variant(a) => a.encode_turn(target, prompt, history),)*
                }
            }

            fn payload_in_sequence(&self, payload: &Payload, step: &SequenceStep) -> Option<Payload> {
                match self {
                    $(Api::$variant(a) => a.in_sequence(payload, step),)*
                }
            }

            fn shm(&self) -> Option<&Arc<kserve::shm::ShmSession>> {
                match self {
                    $(Api::$variant(a) => a.shm(),)*
                }
            }

            /// See [`Adapter::for_warm_up`].
            fn for_warm_up(&self) -> Option<Api> {
                match self {
                    $(Api::$variant(a) => a.for_warm_up().map(Api::$variant),)*
                }
            }

            /// A reader of the server's statistics (see [`Adapter::statistics`]).
            pub async fn statistics(
                &self,
                target: &Target,
                all_models: bool,
                models: &[String],
            ) -> Result<StatsSource, String> {
                match self {
                    $(Api::$variant(a) => a.statistics(target, all_models, models).await,)*
                }
            }
        }
    };
}

adapters! {
    /// KServe v2 over HTTP or gRPC (Triton, KServe, MLServer, the embedded server).
    Kserve(kserve::Kserve) = Triton,
    /// The built-in models in this process.
    Local(local::Local) = Local,
    /// OpenAI-compatible servers (chat, completions, embeddings).
    OpenAi(openai::OpenAi) = OpenAi,
    /// TF Serving (gRPC PredictionService or REST).
    TfServing(tfserving::TfServing) = TfServing,
    /// TorchServe's HTTP inference API.
    TorchServe(torchserve::TorchServe) = TorchServe,
    /// Any gRPC method, with generated messages (perf_analyzer's dynamic gRPC).
    DynamicGrpc(dynamic_grpc::DynamicGrpc) = DynamicGrpc,
    /// Triton in this process, through its C API.
    TritonCApi(triton_c_api::TritonCApi) = TritonCApi,
}

impl Api {
    /// The adapter the target section asks for, for requests of `shape`: each API's
    /// settings make its adapter.
    pub fn for_target(target: &TargetConfig, shape: RequestShape) -> Api {
        match &target.api {
            ApiSettings::Kserve(s) => Api::Kserve(kserve::Kserve::new(target, s, shape.batch_size)),
            ApiSettings::Local(s) => Api::Local(local::Local::new(target, s)),
            ApiSettings::OpenAi(s) => Api::OpenAi(openai::OpenAi::new(target, s)),
            ApiSettings::TfServing(s) => Api::TfServing(tfserving::TfServing::new(s)),
            ApiSettings::TorchServe(s) => {
                Api::TorchServe(torchserve::TorchServe::new(s, shape.shapes_given))
            }
            ApiSettings::DynamicGrpc(s) => Api::DynamicGrpc(dynamic_grpc::DynamicGrpc::new(s)),
            ApiSettings::TritonCApi(s) => Api::TritonCApi(triton_c_api::TritonCApi::new(target, s)),
        }
    }

    /// What this API can do.
    pub fn capabilities(&self) -> &'static Capabilities {
        self.service_kind().capabilities()
    }

    /// `request` as one step of a sequence: the in-process requests of the local models and
    /// Triton carry the step's parameters, and so do the wire requests of an adapter that
    /// patches them in ([`Adapter::in_sequence`]: KServe's); the others go unchanged.
    pub fn in_sequence(&self, request: &Request, step: &SequenceStep) -> Request {
        let payload = match &request.payload {
            Payload::Local(req) => {
                let mut req = InferRequest::clone(req);
                req.parameters
                    .extend(open_inference::parameters::sequence_parameters(step));
                Some(Payload::Local(Arc::new(req)))
            }
            payload => self.payload_in_sequence(payload, step),
        };
        Request {
            payload: payload.unwrap_or_else(|| request.payload.clone()),
            ..request.clone()
        }
    }
}

impl Target {
    /// The run's shared-memory regions (`--shared-memory system`).
    pub fn shm(&self) -> Option<&Arc<kserve::shm::ShmSession>> {
        self.api.shm()
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

/// What every kind of connection does: send one request and read and check its answers,
/// and say whether it can still be used.
#[allow(async_fn_in_trait)]
pub trait Conn {
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure>;
    /// False once the connection broke; the slot then opens a new one.
    fn is_usable(&mut self) -> bool {
        true
    }
}

/// Every kind of connection the adapters open, one line each: it makes [`Connection`] and
/// its dispatch.
macro_rules! connections {
    ($($(#[$doc:meta])* $variant:ident($conn:ty),)*) => {
        /// One slot's connection to the server, of the kind its adapter opened.
        pub enum Connection {
            $($(#[$doc])* $variant($conn),)*
        }

        impl Connection {
            async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
                match self {
                    $(Connection::$variant(c) => c.send(request, ex).await,)*
                }
            }

            /// False once the connection broke; the slot then opens a new one.
            pub fn is_usable(&mut self) -> bool {
                match self {
                    $(Connection::$variant(c) => c.is_usable(),)*
                }
            }
        }
    };
}

connections! {
    KserveHttp(kserve::rest::HttpConn),
    /// KServe's ModelInfer, a unary gRPC call.
    KserveGrpc(kserve::unary::GrpcConn),
    KserveStream(kserve::stream::StreamConn),
    Local(local::LocalConn),
    /// A request to Triton in this process.
    TritonCApi(triton_c_api::CApiConn),
    OpenAi(openai::conn::OpenAiConn),
    TfHttp(tfserving::rest::TfHttpConn),
    /// TF Serving's Predict, a unary gRPC call.
    TfGrpc(tfserving::grpc::TfGrpcConn),
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
        let send = self.send(request, ex);
        tokio::select! {
            biased;
            result = send => result,
            _ = timer => Err(ErrorKind::Timeout.into()),
        }
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

/// Microseconds-safe conversion of an elapsed duration to `u32` nanoseconds.
pub(crate) fn elapsed_ns(since: Instant) -> u32 {
    nanos(since.elapsed())
}

/// A duration in `u32` nanoseconds (saturating at about 4.3 s).
pub(crate) fn nanos(duration: Duration) -> u32 {
    duration.as_nanos().min(u32::MAX as u128) as u32
}
