//! The reply kit every route file of the embedded server's HTTP side answers with: the
//! [`Reply`] type and its [`ReplyBody`] (whole, or a stream of frames), replies with a JSON,
//! byte or empty body, the `{"error": "..."}` reply with Triton's status codes, and
//! [`read_body`], which reads a request's body up to [`MAX_MESSAGE_BYTES`]. It imports no
//! route file and no model state, so every route file can use it without a circle.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};

use crate::error::InferError;
use crate::limits::MAX_MESSAGE_BYTES;

pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");
pub(crate) const OCTETS: HeaderValue = HeaderValue::from_static("application/octet-stream");

pub(crate) type Reply = Response<ReplyBody>;

/// A reply's body: whole (every KServe answer, sent with its length), or a stream of
/// frames produced over time (an OpenAI streamed answer).
pub(crate) enum ReplyBody {
    Full(Full<Bytes>),
    Stream(Pin<Box<dyn Body<Data = Bytes, Error = Infallible> + Send>>),
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ReplyBody::Full(full) => Pin::new(full).poll_frame(cx),
            ReplyBody::Stream(stream) => stream.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ReplyBody::Full(full) => full.is_end_stream(),
            ReplyBody::Stream(stream) => stream.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReplyBody::Full(full) => full.size_hint(),
            ReplyBody::Stream(stream) => stream.size_hint(),
        }
    }
}

fn whole(body: Bytes) -> Reply {
    Response::new(ReplyBody::Full(Full::new(body)))
}

/// The body, at most [`MAX_MESSAGE_BYTES`] long; an HTTP status and message if not.
pub(crate) async fn read_body(headers: &HeaderMap, body: Incoming) -> Result<Bytes, (u16, String)> {
    let too_big = || {
        (
            413,
            format!("the request body is larger than {MAX_MESSAGE_BYTES} bytes"),
        )
    };
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok());
    if declared
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > MAX_MESSAGE_BYTES)
    {
        return Err(too_big());
    }
    match Limited::new(body, MAX_MESSAGE_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_big()),
        Err(e) => Err((400, format!("the request body could not be read: {e}"))),
    }
}

/// The 404 of a path no route file serves.
pub(crate) fn no_route(path: &str) -> Reply {
    let message = format!("inferperf serve has no endpoint {path}");
    error_reply(StatusCode::NOT_FOUND, &message)
}

/// A reply with no body.
pub(crate) fn empty(status: StatusCode) -> Reply {
    let mut reply = whole(Bytes::new());
    *reply.status_mut() = status;
    reply
}

/// A whole body of the given content type.
pub(crate) fn body_reply(status: StatusCode, body: Bytes, content_type: HeaderValue) -> Reply {
    let mut reply = whole(body);
    *reply.status_mut() = status;
    reply.headers_mut().insert(CONTENT_TYPE, content_type);
    reply
}

pub(crate) fn json_reply(status: StatusCode, value: &Value) -> Reply {
    body_reply(status, Bytes::from(value.to_string()), JSON)
}

/// `{"error": message}`, as Triton answers errors.
pub(crate) fn error_reply(status: StatusCode, message: &str) -> Reply {
    json_reply(status, &json!({ "error": message }))
}

/// [`error_reply`] with the error's own HTTP status.
pub(crate) fn infer_error_reply(error: &InferError) -> Reply {
    let status = StatusCode::from_u16(error.http_status());
    error_reply(
        status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        error.message(),
    )
}
