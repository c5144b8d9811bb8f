//! Reading KServe v2 answers as the client receives them — an HTTP body (JSON, or JSON then
//! binary tensor data), a `ModelInferResponse`, or one `ModelStreamInferResponse` of a stream —
//! into tensors, and checking them against the request with [`AnswerCheck`]. An answer that
//! is not a well-formed message, that is shorter or longer than it declares, or that misses
//! a requested output becomes a `bad response` [`Failure`] naming what was wrong. Answers a
//! connection already found correct are recognised by their bytes ([`CheckedAnswers`]).

use bytes::Bytes;
use prost::Message;

use crate::backend::check::wire_failure;
use crate::backend::memo::CheckedAnswers;
use crate::backend::open_inference::answer::protobuf_failure;
use crate::backend::outcome::{ErrorKind, Failure, Malformation};
use crate::backend::Request;
use inferperf_wire as wire;
use inferperf_wire::proto::infer_parameter::ParameterChoice;
use inferperf_wire::proto::ModelStreamInferResponse;

/// The response parameter that marks the last answer of a request on a stream.
pub const FINAL_RESPONSE: &str = "triton_final_response";
/// The request parameter that asks Triton for that mark (and for an empty final answer after
/// a decoupled model's last one).
pub const ENABLE_EMPTY_FINAL: &str = "triton_enable_empty_final_response";

/// What one message of a stream turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamAnswer {
    /// It carries outputs (it is an answer, not only the end mark).
    pub answered: bool,
    /// It is the request's last message.
    pub last: bool,
}

/// Checks an HTTP answer body (`header_len`: its `Inference-Header-Content-Length`).
pub fn check_http(
    memo: &mut CheckedAnswers<()>,
    request: &Request,
    body: &Bytes,
    header_len: Option<usize>,
) -> Result<(), Failure> {
    let tag = header_len.map_or(u64::MAX, |n| n as u64);
    if memo.lookup(request.index, tag, body).is_some() {
        return Ok(());
    }
    let response = wire::decode_http_response_bytes(body, header_len).map_err(wire_failure)?;
    request.check.check(&response.outputs)?;
    memo.remember(request.index, tag, body, ());
    Ok(())
}

/// Reads and checks one message of a `ModelStreamInfer` stream.
pub fn check_stream_message(
    memo: &mut CheckedAnswers<StreamAnswer>,
    request: &Request,
    message: &Bytes,
) -> Result<StreamAnswer, Failure> {
    if let Some(found) = memo.lookup(request.index, 0, message) {
        return Ok(found);
    }
    let decoded = ModelStreamInferResponse::decode(message.clone()).map_err(protobuf_failure)?;
    if !decoded.error_message.is_empty() {
        return Err(Failure::new(ErrorKind::StreamError, decoded.error_message));
    }
    let Some(response) = decoded.infer_response else {
        return Err(Failure::bad(
            Malformation::Unreadable,
            "a stream message carries neither an answer nor an error message",
        ));
    };
    // Without the mark (a server that does not give it) each request has one answer.
    let last = match response.parameters.get(FINAL_RESPONSE) {
        Some(p) => matches!(p.parameter_choice, Some(ParameterChoice::BoolParam(true))),
        None => true,
    };
    let answered = !response.outputs.is_empty();
    if answered {
        let outputs = wire::from_grpc_response(response).map_err(wire_failure)?;
        request.check.check(&outputs.outputs)?;
    }
    let found = StreamAnswer { answered, last };
    memo.remember(request.index, 0, message, found);
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{AnswerCheck, Payload};
    use inferperf_wire::model::{DataType, TensorSpec};
    use inferperf_wire::proto::InferParameter;
    use inferperf_wire::{InferResponse, Tensor};

    fn request() -> Request {
        Request {
            index: 0,
            payload: Payload::Http(Bytes::new()),
            input_tokens: 0,
            max_tokens: None,
            check: AnswerCheck {
                outputs: vec![TensorSpec {
                    name: "OUT".into(),
                    datatype: DataType::Int8,
                    shape: vec![2],
                }],
                expected: None,
                tolerance: 0.0,
            }
            .into(),
        }
    }

    fn answer(outputs: Vec<Tensor>) -> InferResponse {
        InferResponse {
            model_name: "m".into(),
            outputs,
            ..Default::default()
        }
    }

    fn out() -> Tensor {
        Tensor {
            name: "OUT".into(),
            datatype: DataType::Int8,
            shape: vec![2],
            data: Bytes::from_static(&[1, 2]),
        }
    }

    #[test]
    fn http_answers_are_decoded_checked_and_remembered() {
        let mut memo = CheckedAnswers::default();
        let request = request();
        let body = wire::encode_http_response(&answer(vec![out()]), &|_| true).unwrap();
        assert!(check_http(&mut memo, &request, &body.body, body.header_len).is_ok());
        assert!(memo
            .lookup(0, body.header_len.unwrap() as u64, &body.body)
            .is_some());
        let empty = wire::encode_http_response(&answer(vec![]), &|_| true).unwrap();
        let failure = check_http(&mut memo, &request, &empty.body, empty.header_len).unwrap_err();
        assert_eq!(
            failure.kind,
            ErrorKind::BadResponse(Malformation::MissingOutput)
        );
        let mut long = body.body.to_vec();
        long.push(0);
        let failure =
            check_http(&mut memo, &request, &Bytes::from(long), body.header_len).unwrap_err();
        assert_eq!(failure.kind, ErrorKind::BadResponse(Malformation::Overlong));
        let cut = body.body.slice(..body.body.len() - 1);
        let failure = check_http(&mut memo, &request, &cut, body.header_len).unwrap_err();
        assert_eq!(
            failure.kind,
            ErrorKind::BadResponse(Malformation::Truncated)
        );
        let failure =
            check_http(&mut memo, &request, &Bytes::from_static(b"<html>"), None).unwrap_err();
        assert_eq!(
            failure.kind,
            ErrorKind::BadResponse(Malformation::Unreadable)
        );
    }

    #[test]
    fn stream_messages_say_whether_they_end_the_request() {
        let mut memo = CheckedAnswers::default();
        let request = request();
        let message = |outputs: Vec<Tensor>, last: Option<bool>| {
            let mut response = wire::to_grpc_response(&answer(outputs));
            if let Some(last) = last {
                let flag = InferParameter {
                    parameter_choice: Some(ParameterChoice::BoolParam(last)),
                };
                response.parameters.insert(FINAL_RESPONSE.into(), flag);
            }
            let stream = ModelStreamInferResponse {
                error_message: String::new(),
                infer_response: Some(response),
            };
            Bytes::from(stream.encode_to_vec())
        };
        let middle = check_stream_message(&mut memo, &request, &message(vec![out()], Some(false)));
        assert_eq!(
            middle.unwrap(),
            StreamAnswer {
                answered: true,
                last: false
            }
        );
        let end = check_stream_message(&mut memo, &request, &message(vec![], Some(true)));
        assert_eq!(
            end.unwrap(),
            StreamAnswer {
                answered: false,
                last: true
            }
        );
        let unmarked = check_stream_message(&mut memo, &request, &message(vec![out()], None));
        assert!(
            unmarked.unwrap().last,
            "one answer per request without the mark"
        );
        let error = ModelStreamInferResponse {
            error_message: "boom".into(),
            infer_response: None,
        };
        let failure =
            check_stream_message(&mut memo, &request, &Bytes::from(error.encode_to_vec()));
        assert_eq!(failure.unwrap_err().kind, ErrorKind::StreamError);
    }
}
