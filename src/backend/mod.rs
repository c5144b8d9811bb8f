//! Client backends: how a request reaches the server and how its answers come back, in two
//! floors. [`transport`] is every way bytes reach a server (TCP, TLS, HTTP/1.1, HTTP/2 and
//! gRPC, compression, the control client) and names no API. [`api`] holds one folder per
//! API, each an [`Adapter`] — discovery, encoding a dataset entry once, opening a
//! connection — with the table of what it can do ([`Capabilities`]); none imports a
//! sibling, and the Open Inference Protocol's messages that three of them share are in
//! [`open_inference`]. This file is the registry: [`Api`] and [`capabilities`] name every
//! adapter, [`Connection`] every kind of connection they open. [`Target`] is the resolved
//! server and model; what every API's answers are checked against is [`check`].

pub mod api;
mod capabilities;
pub mod check;
mod connection;
mod discovery;
pub mod memo;
pub mod open_inference;
pub mod outcome;
pub mod replicas;
pub mod statistics;
mod target;
pub mod transport;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::config::{ApiSettings, Config};
use crate::data::Entry;
use crate::error::RunResult;
use crate::model::{ModelSpec, SequenceStep};
use crate::wire::{InferRequest, RequestedOutput};
use api::{dynamic_grpc, kserve, local, openai, tfserving, torchserve, triton_c_api};
pub use capabilities::{capabilities, Capabilities, ServerStatistics, Streaming};
pub use check::AnswerCheck;
pub use connection::{Connection, Deadline};
pub use discovery::{discover, server_datatype, ConfigFacts, Discovered};
pub use outcome::{
    grpc_code_name, AnswerText, ErrorKind, Exchange, Failure, Malformation, TokenSource, Tokens,
};
pub use target::Target;

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
        match &cfg.api {
            ApiSettings::Kserve(s) => Api::Kserve(kserve::Kserve::new(cfg, s)),
            ApiSettings::Local(_) => Api::Local(local::Local::new(cfg)),
            ApiSettings::OpenAi(s) => Api::OpenAi(openai::OpenAi::new(cfg, s)),
            ApiSettings::TfServing(s) => Api::TfServing(tfserving::TfServing::new(s)),
            ApiSettings::TorchServe(s) => Api::TorchServe(torchserve::TorchServe::new(cfg, s)),
            ApiSettings::DynamicGrpc(s) => Api::DynamicGrpc(dynamic_grpc::DynamicGrpc::new(s)),
            ApiSettings::TritonCApi(s) => Api::TritonCApi(triton_c_api::TritonCApi::new(cfg, s)),
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

    /// `request` as one step of a sequence: KServe's requests, and the in-process ones of the
    /// local models and Triton, carry the step's parameters (the APIs whose table says
    /// `sequences`); the other APIs send the request unchanged.
    pub fn in_sequence(&self, request: &Request, step: &SequenceStep) -> Request {
        let payload = match (&request.payload, self) {
            (Payload::Local(req), _) => {
                let mut req = InferRequest::clone(req);
                req.parameters
                    .extend(open_inference::parameters::sequence_parameters(step));
                Some(Payload::Local(Arc::new(req)))
            }
            (payload, Api::Kserve(_)) => kserve::sequence::patch(payload, step),
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
