//! TF Serving's `PredictionService` on the embedded server's gRPC port, beside KServe's
//! service and over the same [`LocalServer`]: `Predict` turns `TensorProto` inputs into the
//! models' tensors and back, `GetModelMetadata` describes each model as one signature,
//! `serving_default`, whose tensors carry a leading -1 when the model batches. The REST
//! routes ([`super::http`]) share the core here, so both count alike.

use prost::Message;
use tonic::codec::CompressionEncoding;
use tonic::{Request, Response, Status};

use super::describe;
use super::error::InferError;
use super::limits::MAX_MESSAGE_BYTES;
use super::local::LocalServer;
use inferperf_wire::proto::model_metadata_response::TensorMetadata;
use inferperf_wire::proto::tensorflow::serving::model_spec::VersionChoice;
use inferperf_wire::proto::tensorflow::serving::prediction_service_server::{
    PredictionService, PredictionServiceServer,
};
use inferperf_wire::proto::tensorflow::serving::{
    GetModelMetadataRequest, GetModelMetadataResponse, ModelSpec, PredictRequest, PredictResponse,
    SignatureDefMap,
};
use inferperf_wire::proto::tensorflow::{tensor_info, SignatureDef, TensorInfo};
use inferperf_wire::tfserving::{from_tensor_proto, tf_dtype, tf_shape, to_tensor_proto};
use inferperf_wire::{self as wire, InferRequest, InferResponse, RequestedOutput, Tensor};

/// The one signature each model has.
pub(crate) const SIGNATURE: &str = "serving_default";
/// The method name TF Serving gives predict signatures.
const PREDICT_METHOD: &str = "tensorflow/serving/predict";
/// The type URL of the packed signature map.
const SIGNATURE_MAP_URL: &str = "type.googleapis.com/tensorflow.serving.SignatureDefMap";

/// The service, for the gRPC router.
pub(crate) fn service(server: LocalServer) -> PredictionServiceServer<TfService> {
    PredictionServiceServer::new(TfService { server })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Deflate)
        .send_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Deflate)
}

pub(crate) struct TfService {
    server: LocalServer,
}

/// The model and version a `ModelSpec` names (version as our string; labels unknown).
fn model_of(spec: Option<&ModelSpec>) -> Result<(String, String), InferError> {
    let spec = spec.ok_or_else(|| InferError::BadRequest("Missing ModelSpec".into()))?;
    let version = match &spec.version_choice {
        None => String::new(),
        Some(VersionChoice::Version(v)) => v.to_string(),
        Some(VersionChoice::VersionLabel(label)) => {
            return Err(InferError::NotFound(format!(
                "Unrecognized servable version label: {label}"
            )))
        }
    };
    Ok((spec.name.clone(), version))
}

/// Refuses any signature but the one the models have.
pub(crate) fn check_signature(name: &str) -> Result<(), InferError> {
    if name.is_empty() || name == SIGNATURE {
        return Ok(());
    }
    Err(InferError::BadRequest(format!(
        "Serving signature name: \"{name}\" not found in signature def"
    )))
}

/// One prediction through the model's scheduler, counted as every front end counts it.
pub(crate) async fn predict(
    server: &LocalServer,
    name: &str,
    version: &str,
    inputs: Vec<Tensor>,
    output_filter: &[String],
) -> Result<InferResponse, InferError> {
    let model = &server.find(name, version)?.model;
    model.refuse_kserve()?;
    if model.decoupled() {
        return Err(InferError::decoupled("Predict"));
    }
    let outputs = (output_filter.iter())
        .map(|name| RequestedOutput {
            name: name.clone(),
            binary: false,
        })
        .collect();
    let request = InferRequest {
        inputs,
        outputs,
        ..Default::default()
    };
    server.infer(name, version, request).await
}

