//! A unary gRPC call on the hand-written HTTP/2 client of `transport::h2_unary`: HEADERS
//! encoded once per slot, the message framed when the dataset was built, then the answer's
//! DATA and trailers, read on the slot's own thread — exactly one message, and status OK in
//! the trailers. What the message must be is the adapter's to check (KServe's `ModelInfer`,
//! TF Serving's `Predict`). (`start_call`, on h2, serves the dynamic gRPC adapter.)

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::Request as Head;

use super::h2::{copy_head, h2_error, Lane, UNKNOWN};
use super::h2_unary::frame::{encode_call_head, CallHead};
use super::h2_unary::{Received, UnaryConnection};
use super::Peer;
use crate::backend::nanos;
use crate::backend::outcome::{ErrorKind, Exchange, Failure, Malformation};
use crate::config::GrpcCompression;
use inferperf_wire::grpc_frames::{encoding_name, MessageReader};

/// The user agent every call names.
const USER_AGENT: &str = concat!("inferperf/", env!("CARGO_PKG_VERSION"));

/// One slot's handle on its lane's HTTP/2 connection (the hand-written unary client of
/// `transport::h2_unary`), making unary calls on one path.
pub struct UnaryCall {
    conn: Arc<UnaryConnection>,
    /// The calls' request head, HPACK-encoded once.
    head: Vec<u8>,
    limit: usize,
    compression: Option<GrpcCompression>,
}

impl UnaryCall {
    /// A handle calling the method at `path`.
    pub async fn open(peer: &Peer, slot: usize, path: &str) -> Result<UnaryCall, ErrorKind> {
        Ok(UnaryCall {
            conn: peer.grpc.connect_unary(peer, slot).await?,
            head: encode_call_head(&CallHead {
                tls: peer.tls.is_some(),
                authority: &peer.authority,
                path,
                encoding: peer.grpc_compression.map(encoding_name),
                user_agent: USER_AGENT,
                metadata: &peer.headers,
            }),
            limit: peer.max_response_bytes,
            compression: peer.grpc_compression,
        })
    }

    pub fn is_usable(&self) -> bool {
        self.conn.is_usable()
    }

    /// Sends one framed request message and reads the answer: its one message and when
    /// the answer was complete (the exchange's send and receive times are set).
    pub async fn call(
        &mut self,
        framed: &Bytes,
        ex: &mut Exchange<'_>,
    ) -> Result<(Bytes, Instant), Failure> {
        let mut call = self.conn.call(&self.head, framed, self.limit);
        let received = (&mut call).await;
        if let Some(sent) = call.sent {
            ex.send_ns = nanos(sent.saturating_duration_since(ex.sent));
        }
        drop(call);
        unary_answer(received?, self.limit, self.compression, ex)
    }
}

/// A unary call's answer as gRPC reads it: HTTP 200, no status in the head (a
/// "trailers-only" answer has no message), exactly one message, and trailers with status
/// OK. Returns the message and when the answer was complete.
fn unary_answer(
    received: Received,
    limit: usize,
    compression: Option<GrpcCompression>,
    ex: &mut Exchange<'_>,
) -> Result<(Bytes, Instant), Failure> {
    if received.status != 200 {
        return Err(ErrorKind::HttpStatus(received.status).into());
    }
    match received.head_grpc_status {
        Some(0) => return Err(no_message()),
        Some(code) => return Err(ErrorKind::GrpcCode(code).into()),
        None => {}
    }
    let mut reader = MessageReader::with(limit, compression);
    reader.push(received.body);
    let message = reader.next_message()?;
    let extra = reader.next_message()?;
    if reader.leftover() > 0 && extra.is_none() {
        return Err(Failure::bad(
            Malformation::Truncated,
            format!(
                "the stream ended inside a gRPC message ({} bytes of it came)",
                reader.leftover()
            ),
        ));
    }
    match (received.trailers, received.trailer_grpc_status) {
        (true, Some(0)) => {}
        (true, Some(code)) => return Err(ErrorKind::GrpcCode(code).into()),
        _ => return Err(ErrorKind::GrpcCode(UNKNOWN).into()),
    }
    let Some(message) = message else {
        return Err(no_message());
    };
    if extra.is_some() {
        return Err(Failure::bad(
            Malformation::Overlong,
            "the unary call answered with more than one message",
        ));
    }
    ex.recv_ns = nanos(received.done.saturating_duration_since(received.first_byte));
    Ok((message, received.done))
}

fn no_message() -> Failure {
    Failure::bad(
        Malformation::Truncated,
        "the call ended with status OK but no answer message",
    )
}

/// Starts a call with the head `head` on the lane's connection: sends its framed
/// message(s) and closes the sending side, then waits for the answer's head. Returns the
/// answer's head and body and when its first byte came; a status other than 200 is the
/// error.
pub async fn start_call(
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
