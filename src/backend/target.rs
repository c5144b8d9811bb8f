//! The server and model a run talks to, resolved once from the flags: the adapter, the
//! server as the transport reaches it ([`Peer`]: addresses, headers, timeout, TLS, the
//! shared gRPC connections), the models when they run in this process, and the sentences
//! for a server that cannot be reached. Every adapter uses it, so it uses none of them (the
//! in-process starts are the registry's, in `mod.rs`); it only names the type of Triton in
//! process, which names nothing back.

use std::sync::Arc;

use super::transport::{h2, tls, Peer};
use super::{AnswerCheck, Api, Request};
use crate::config::{DataConfig, Protocol, TargetConfig};
use crate::data::Dataset;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::ModelSpec;

/// The server and model a run talks to, resolved once.
#[derive(Debug, Clone)]
pub struct Target {
    pub api: Api,
    pub protocol: Protocol,
    /// The server as the transport reaches it: address, headers, TLS, timeout.
    pub peer: Peer,
    pub model: String,
    pub version: String,
    /// `--streaming`: requests go over a stream, so decoupled models can be measured.
    pub streaming: bool,
    /// `--validation-tolerance`.
    pub tolerance: f64,
    /// The requests to cancel on purpose (`--request-cancellation-rate`), if any.
    pub cancel: Option<Arc<super::cancel::CancelPlan>>,
    /// AIPerf's `--connection-reuse-strategy never`: each request on a new connection.
    pub connection_per_request: bool,
    /// The digests of `--cache-bust`'s trajectory markers, when the requests carry one.
    pub cache_bust: Option<Arc<super::cache_bust::BustPlan>>,
}

/// What the adapters know of the requests before the dataset is built, handed down from
/// the data section: the batch size (a shared-memory region holds the outputs of one
/// batched request) and whether `--shape` was given (TorchServe then describes the model's
/// inputs from the flags).
#[derive(Debug, Clone, Copy)]
pub struct RequestShape {
    pub batch_size: u32,
    pub shapes_given: bool,
}

impl RequestShape {
    /// The shape of the requests `data` asks for.
    pub fn of(data: &DataConfig) -> RequestShape {
        RequestShape {
            batch_size: data.batch_size,
            shapes_given: !data.shapes.is_empty(),
        }
    }
}

/// The digests of a run whose requests carry `--cache-bust`'s trajectory markers.
fn trajectory_markers(cfg: &TargetConfig) -> Option<Arc<super::cache_bust::BustPlan>> {
    let bust = cfg.llm()?.cache_bust?;
    (bust.kind == crate::config::cache_bust::BustKind::Trajectory).then(Default::default)
}

impl Target {
    /// Resolves the server's address; a name that does not resolve is a clear error.
    pub async fn resolve(cfg: &TargetConfig, shape: RequestShape) -> RunResult<Target> {
        Target::resolve_at(cfg, shape, &cfg.url).await
    }

    /// Resolves the server at `url` (one of `-u`'s), with the target's other settings.
    pub async fn resolve_at(
        cfg: &TargetConfig,
        shape: RequestShape,
        url: &str,
    ) -> RunResult<Target> {
        let mut target = Target {
            api: Api::for_target(cfg, shape),
            protocol: cfg.protocol,
            peer: Peer {
                authority: url.to_string(),
                addrs: Vec::new(),
                headers: cfg.headers.clone(),
                timeout: cfg.request_timeout,
                max_response_bytes: cfg.max_response_bytes,
                tls: None,
                grpc: Arc::new(h2::SharedConnections::new(cfg.grpc_connection_share)),
                grpc_compression: cfg.grpc_compression,
            },
            model: cfg.model_name.clone(),
            version: cfg.model_version.clone(),
            streaming: cfg.streaming,
            tolerance: cfg.validation_tolerance,
            cancel: (cfg.cancellation.as_ref())
                .map(|c| Arc::new(super::cancel::CancelPlan::new(c))),
            connection_per_request: cfg.connection_per_request,
            cache_bust: trajectory_markers(cfg),
        };
        if let Some(authority) = target.api.start(cfg).await? {
            target.peer.authority = authority.into();
            target.peer.headers.clear();
            return Ok(target);
        }
        let peer = &mut target.peer;
        peer.addrs = tokio::net::lookup_host(url)
            .await
            .map_err(|e| {
                RunError::failed(format!(
                    "Cannot resolve the server address '{url}': {e}. Check -u."
                ))
            })?
            .collect();
        peer.addrs.sort_by_key(|a| a.is_ipv6());
        if let Some(settings) = &cfg.tls {
            peer.tls = Some(Arc::new(tls::TlsClient::new(settings, url)?));
        }
        Ok(target)
    }

    /// The target of the warm-up's requests, when they are encoded otherwise than the
    /// measured ones (`--cache-bust warmup_isolation_*`); `None` when they are not.
    pub fn for_warm_up(&self) -> Option<Target> {
        Some(Target {
            api: self.api.for_warm_up()?,
            ..self.clone()
        })
    }

    /// The lane of in-flight slot `slot`: the slots of one lane share a connection (gRPC)
    /// and so run on the same client thread; elsewhere each slot is its own lane.
    pub fn lane(&self, slot: usize) -> usize {
        match (self.protocol, self.api.service_kind().in_process()) {
            (Protocol::Grpc, false) => self.peer.grpc.lane(slot),
            _ => slot,
        }
    }

    /// How many consecutive slots make one lane (see [`Target::lane`]).
    pub fn lane_width(&self) -> usize {
        match (self.protocol, self.api.service_kind().in_process()) {
            (Protocol::Grpc, false) => self.peer.grpc.width(),
            _ => 1,
        }
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
            self.peer.authority,
            self.protocol_name()
        ))
    }

    /// The sentence for a first connection that failed: the TLS handshake's cause when TLS
    /// failed, a plain connection to a TLS server said as such, else [`Target::unreachable`].
    pub async fn connect_failure(&self, detail: &str) -> RunError {
        let peer = &self.peer;
        match &peer.tls {
            Some(tls) => match tls.failure() {
                Some(cause) => RunError::failed(format!(
                    "The TLS connection to {} failed: {cause}.",
                    peer.authority
                )),
                None => self.unreachable(detail),
            },
            None if tls::speaks_tls(&peer.addrs, peer.timeout).await => {
                let scheme = match self.protocol {
                    Protocol::Http => "https",
                    Protocol::Grpc => "grpcs",
                };
                RunError::failed(format!(
                    "The server at {} speaks TLS and this run connected in plain text: give -u as {scheme}://{} (with --ssl-* flags for its certificates).",
                    peer.authority, peer.authority
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
