//! `--service-kind local`: the built-in models called in the same process, through the same
//! scheduler the embedded server uses, with no network. Set beside HTTP and gRPC on the same
//! model it shows what the RPC layer costs per request.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use prost::Message;

use super::kserve_grpc::{config_facts, discovered};
use super::outcome::ErrorKind;
use super::{elapsed_ns, Discovered, Reply, Target};
use crate::error::{RunError, RunResult};
use crate::server::LocalServer;
use crate::wire::InferRequest;

/// One slot's handle on the in-process models.
pub struct LocalConn {
    server: LocalServer,
    model: String,
    version: String,
}

impl LocalConn {
    pub fn open(target: &Target) -> Result<LocalConn, ErrorKind> {
        let server = target.local.clone().ok_or(ErrorKind::Connection)?;
        Ok(LocalConn {
            server,
            model: target.model.clone(),
            version: target.version.clone(),
        })
    }

    /// Calls the model; the answer is returned as an encoded `ModelInferResponse` so that
    /// callers read it the same way as a gRPC answer.
    pub async fn infer(&mut self, request: &Arc<InferRequest>) -> Result<Reply, ErrorKind> {
        let marshal = Instant::now();
        let request = InferRequest::clone(request);
        let send_ns = elapsed_ns(marshal);
        let response = self
            .server
            .infer(&self.model, &self.version, request)
            .await
            .map_err(|e| ErrorKind::GrpcCode(e.grpc_code() as i32))?;
        let unmarshal = Instant::now();
        let body = Bytes::from(crate::wire::to_grpc_response(&response).encode_to_vec());
        Ok(Reply {
            send_ns,
            recv_ns: elapsed_ns(unmarshal),
            body,
            header_len: None,
            done: Instant::now(),
        })
    }
}

/// Reads the in-process model's metadata and configuration.
pub fn discover(target: &Target) -> RunResult<Discovered> {
    let server = target
        .local
        .as_ref()
        .ok_or_else(|| RunError::failed("The local service kind has no models to call."))?;
    let metadata = server.metadata(&target.model).ok_or_else(|| {
        RunError::failed(format!(
            "There is no local model '{}': define it with --model {}=KIND[:options] (kinds: identity, add_sub, echo, sleep, fail, noop).",
            target.model, target.model
        ))
    })?;
    let config = server.config(&target.model).map(|c| config_facts(&c));
    let extensions = vec!["statistics".into(), "model_configuration".into()];
    discovered(target, extensions, metadata, config)
}
