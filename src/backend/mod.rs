//! Client backends: how a request reaches the server. `Target` is the resolved server and
//! model; `Connection` is one in-flight slot's connection; `discover` reads what the server
//! says about the model. Each protocol lives in its own file.

pub mod grpc_unary;
pub mod http1;
pub mod kserve_grpc;
pub mod kserve_http;
pub mod local;
pub mod outcome;
pub mod statistics;

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::time::Sleep;

use crate::config::{Config, Protocol, ServiceKind};
use crate::data::Payload;
use crate::error::{RunError, RunResult};
use crate::model::{ModelSpec, TensorSpec};
pub use outcome::{grpc_code_name, ErrorKind};

/// The server and model a run talks to, resolved once.
#[derive(Debug, Clone)]
pub struct Target {
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
    /// The in-process models, for `--service-kind local`.
    pub local: Option<crate::server::LocalServer>,
    /// The gRPC connections the run's slots share.
    pub grpc: Arc<grpc_unary::SharedConnections>,
}

impl Target {
    /// Resolves the server's address; a name that does not resolve is a clear error.
    pub async fn resolve(cfg: &Config) -> RunResult<Target> {
        if cfg.service_kind == ServiceKind::Local {
            return Target::local(cfg);
        }
        let mut addrs: Vec<SocketAddr> = tokio::net::lookup_host(cfg.url.as_str())
            .await
            .map_err(|e| {
                RunError::failed(format!(
                    "Cannot resolve the server address '{}': {e}. Check -u.",
                    cfg.url
                ))
            })?
            .collect();
        addrs.sort_by_key(|a| a.is_ipv6());
        Ok(Target {
            protocol: cfg.protocol,
            authority: cfg.url.clone(),
            addrs,
            model: cfg.model_name.clone(),
            version: cfg.model_version.clone(),
            headers: cfg.headers.clone(),
            timeout: cfg.request_timeout,
            local: None,
            grpc: Arc::new(grpc_unary::SharedConnections::new(
                cfg.grpc_connection_share,
            )),
        })
    }

    /// The built-in models in this process.
    fn local(cfg: &Config) -> RunResult<Target> {
        let server = crate::server::LocalServer::new(cfg.local_models.clone()).map_err(|e| {
            RunError::bad_option(format!("The --model definitions cannot be served: {e:#}."))
        })?;
        Ok(Target {
            protocol: cfg.protocol,
            authority: "local".into(),
            addrs: Vec::new(),
            model: cfg.model_name.clone(),
            version: cfg.model_version.clone(),
            headers: Vec::new(),
            timeout: cfg.request_timeout,
            local: Some(server),
            grpc: Arc::new(grpc_unary::SharedConnections::new(1)),
        })
    }

    /// The lane of in-flight slot `slot`: the slots of one lane share a connection (gRPC)
    /// and so run on the same client thread; elsewhere each slot is its own lane.
    pub fn lane(&self, slot: usize) -> usize {
        match (self.protocol, &self.local) {
            (Protocol::Grpc, None) => self.grpc.lane(slot),
            _ => slot,
        }
    }

    /// Path prefix of the model's REST resources: `/v2/models/M[/versions/V]`.
    pub fn model_path(&self) -> String {
        kserve_http::model_path(&self.model, &self.version)
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

/// A successful exchange: timings and the raw answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Time to hand the request to the connection (HTTP) or to marshal it (gRPC).
    pub send_ns: u32,
    /// Time to receive and unmarshal the answer after its first byte.
    pub recv_ns: u32,
    /// When the answer was complete.
    pub done: Instant,
    /// The response body (HTTP) or encoded `ModelInferResponse` (gRPC).
    pub body: Bytes,
    /// `Inference-Header-Content-Length` of an HTTP answer with binary outputs.
    pub header_len: Option<usize>,
}

/// One slot's connection to the server.
pub enum Connection {
    Http(kserve_http::HttpConn),
    Grpc(grpc_unary::GrpcConn),
    Local(local::LocalConn),
}

impl Connection {
    /// Opens a new connection for in-flight slot `slot` (over gRPC, a handle on its lane's
    /// shared connection).
    pub async fn open(target: &Target, slot: usize) -> Result<Connection, ErrorKind> {
        if target.local.is_some() {
            return local::LocalConn::open(target).map(Connection::Local);
        }
        match target.protocol {
            Protocol::Http => kserve_http::HttpConn::open(target)
                .await
                .map(Connection::Http),
            Protocol::Grpc => target
                .grpc
                .connect(target, slot)
                .await
                .map(Connection::Grpc),
        }
    }

    /// The slot's connection while it can still be used, else a new one in its place.
    pub async fn reuse_or_open<'a>(
        slot: &'a mut Option<Connection>,
        target: &Target,
        index: usize,
    ) -> Result<&'a mut Connection, ErrorKind> {
        let mut current = slot.take();
        if current.as_mut().is_some_and(|c| !c.is_usable()) {
            current = None;
        }
        let conn = match current {
            Some(c) => c,
            None => Connection::open(target, index).await?,
        };
        Ok(slot.insert(conn))
    }

    /// Sends one inference request, begun at `sent`, and waits for its answer until the
    /// slot's deadline.
    pub async fn infer(
        &mut self,
        payload: &Payload,
        sent: Instant,
        deadline: &mut Deadline,
    ) -> Result<Reply, ErrorKind> {
        let exchange = async {
            match (self, payload) {
                (Connection::Http(c), Payload::Http { request }) => c.infer(request, sent).await,
                (Connection::Grpc(c), Payload::Grpc { framed }) => c.infer(framed, sent).await,
                (Connection::Local(c), Payload::Local { request }) => c.infer(request).await,
                _ => Err(ErrorKind::BadResponse),
            }
        };
        let timer = deadline.start(sent);
        tokio::select! {
            biased;
            reply = exchange => reply,
            _ = timer => Err(ErrorKind::Timeout),
        }
    }

    /// False once the connection broke; the slot then opens a new one.
    pub fn is_usable(&mut self) -> bool {
        match self {
            Connection::Http(c) => c.is_usable(),
            Connection::Grpc(c) => c.is_usable(),
            Connection::Local(_) => true,
        }
    }
}

/// Reads the server and model metadata (and Triton's model configuration where the server
/// has it) into a `ModelSpec`.
pub async fn discover(target: &Target) -> RunResult<ModelSpec> {
    if target.local.is_some() {
        return Ok(local::discover(target)?.into_spec());
    }
    let raw = match target.protocol {
        Protocol::Http => kserve_http::discover(target).await?,
        Protocol::Grpc => kserve_grpc::discover(target).await?,
    };
    Ok(raw.into_spec())
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
