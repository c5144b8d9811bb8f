//! A unary gRPC call on the h2 transport — KServe v2's `ModelInfer`, and TF Serving's
//! `Predict`, which differ only in the path and in how the answer is checked: HEADERS, the
//! one DATA frame framed when the dataset was built, then the answer's DATA and trailers,
//! read on the slot's own thread. The answer is checked before it counts; a call that comes
//! back with more than the one message it declares is a bad response.

use std::future::poll_fn;
use std::time::Instant;

use bytes::Bytes;
use http::Request as Head;

use super::answer::check_protobuf;
use super::shm_answer::SlotShm;
use crate::backend::h2::{copy_head, grpc_status, h2_error, Lane, MessageReader, UNKNOWN};
use crate::backend::memo::CheckedAnswers;
use crate::backend::outcome::{ErrorKind, Exchange, Failure, Malformation};
use crate::backend::{nanos, Payload, Request, Target};

/// The gRPC path of KServe's ModelInfer.
pub const INFER_PATH: &str = "/inference.GRPCInferenceService/ModelInfer";

/// How a unary call's answer message is checked against its request (KServe's
/// [`check_protobuf`], TF Serving's `PredictResponse` check).
pub type CheckMessage = fn(&mut CheckedAnswers<()>, &Request, &Bytes) -> Result<(), Failure>;

/// One slot's handle on its lane's HTTP/2 connection, making unary calls on one path.
pub struct GrpcConn {
    lane: Lane,
    head: Head<()>,
    check: CheckMessage,
    checked: CheckedAnswers<()>,
    /// `--shared-memory system`: the slot's output region and its requests.
    shm: Option<SlotShm>,
}

impl GrpcConn {
    /// A connection calling KServe's ModelInfer.
    pub async fn open(target: &Target, slot: usize) -> Result<GrpcConn, ErrorKind> {
        GrpcConn::open_on(target, slot, INFER_PATH, check_protobuf).await
    }

    /// A connection calling the method at `path`, its answers checked with `check`.
    pub async fn open_on(
        target: &Target,
        slot: usize,
        path: &str,
        check: CheckMessage,
    ) -> Result<GrpcConn, ErrorKind> {
        Ok(GrpcConn {
            lane: target.grpc.connect(target, slot).await?,
            head: crate::backend::h2::call_head(target, path)?,
            check,
            checked: CheckedAnswers::default(),
            shm: None,
        })
    }

    /// The connection of a slot whose requests use shared-memory regions.
    pub fn with_shm(self, shm: SlotShm) -> GrpcConn {
        GrpcConn {
            shm: Some(shm),
            ..self
        }
    }

    pub fn is_usable(&self) -> bool {
        self.lane.is_usable()
    }

    /// Sends one framed request message and reads and checks the answer.
    pub async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let own = self.shm.as_mut().map(|shm| shm.request(request));
        let request = own.as_ref().unwrap_or(request);
        let Payload::Grpc(framed) = &request.payload else {
            return Err(ErrorKind::Connection.into());
        };
        let (message, done) = match unary_call(&mut self.lane, &self.head, framed, ex).await {
            Ok(answer) => answer,
            Err(failure) => {
                if failure.kind == ErrorKind::Connection {
                    self.lane.mark_broken();
                }
                return Err(failure);
            }
        };
        match &self.shm {
            Some(shm) => shm.check_protobuf(&mut self.checked, request, &message)?,
            None => (self.check)(&mut self.checked, request, &message)?,
        }
        ex.answer(done);
        ex.finish(done);
        Ok(())
    }
}

/// Starts a call with the head `head` on the lane's connection: sends its framed
/// message(s) and closes the sending side, then waits for the answer's head. Returns the
/// answer's head and body and when its first byte came; a status other than 200 is the
/// error.
pub(crate) async fn start_call(
    lane: &mut Lane,
    head: &Head<()>,
    framed: &Bytes,
    ex: &mut Exchange<'_>,
) -> Result<(http::response::Parts, ::h2::RecvStream, Instant), Failure> {
    let sender = &mut lane.sender;
    poll_fn(|cx| sender.poll_ready(cx))
        .await
        .map_err(|e| h2_error(&e))?;
    let (response, mut body) = sender
        .send_request(copy_head(head), false)
        .map_err(|e| h2_error(&e))?;
    body.send_data(framed.clone(), true)
        .map_err(|e| h2_error(&e))?;
    ex.send_ns = nanos(ex.sent.elapsed());
    let response = response.await.map_err(|e| h2_error(&e))?;
    let first_byte = Instant::now();
    let (head, stream) = response.into_parts();
    if head.status != http::StatusCode::OK {
        return Err(ErrorKind::HttpStatus(head.status.as_u16()).into());
    }
    Ok((head, stream, first_byte))
}

/// One unary call with the head `head` on the lane's connection (KServe's ModelInfer, TF
/// Serving's Predict): the answer's message and when it was complete.
pub(crate) async fn unary_call(
    lane: &mut Lane,
    head: &Head<()>,
    framed: &Bytes,
    ex: &mut Exchange<'_>,
) -> Result<(Bytes, Instant), Failure> {
    let (head, mut stream, first_byte) = start_call(lane, head, framed, ex).await?;
    // A "trailers-only" answer carries its status in the headers, and no message.
    match grpc_status(&head.headers) {
        Some(0) => {
            return Err(Failure::bad(
                Malformation::Truncated,
                "the call ended with status OK but no answer message",
            ))
        }
        Some(code) => return Err(ErrorKind::GrpcCode(code).into()),
        None => {}
    }
    let mut reader = MessageReader::for_lane(lane);
    let message = reader.read(&mut stream).await?;
    let extra = reader.read(&mut stream).await?;
    let trailers = stream.trailers().await.map_err(|e| h2_error(&e))?;
    match trailers.as_ref().and_then(grpc_status) {
        Some(0) => {}
        Some(code) => return Err(ErrorKind::GrpcCode(code).into()),
        None => return Err(ErrorKind::GrpcCode(UNKNOWN).into()),
    }
    let Some(message) = message else {
        return Err(Failure::bad(
            Malformation::Truncated,
            "the call ended with status OK but no answer message",
        ));
    };
    if extra.is_some() {
        return Err(Failure::bad(
            Malformation::Overlong,
            "the unary call answered with more than one message",
        ));
    }
    let done = Instant::now();
    ex.recv_ns = nanos(done.saturating_duration_since(first_byte));
    Ok((message, done))
}
