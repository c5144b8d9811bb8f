//! The server and model a run talks to, resolved once from the flags: the adapter, the
//! addresses, the settings every connection needs (headers, timeout, TLS, the shared gRPC
//! connections), and the sentences for a server that cannot be reached.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::api::{kserve, local, triton_c_api};
use super::transport::{h2, tls};
use super::{AnswerCheck, Api, Request};
use crate::config::{ApiSettings, Config, Protocol};
use crate::data::Dataset;
use crate::error::{RunError, RunResult};
use crate::model::ModelSpec;

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
        match &cfg.api {
            ApiSettings::Local(settings) => {
                target.authority = "local".into();
                target.headers.clear();
                target.local = Some(local::serve(settings)?);
                return Ok(target);
            }
            ApiSettings::TritonCApi(settings) => {
                let started = triton_c_api::start(&cfg.model_name, settings).await?;
                target.authority = "in-process Triton".into();
                target.headers.clear();
                target.triton = Some(Arc::new(started));
                return Ok(target);
            }
            _ => {}
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
