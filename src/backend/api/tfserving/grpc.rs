//! TF Serving over gRPC: discovery with tonic's `GetModelMetadata` (the signature map packed
//! in a `google.protobuf.Any`), each entry encoded once as a framed `PredictRequest`, and
//! `Predict` sent as a unary call of the transport (`transport::grpc_unary`, as KServe's
//! `ModelInfer` is). An answer counts once its outputs decode as the signature declares
//! them.

use bytes::Bytes;
use prost::Message;

use super::{discovered, model_spec, no_model, pick_signature};
use crate::backend::check::wire_failure;
use crate::backend::memo::{memoised, CheckedAnswers};
use crate::backend::outcome::{ErrorKind, Exchange, Failure, Malformation};
use crate::backend::transport::control::{connect_channel, status_kind, with_metadata};
use crate::backend::transport::grpc_unary::UnaryCall;
use crate::backend::transport::h2::MAX_MESSAGE;
use crate::backend::Conn;
use crate::backend::{grpc_code_name, Discovered, Payload, Request, Target};
use crate::data::Entry;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::grpc_frames;
use inferperf_wire::proto::tensorflow::serving::prediction_service_client::PredictionServiceClient;
use inferperf_wire::proto::tensorflow::serving::{
    GetModelMetadataRequest, PredictRequest, PredictResponse, SignatureDefMap,
};
use inferperf_wire::tfserving::{from_tensor_proto, to_tensor_proto};
use inferperf_wire::{Tensor, WireError};

/// The gRPC path of TF Serving's Predict.
pub const PREDICT_PATH: &str = "/tensorflow.serving.PredictionService/Predict";
/// The metadata field that holds the signatures.
pub const SIGNATURE_DEF: &str = "signature_def";

/// Reads the signature `signature` of the model from `GetModelMetadata`.
pub async fn discover(target: &Target, signature: &str) -> RunResult<Discovered> {
    let channel = connect_channel(&target.peer)
        .await
        .map_err(|_| target.unreachable("connection refused or timed out"))?;
    let mut client = PredictionServiceClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    let request = GetModelMetadataRequest {
        model_spec: Some(model_spec(target, signature)),
        metadata_field: vec![SIGNATURE_DEF.to_string()],
    };
    let answer = client
        .get_model_metadata(with_metadata(&target.peer, request))
        .await
        .map_err(|s| match status_kind(&s) {
            ErrorKind::Connection => target.unreachable(s.message()),
            _ => no_model(
                target,
                &format!("{}: {}", grpc_code_name(s.code() as i32), s.message()),
            ),
        })?
        .into_inner();
    let Some(packed) = answer.metadata.get(SIGNATURE_DEF) else {
        return Err(RunError::failed(format!(
            "The server at {} answered GetModelMetadata without the signature_def field: is it TF Serving?",
            target.peer.authority
        )));
    };
    let map = SignatureDefMap::decode(&packed.value[..]).map_err(|e| {
        RunError::failed(format!(
            "The server at {} sent a signature_def that is not a SignatureDefMap ({e}).",
            target.peer.authority
        ))
    })?;
    discovered(
        target,
        pick_signature(target, &map.signature_def, signature)?,
    )
}

/// One entry as a framed `PredictRequest` (every output of the signature is asked for).
pub fn encode(target: &Target, signature: &str, entry: &Entry) -> Result<Payload, WireError> {
    let inputs = entry
        .inputs
        .iter()
        .map(|t| Ok((t.name.clone(), to_tensor_proto(t)?)))
        .collect::<Result<_, WireError>>()?;
    let message = PredictRequest {
        model_spec: Some(model_spec(target, signature)),
        inputs,
        output_filter: Vec::new(),
    };
    let framed = grpc_frames::frame(&message.encode_to_vec(), target.peer.grpc_compression);
    Ok(Payload::Grpc(framed))
}

/// Checks an encoded `PredictResponse`: every output decodes and fits the signature.
pub fn check_answer(
    memo: &mut CheckedAnswers<()>,
    request: &Request,
    message: &Bytes,
) -> Result<(), Failure> {
    memoised(memo, request, message, || {
        let answer = PredictResponse::decode(message.clone()).map_err(|e| {
            Failure::bad(
                Malformation::Unreadable,
                format!("the answer is not a PredictResponse ({e})"),
            )
        })?;
        let outputs = answer
            .outputs
            .iter()
            .map(|(name, proto)| from_tensor_proto(name, proto))
            .collect::<Result<Vec<Tensor>, WireError>>()
            .map_err(wire_failure)?;
        request.check.check(&outputs)
    })
}

/// One slot's `Predict` calls on its lane's HTTP/2 connection, each answer checked.
pub struct TfGrpcConn {
    call: UnaryCall,
    checked: CheckedAnswers<()>,
}

impl TfGrpcConn {
    pub async fn open(target: &Target, slot: usize) -> Result<TfGrpcConn, ErrorKind> {
        Ok(TfGrpcConn {
            call: UnaryCall::open(&target.peer, slot, PREDICT_PATH).await?,
            checked: CheckedAnswers::default(),
        })
    }
}

impl Conn for TfGrpcConn {
    fn is_usable(&mut self) -> bool {
        self.call.is_usable()
    }

    /// Sends one framed `PredictRequest` and reads and checks the answer.
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let Payload::Grpc(framed) = &request.payload else {
            return Err(ErrorKind::Connection.into());
        };
        let (message, done) = self.call.call(framed, ex).await?;
        check_answer(&mut self.checked, request, &message)?;
        ex.answer(done);
        ex.finish(done);
        Ok(())
    }
}
