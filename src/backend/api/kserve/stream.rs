//! KServe v2's bidirectional `ModelStreamInfer` (`--streaming`) on the h2 transport: each
//! in-flight slot keeps one stream open on its lane's connection and sends its requests on
//! it one after the other, each as one framed `ModelInferRequest`. A request's answers are
//! read as they come — every one timed — until the one marked `triton_final_response` (a
//! decoupled model's empty final answer, or the only answer of any other model). A stream
//! whose state is in doubt after a failure is reset and opened again for the next request,
//! so that late answers of one request never count for the next.

use std::future::poll_fn;
use std::time::Instant;

use bytes::Bytes;
use h2::client::ResponseFuture;
use h2::{RecvStream, SendStream};
use http::Request as Head;

use super::answer::{check_stream_message, StreamAnswer};
use crate::backend::memo::CheckedAnswers;
use crate::backend::outcome::{ErrorKind, Exchange, Failure, Malformation};
use crate::backend::transport::h2::{copy_head, grpc_status, h2_error, read_message, Lane};
use crate::backend::Conn;
use crate::backend::{nanos, Payload, Request, Target};
use inferperf_wire::grpc_frames::MessageReader;

const STREAM_PATH: &str = "/inference.GRPCInferenceService/ModelStreamInfer";

/// One open stream: where requests go, and where answers come from (once the server's
/// response head has arrived).
struct OpenStream {
    requests: SendStream<Bytes>,
    head: Option<ResponseFuture>,
    answers: Option<RecvStream>,
    reader: MessageReader,
}

/// One slot's stream on its lane's HTTP/2 connection.
pub struct StreamConn {
    lane: Lane,
    head: Head<()>,
    stream: Option<OpenStream>,
    checked: CheckedAnswers<StreamAnswer>,
}

impl StreamConn {
    pub async fn open(target: &Target, slot: usize) -> Result<StreamConn, ErrorKind> {
        Ok(StreamConn {
            lane: target.peer.grpc.connect(&target.peer, slot).await?,
            head: crate::backend::transport::h2::call_head(&target.peer, STREAM_PATH)?,
            stream: None,
            checked: CheckedAnswers::default(),
        })
    }

    async fn exchange(
        &mut self,
        framed: &Bytes,
        request: &Request,
        ex: &mut Exchange<'_>,
    ) -> Result<(), Failure> {
        if self.stream.is_none() {
            self.stream = Some(self.start().await?);
        }
        let Some(OpenStream {
            requests,
            head,
            answers,
            reader,
        }) = self.stream.as_mut()
        else {
            return Err(ErrorKind::Connection.into());
        };
        requests
            .send_data(framed.clone(), false)
            .map_err(|e| h2_error(&e))?;
        ex.send_ns = nanos(ex.sent.elapsed());
        let answers = answers_side(head, answers).await?;
        loop {
            let Some(message) = read_message(reader, answers).await? else {
                return Err(ended(answers).await);
            };
            let at = Instant::now();
            let found = check_stream_message(&mut self.checked, request, &message)?;
            if found.answered {
                ex.answer(at);
            }
            if found.last {
                ex.finish(at);
                return Ok(());
            }
        }
    }

    /// Opens a new stream on the lane.
    async fn start(&mut self) -> Result<OpenStream, Failure> {
        let sender = &mut self.lane.sender;
        poll_fn(|cx| sender.poll_ready(cx))
            .await
            .map_err(|e| h2_error(&e))?;
        let (head, requests) = sender
            .send_request(copy_head(&self.head), false)
            .map_err(|e| h2_error(&e))?;
        Ok(OpenStream {
            requests,
            head: Some(head),
            answers: None,
            reader: self.lane.message_reader(),
        })
    }
}

impl Conn for StreamConn {
    fn is_usable(&mut self) -> bool {
        self.lane.is_usable()
    }

    /// Sends one request on the stream and reads its answers up to the final one.
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let Payload::Grpc(framed) = &request.payload else {
            return Err(ErrorKind::Connection.into());
        };
        let result = self.exchange(framed, request, ex).await;
        if let Err(failure) = &result {
            if failure.kind == ErrorKind::Connection {
                self.lane.mark_broken();
            }
            // A server's error message ends its request and leaves the stream as it was;
            // after anything else the stream may still hold answers of this request.
            if failure.kind != ErrorKind::StreamError {
                self.stream = None;
            }
        }
        result
    }
}

/// The answers' side of a stream, once the server's response head is in (`head` is the head
/// still awaited, if it is).
async fn answers_side<'a>(
    head: &mut Option<ResponseFuture>,
    answers: &'a mut Option<RecvStream>,
) -> Result<&'a mut RecvStream, Failure> {
    if let Some(pending) = head.take() {
        let response = pending.await.map_err(|e| h2_error(&e))?;
        let (head, body) = response.into_parts();
        if head.status != http::StatusCode::OK {
            return Err(ErrorKind::HttpStatus(head.status.as_u16()).into());
        }
        if let Some(code) = grpc_status(&head.headers) {
            return Err(ErrorKind::GrpcCode(code).into());
        }
        *answers = Some(body);
    }
    answers
        .as_mut()
        .ok_or_else(|| Failure::from(ErrorKind::Connection))
}

/// Why a stream that ended before a request's final answer ended: the status of its
/// trailers, or a cut when there is none.
async fn ended(answers: &mut RecvStream) -> Failure {
    match answers.trailers().await {
        Ok(Some(trailers)) => match grpc_status(&trailers) {
            Some(code) if code != 0 => ErrorKind::GrpcCode(code).into(),
            _ => Failure::bad(
                Malformation::Truncated,
                "the server closed the stream before the request's final answer",
            ),
        },
        Ok(None) => Failure::bad(
            Malformation::Truncated,
            "the server closed the stream before the request's final answer",
        ),
        Err(e) => h2_error(&e).into(),
    }
}
