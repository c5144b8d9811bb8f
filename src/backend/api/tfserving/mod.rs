//! The TF Serving adapter: discovery from the model's signature (`GetModelMetadata` over gRPC,
//! or `GET /v1/models/M/metadata` over REST), requests encoded once per dataset entry — a
//! framed `PredictRequest` with `TensorProto` inputs, or a REST predict body — and the
//! connections that carry them (the h2 unary call KServe uses, with TF Serving's path; the
//! hand-written HTTP/1.1). TF Serving has no statistics extension, so a run against it has
//! no server-side breakdown.

pub mod grpc;
pub mod rest;

use std::collections::HashMap;

use crate::backend::outcome::ErrorKind;
use crate::backend::{Adapter, Connection, Discovered, Payload, Target};
use crate::config::tfserving::{RestFormat, TfServingConfig};
use crate::config::Protocol;
use crate::data::Entry;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::{ModelSpec, TensorSpec};
use inferperf_wire::proto::tensorflow::serving::model_spec::VersionChoice;
use inferperf_wire::proto::tensorflow::serving::ModelSpec as TfModelSpec;
use inferperf_wire::proto::tensorflow::{SignatureDef, TensorInfo};
use inferperf_wire::tfserving::{dims, from_tf_dtype, tf_dtype_name};

/// The TF Serving adapter, with the signature it calls and the REST body's form.
#[derive(Debug, Clone)]
pub struct TfServing {
    signature: String,
    rest_format: RestFormat,
}

impl TfServing {
    pub fn new(settings: &TfServingConfig) -> TfServing {
        TfServing {
            signature: settings.signature.clone(),
            rest_format: settings.rest_format,
        }
    }
}

#[allow(async_fn_in_trait)]
impl Adapter for TfServing {
    async fn discover(&self, target: &Target) -> RunResult<Discovered> {
        match target.protocol {
            Protocol::Http => rest::discover(target, &self.signature).await,
            Protocol::Grpc => grpc::discover(target, &self.signature).await,
        }
    }

    fn encode(&self, target: &Target, _model: &ModelSpec, entry: &Entry) -> RunResult<Payload> {
        let cannot = |e: inferperf_wire::WireError| {
            RunError::bad_option(format!(
                "--input-data {}: cannot encode the request for TF Serving: {e}.",
                entry.origin
            ))
        };
        match target.protocol {
            Protocol::Grpc => grpc::encode(target, &self.signature, entry).map_err(cannot),
            Protocol::Http => {
                rest::encode(target, &self.signature, self.rest_format, entry).map_err(cannot)
            }
        }
    }

    async fn open(&self, target: &Target, slot: usize) -> Result<Connection, ErrorKind> {
        Ok(match target.protocol {
            Protocol::Grpc => Connection::TfGrpc(grpc::TfGrpcConn::open(target, slot).await?),
            Protocol::Http => {
                Connection::TfHttp(rest::TfHttpConn::open(target, self.rest_format).await?)
            }
        })
    }
}

/// The `ModelSpec` of every request: the model, `-x` as its version, the signature.
pub fn model_spec(target: &Target, signature: &str) -> TfModelSpec {
    TfModelSpec {
        name: target.model.clone(),
        version_choice: (target.version.parse::<i64>().ok()).map(VersionChoice::Version),
        signature_name: signature.to_string(),
    }
}

/// The named signature, or one sentence listing the ones the model has.
pub fn pick_signature<'a>(
    target: &Target,
    signatures: &'a HashMap<String, SignatureDef>,
    wanted: &str,
) -> RunResult<&'a SignatureDef> {
    signatures.get(wanted).ok_or_else(|| {
        let mut names: Vec<&str> = signatures.keys().map(String::as_str).collect();
        names.sort_unstable();
        let there = if names.is_empty() {
            "it has none".to_string()
        } else {
            format!("it has {}", names.join(", "))
        };
        RunError::failed(format!(
            "Model '{}' at {} has no signature '{wanted}' ({there}): pick one with --model-signature-name.",
            target.model, target.peer.authority
        ))
    })
}

/// What discovery read, from the signature: its inputs and outputs by name, in name order.
pub fn discovered(target: &Target, signature: &SignatureDef) -> RunResult<Discovered> {
    Ok(Discovered {
        name: target.model.clone(),
        version: target.version.clone(),
        platform: "tensorflow_serving".to_string(),
        inputs: tensors(&signature.inputs)?,
        outputs: tensors(&signature.outputs)?,
        ..Default::default()
    })
}

fn tensors(map: &HashMap<String, TensorInfo>) -> RunResult<Vec<TensorSpec>> {
    let mut specs = map
        .iter()
        .map(|(name, info)| tensor(name, info))
        .collect::<RunResult<Vec<_>>>()?;
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(specs)
}

fn tensor(name: &str, info: &TensorInfo) -> RunResult<TensorSpec> {
    let datatype = from_tf_dtype(info.dtype).ok_or_else(|| {
        RunError::failed(format!(
            "The signature declares tensor '{name}' as {}, which inferperf cannot send (it knows the numeric types, DT_BOOL and DT_STRING).",
            tf_dtype_name(info.dtype)
        ))
    })?;
    if info.tensor_shape.as_ref().is_some_and(|s| s.unknown_rank) {
        return Err(RunError::failed(format!(
            "The signature leaves the rank of tensor '{name}' unknown, so inferperf cannot shape its data: export the model with a known rank."
        )));
    }
    Ok(TensorSpec {
        name: name.to_string(),
        datatype,
        shape: dims(info.tensor_shape.as_ref()),
    })
}

/// The sentence for a model the server does not have.
pub fn no_model(target: &Target, why: &str) -> RunError {
    let version = if target.version.is_empty() {
        String::new()
    } else {
        format!(" version {}", target.version)
    };
    RunError::failed(format!(
        "The TF Serving server at {} has no model '{}'{version} ({why}): check -m and -x.",
        target.peer.authority, target.model
    ))
}
