//! perf_analyzer's dynamic gRPC (`--service-kind dynamic_grpc --grpc-method P.S/M`): any
//! gRPC method, called with messages the user's own generator made, so that a service with
//! no KServe API can be load-tested without writing a client. Each request is one call on
//! the method: every message of its `message_generator` entry written, the sending side
//! closed, then every answer message read until the call's status, which must be OK. The
//! messages are opaque here (no schema), so an answer is checked only for its framing and
//! status; the messages are framed once, when the dataset is encoded.

use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use http::Request as Head;

use crate::backend::outcome::{ErrorKind, Exchange, Failure};
use crate::backend::transport::grpc_unary::start_call;
use crate::backend::transport::h2::{grpc_status, h2_error, read_message, Lane, UNKNOWN};
use crate::backend::Conn;
use crate::backend::{nanos, Adapter, Connection, Discovered, Payload, Request, Target};
use crate::config::DynamicGrpcSettings;
use crate::data::message_generator::{self, input_spec, split_messages};
use crate::data::Entry;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::ModelSpec;

/// The dynamic gRPC adapter, with the method's path (`/package.Service/Method`).
#[derive(Debug, Clone)]
pub struct DynamicGrpc {
    path: String,
}

impl DynamicGrpc {
    pub fn new(settings: &DynamicGrpcSettings) -> DynamicGrpc {
        DynamicGrpc {
            path: format!("/{}", settings.method),
        }
    }
}

#[allow(async_fn_in_trait)]
impl Adapter for DynamicGrpc {
    /// Nothing to ask the server: the one input is the generator's output, as perf_analyzer
    /// models it.
    async fn discover(&self, target: &Target) -> RunResult<Discovered> {
        Ok(Discovered {
            name: target.model.clone(),
            version: target.version.clone(),
            platform: "dynamic_grpc".to_string(),
            inputs: vec![input_spec()],
            ..Default::default()
        })
    }

    fn encode(&self, _target: &Target, _model: &ModelSpec, entry: &Entry) -> RunResult<Payload> {
        let generated = (entry.inputs.iter())
            .find(|t| t.name == message_generator::INPUT)
            .ok_or_else(|| {
                RunError::bad_option(format!(
                    "--input-data {}: --service-kind dynamic_grpc needs a \"message_generator\" command in every entry.",
                    entry.origin
                ))
            })?;
        let messages = split_messages(&generated.data).map_err(|why| {
            RunError::bad_option(format!(
                "--input-data {}: the message_generator output {why}.",
                entry.origin
            ))
        })?;
        Ok(Payload::Grpc(frame(&messages)))
    }

    async fn open(&self, target: &Target, slot: usize) -> Result<Connection, ErrorKind> {
        Ok(Connection::DynamicGrpc(DynamicGrpcConn {
            lane: target.peer.grpc.connect(&target.peer, slot).await?,
            head: crate::backend::transport::h2::call_head(&target.peer, &self.path)?,
        }))
    }
}

/// The messages in gRPC's framing, one after the other: a 0 byte (not compressed), the
/// length as 4 big-endian bytes, the message.
fn frame(messages: &[&[u8]]) -> Bytes {
    let size = messages.iter().map(|m| m.len() + 5).sum();
    let mut out = BytesMut::with_capacity(size);
    for message in messages {
        out.put_u8(0);
        out.put_u32(message.len() as u32);
        out.put_slice(message);
    }
    out.freeze()
}

/// One slot's handle on its lane's HTTP/2 connection, calling the method.
pub struct DynamicGrpcConn {
    lane: Lane,
    head: Head<()>,
}

impl Conn for DynamicGrpcConn {
    fn is_usable(&mut self) -> bool {
        self.lane.is_usable()
    }

    /// One call: the request's messages, then its answers until the status.
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let Payload::Grpc(framed) = &request.payload else {
            return Err(ErrorKind::Connection.into());
        };
        let result = call(&mut self.lane, &self.head, framed, ex).await;
        if result
            .as_ref()
            .is_err_and(|f| f.kind == ErrorKind::Connection)
        {
            self.lane.mark_broken();
        }
        result
    }
}

/// Sends the framed messages and half-closes, then reads every answer message (each an
/// answer of the exchange) and the trailers; a status other than OK is the error.
async fn call(
    lane: &mut Lane,
    head: &Head<()>,
    framed: &Bytes,
    ex: &mut Exchange<'_>,
) -> Result<(), Failure> {
    let (head, mut stream, first_byte) = start_call(lane, head, framed, ex).await?;
    // A "trailers-only" answer: the status is in the headers, and no message follows.
    let status = match grpc_status(&head.headers) {
        Some(code) => Some(code),
        None => {
            let mut reader = lane.message_reader();
            while read_message(&mut reader, &mut stream).await?.is_some() {
                ex.answer(Instant::now());
            }
            let trailers = stream.trailers().await.map_err(|e| h2_error(&e))?;
            trailers.as_ref().and_then(grpc_status)
        }
    };
    match status.unwrap_or(UNKNOWN) {
        0 => {}
        code => return Err(ErrorKind::GrpcCode(code).into()),
    }
    let done = Instant::now();
    ex.recv_ns = nanos(done.saturating_duration_since(first_byte));
    ex.finish(done);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_framed_in_order() {
        let framed = frame(&[b"ab", b""]);
        assert_eq!(&framed[..], b"\x00\x00\x00\x00\x02ab\x00\x00\x00\x00\x00");
    }
}
