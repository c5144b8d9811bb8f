//! One request and its whole answer on an HTTP/1.1 connection, timed for the exchange: the
//! framed request written, the answer read to its end and its status accepted, the send and
//! receive times set. The REST adapters whose answers come in one piece (KServe, TF Serving,
//! TorchServe) check the body themselves.

use std::time::Instant;

use super::{Http1Stream, Response};
use crate::backend::outcome::{ErrorKind, Exchange, Failure};
use crate::backend::{nanos, Payload, Request};

/// Writes the framed HTTP request of `request` and reads its whole answer, which must be a
/// 200, setting the exchange's send and receive times: the response and when it was complete
/// (a REST connection's inference call).
pub async fn post(
    io: &mut Http1Stream,
    request: &Request,
    ex: &mut Exchange<'_>,
) -> Result<(Response, Instant), Failure> {
    post_accepting(io, request, ex, |status| status == 200).await
}

/// [`post`], with `accept` saying which statuses are a success (TorchServe: any 2xx).
pub async fn post_accepting(
    io: &mut Http1Stream,
    request: &Request,
    ex: &mut Exchange<'_>,
    accept: fn(u16) -> bool,
) -> Result<(Response, Instant), Failure> {
    let Payload::Http(bytes) = &request.payload else {
        return Err(ErrorKind::Connection.into());
    };
    io.send(bytes).await?;
    let written = Instant::now();
    let response = io.receive().await?;
    let done = Instant::now();
    if !accept(response.status) {
        return Err(ErrorKind::HttpStatus(response.status).into());
    }
    ex.send_ns = nanos(written.saturating_duration_since(ex.sent));
    ex.recv_ns = nanos(done.saturating_duration_since(response.first_byte));
    Ok((response, done))
}
