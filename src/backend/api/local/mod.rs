//! The in-process adapter (`--service-kind local`): the built-in models called in the same
//! process, through the same scheduler the embedded server uses, with no network. Set beside
//! HTTP and gRPC on the same model it shows what the RPC layer costs per request. A call
//! marshals as gRPC would — the request is copied, the answer encoded as a protobuf and
//! checked from those bytes — so that the comparison is like for like; with `--streaming`
//! every answer of the model's stream is timed and checked.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use prost::Message;

use crate::backend::memo::CheckedAnswers;
use crate::backend::open_inference::answer::check_protobuf;
use crate::backend::open_inference::metadata::{config_facts, discovered};
use crate::backend::outcome::{ErrorKind, Exchange, Failure};
use crate::backend::statistics::{StatsReader, StatsSource};
use crate::backend::Conn;
use crate::backend::{
    elapsed_ns, requested_outputs, Adapter, Connection, Discovered, Payload, Request, Target,
};
use crate::config::{LocalSettings, TargetConfig};
use crate::data::Entry;
use futures::future::BoxFuture;
use inferperf_server::{InferError, LocalServer};
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::ModelSpec;
use inferperf_wire::proto::ModelStatistics;
use inferperf_wire::InferRequest;

/// The in-process adapter, with the models of `--model` definitions once started.
#[derive(Debug, Clone)]
pub struct Local {
    streaming: bool,
    models: Vec<inferperf_server::ModelDef>,
    server: Option<LocalServer>,
}

impl Local {
    pub fn new(target: &TargetConfig, settings: &LocalSettings) -> Local {
        Local {
            streaming: target.streaming,
            models: settings.models.clone(),
            server: None,
        }
    }

    /// The models, once started.
    pub fn started(&self) -> Option<&LocalServer> {
        self.server.as_ref()
    }

    /// The started models.
    fn server(&self) -> RunResult<&LocalServer> {
        (self.server.as_ref()).ok_or_else(|| {
            RunError::failed("The --model definitions were not started for this run.")
        })
    }
}

#[allow(async_fn_in_trait)]
impl Adapter for Local {
    async fn start(&mut self, _target: &TargetConfig) -> RunResult<Option<&'static str>> {
        let server = LocalServer::new(self.models.clone()).map_err(|e| {
            RunError::bad_option(format!("The --model definitions cannot be served: {e:#}."))
        })?;
        self.server = Some(server);
        Ok(Some("local"))
    }

    async fn discover(&self, target: &Target) -> RunResult<Discovered> {
        discover(self.server()?, target)
    }

    fn encode(&self, _target: &Target, model: &ModelSpec, entry: &Entry) -> RunResult<Payload> {
        Ok(Payload::Local(Arc::new(InferRequest {
            inputs: entry.inputs.clone(),
            outputs: requested_outputs(model, false),
            ..Default::default()
        })))
    }

    async fn open(&self, target: &Target, _slot: usize) -> Result<Connection, ErrorKind> {
        let server = self.server().map_err(|_| ErrorKind::Connection)?.clone();
        Ok(Connection::Local(LocalConn {
            server,
            model: target.model.clone(),
            version: target.version.clone(),
            streaming: self.streaming,
            checked: CheckedAnswers::default(),
        }))
    }

    async fn statistics(
        &self,
        _target: &Target,
        _all_models: bool,
        models: &[String],
    ) -> Result<StatsSource, String> {
        let server = self.server().map_err(|e| e.to_string())?;
        Ok(StatsSource::new(LocalStats::new(server, models)))
    }
}

/// One slot's handle on the in-process models.
pub struct LocalConn {
    server: LocalServer,
    model: String,
    version: String,
    streaming: bool,
    checked: CheckedAnswers<()>,
}

impl LocalConn {
    /// A streamed call: each answer is timed as it comes, checked, and the last one ends it.
    async fn stream(
        &mut self,
        call: InferRequest,
        request: &Request,
        ex: &mut Exchange<'_>,
    ) -> Result<(), Failure> {
        let mut answers = self
            .server
            .infer_stream(&self.model, &self.version, call)
            .await
            .map_err(failure)?;
        while let Some(answer) = answers.recv().await {
            let at = Instant::now();
            let answer = answer.map_err(failure)?;
            if !answer.response.outputs.is_empty() {
                request.check.check(&answer.response.outputs)?;
                ex.answer(at);
            }
            if answer.last {
                ex.finish(at);
                return Ok(());
            }
        }
        Err(Failure::new(
            ErrorKind::StreamError,
            "the in-process stream ended before its final answer",
        ))
    }
}

impl Conn for LocalConn {
    /// Calls the model and checks its answer (or, streaming, every answer of its stream).
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let Payload::Local(call) = &request.payload else {
            return Err(ErrorKind::Connection.into());
        };
        let marshal = Instant::now();
        let call = InferRequest::clone(call);
        ex.send_ns = elapsed_ns(marshal);
        if self.streaming {
            return self.stream(call, request, ex).await;
        }
        let response = self
            .server
            .infer(&self.model, &self.version, call)
            .await
            .map_err(failure)?;
        let done = Instant::now();
        let body = Bytes::from(inferperf_wire::to_grpc_response(&response).encode_to_vec());
        check_protobuf(&mut self.checked, request, &body)?;
        ex.recv_ns = elapsed_ns(done);
        ex.answer(done);
        ex.finish(done);
        Ok(())
    }
}

/// An in-process error as the gRPC code a server would answer with.
fn failure(e: InferError) -> Failure {
    ErrorKind::GrpcCode(e.grpc_code() as i32).into()
}

/// Reads the in-process model's metadata and configuration.
fn discover(server: &LocalServer, target: &Target) -> RunResult<Discovered> {
    let metadata = server.metadata(&target.model).ok_or_else(|| {
        RunError::failed(format!(
            "There is no local model '{}': define it with --model {}=KIND[:options] (kinds: identity, add_sub, echo, sleep, stream, fail, noop).",
            target.model, target.model
        ))
    })?;
    let config = server.config(&target.model).map(|c| config_facts(&c));
    let extensions = vec!["statistics".into(), "model_configuration".into()];
    discovered(target, extensions, metadata, config)
}

/// The statistics the embedded models keep, read in process.
pub struct LocalStats {
    server: LocalServer,
    models: Vec<String>,
}

impl LocalStats {
    pub fn new(server: &LocalServer, models: &[String]) -> LocalStats {
        LocalStats {
            server: server.clone(),
            models: models.to_vec(),
        }
    }

    /// The models' cumulative statistics now.
    pub fn read(&self) -> Vec<inferperf_wire::proto::ModelStatistics> {
        // `MODEL:VERSION` (a BLS composing model): the embedded server has one version of
        // each model, whose statistics it gives.
        let name = |m: &String| m.split_once(':').map_or(m.clone(), |(n, _)| n.into());
        let names: Vec<String> = self.models.iter().map(name).collect();
        (names.iter())
            .filter_map(|m| self.server.statistics(m))
            .collect()
    }
}

impl StatsReader for LocalStats {
    fn read(&mut self) -> BoxFuture<'_, Result<Vec<ModelStatistics>, String>> {
        Box::pin(std::future::ready(Ok(LocalStats::read(self))))
    }
}
