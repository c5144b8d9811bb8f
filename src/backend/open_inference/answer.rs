//! A `ModelInferResponse` as the client receives it — a unary gRPC answer, or an in-process
//! answer encoded as one — decoded and checked against its request with
//! [`crate::backend::AnswerCheck`]; answers a connection already found correct are known by
//! their bytes.

use bytes::Bytes;
use prost::Message;

use crate::backend::check::wire_failure;
use crate::backend::memo::{memoised, CheckedAnswers};
use crate::backend::outcome::{Failure, Malformation};
use crate::backend::Request;
use inferperf_wire as wire;
use inferperf_wire::proto::ModelInferResponse;

/// Checks an encoded `ModelInferResponse` (a unary gRPC answer, or an in-process one).
pub fn check_protobuf(
    memo: &mut CheckedAnswers<()>,
    request: &Request,
    message: &Bytes,
) -> Result<(), Failure> {
    memoised(memo, request, message, || {
        let decoded = ModelInferResponse::decode(message.clone()).map_err(protobuf_failure)?;
        let response = wire::from_grpc_response(decoded).map_err(wire_failure)?;
        request.check.check(&response.outputs)
    })
}

/// A message that is not the protobuf it should be.
pub fn protobuf_failure(e: prost::DecodeError) -> Failure {
    Failure::bad(
        Malformation::Unreadable,
        format!("the answer is not a protobuf answer message ({e})"),
    )
}