/// The model's one signature, from the metadata KServe's front ends give.
pub(crate) fn signature_def(
    server: &LocalServer,
    name: &str,
    version: &str,
) -> Result<SignatureDef, InferError> {
    let model = &server.find(name, version)?.model;
    model.refuse_kserve()?;
    let meta = describe::metadata(model);
    let infos = |tensors: &[TensorMetadata]| {
        (tensors.iter())
            .map(|t| (t.name.clone(), tensor_info(t)))
            .collect()
    };
    Ok(SignatureDef {
        inputs: infos(&meta.inputs),
        outputs: infos(&meta.outputs),
        method_name: PREDICT_METHOD.to_string(),
    })
}

fn tensor_info(t: &TensorMetadata) -> TensorInfo {
    let dtype = wire::parse_datatype(&t.name, &t.datatype).map_or(0, |d| tf_dtype(d) as i32);
    TensorInfo {
        encoding: Some(tensor_info::Encoding::Name(format!("{}:0", t.name))),
        dtype,
        tensor_shape: Some(tf_shape(&t.shape)),
    }
}

async fn predict_message(
    server: &LocalServer,
    msg: PredictRequest,
) -> Result<PredictResponse, Status> {
    let (name, version) = model_of(msg.model_spec.as_ref())?;
    let signature = msg
        .model_spec
        .as_ref()
        .map_or("", |s| s.signature_name.as_str());
    check_signature(signature)?;
    let inputs = (msg.inputs.iter())
        .map(|(name, proto)| from_tensor_proto(name, proto))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Status::invalid_argument(e.to_string()))?;
    let response = predict(server, &name, &version, inputs, &msg.output_filter).await?;
    let outputs = (response.outputs.iter())
        .map(|t| Ok((t.name.clone(), to_tensor_proto(t)?)))
        .collect::<Result<_, wire::WireError>>()
        .map_err(|e| Status::internal(e.to_string()))?;
    Ok(PredictResponse {
        model_spec: Some(answered_spec(&name, SIGNATURE)),
        outputs,
    })
}

/// The `ModelSpec` an answer carries: the model, its one version, the signature.
fn answered_spec(name: &str, signature: &str) -> ModelSpec {
    ModelSpec {
        name: name.to_string(),
        version_choice: Some(VersionChoice::Version(1)),
        signature_name: signature.to_string(),
    }
}

fn metadata_message(
    server: &LocalServer,
    msg: GetModelMetadataRequest,
) -> Result<GetModelMetadataResponse, Status> {
    let (name, version) = model_of(msg.model_spec.as_ref())?;
    if let Some(other) = msg.metadata_field.iter().find(|f| *f != "signature_def") {
        return Err(Status::invalid_argument(format!(
            "Metadata field {other} is not supported"
        )));
    }
    if msg.metadata_field.is_empty() {
        return Err(Status::invalid_argument(
            "GetModelMetadataRequest must specify at least one metadata_field",
        ));
    }
    let signature = signature_def(server, &name, &version)?;
    let map = SignatureDefMap {
        signature_def: [(SIGNATURE.to_string(), signature)].into_iter().collect(),
    };
    let packed = prost_types::Any {
        type_url: SIGNATURE_MAP_URL.to_string(),
        value: map.encode_to_vec(),
    };
    Ok(GetModelMetadataResponse {
        model_spec: Some(answered_spec(&name, "")),
        metadata: [("signature_def".to_string(), packed)]
            .into_iter()
            .collect(),
    })
}

#[tonic::async_trait]
impl PredictionService for TfService {
    async fn predict(
        &self,
        request: Request<PredictRequest>,
    ) -> Result<Response<PredictResponse>, Status> {
        Ok(Response::new(
            predict_message(&self.server, request.into_inner()).await?,
        ))
    }

    async fn get_model_metadata(
        &self,
        request: Request<GetModelMetadataRequest>,
    ) -> Result<Response<GetModelMetadataResponse>, Status> {
        Ok(Response::new(metadata_message(
            &self.server,
            request.into_inner(),
        )?))
    }
}
