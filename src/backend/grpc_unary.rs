//! The gRPC hot path: one unary `ModelInfer` call at a time on a plain h2 connection. tonic's
//! channel puts a tower buffer task, hyper's client task and a body-pipe task between a
//! request and the socket, and costs about 60k instructions per call; speaking gRPC's framing
//! directly over the h2 crate (HEADERS, one DATA frame framed when the dataset was built,
//! then the answer's DATA and trailers) keeps each call on the slot's own thread and costs a
//! fraction of that (bench/client/README.md). Slots share connections as perf_analyzer's
//! do. Discovery and statistics still use tonic.

use std::collections::HashMap;
use std::future::poll_fn;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, TE, USER_AGENT};
use http::{HeaderMap, Method, Request, Uri};

use super::outcome::ErrorKind;
use super::{http1, nanos, Reply, Target};

const INFER_PATH: &str = "/inference.GRPCInferenceService/ModelInfer";
/// Largest answer accepted (large tensors are legitimate).
pub const MAX_MESSAGE: usize = 256 * 1024 * 1024;
/// Receive windows: large enough that a big tensor is not throttled by window updates.
const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;
/// gRPC status codes used below.
const CANCELLED: i32 = 1;
const UNKNOWN: i32 = 2;
const PERMISSION_DENIED: i32 = 7;
const RESOURCE_EXHAUSTED: i32 = 8;
const INTERNAL: i32 = 13;
const UNAVAILABLE: i32 = 14;

/// A protobuf message in gRPC's length-prefixed framing (uncompressed), ready to send.
pub fn frame_message(message: &[u8]) -> Bytes {
    let mut framed = BytesMut::with_capacity(5 + message.len());
    framed.put_u8(0);
    framed.put_u32(message.len() as u32);
    framed.put_slice(message);
    framed.freeze()
}

/// The HTTP/2 connections of a run, each shared by up to `share` in-flight slots (a
/// "lane"), as Triton's C++ client library shares one gRPC channel among up to six clients
/// of the same URL — so perf_analyzer's slots share connections too. Sharing lets one write
/// and one read carry several calls.
pub struct SharedConnections {
    share: usize,
    lanes: tokio::sync::Mutex<HashMap<usize, Lane>>,
}

struct Lane {
    sender: SendRequest<Bytes>,
    broken: Arc<AtomicBool>,
}

impl std::fmt::Debug for SharedConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedConnections(up to {} calls each)", self.share)
    }
}

impl SharedConnections {
    pub fn new(share: usize) -> Self {
        SharedConnections {
            share: share.max(1),
            lanes: Default::default(),
        }
    }

    /// The lane (shared connection) of in-flight slot `slot`.
    pub fn lane(&self, slot: usize) -> usize {
        slot / self.share
    }

    /// A handle on the connection of `slot`'s lane, opened when the lane has none or its
    /// connection broke.
    pub async fn connect(&self, target: &Target, slot: usize) -> Result<GrpcConn, ErrorKind> {
        let mut lanes = self.lanes.lock().await;
        let lane = self.lane(slot);
        if let Some(open) = lanes
            .get(&lane)
            .filter(|l| !l.broken.load(Ordering::Relaxed))
        {
            return GrpcConn::new(target, open.sender.clone(), open.broken.clone());
        }
        let sender = open_connection(target).await?;
        let broken = Arc::new(AtomicBool::new(false));
        let open = Lane {
            sender: sender.clone(),
            broken: broken.clone(),
        };
        lanes.insert(lane, open);
        GrpcConn::new(target, sender, broken)
    }
}

/// Opens an HTTP/2 connection whose I/O runs as a task of the calling client thread; it ends
/// when every handle on it is dropped or the server goes away.
async fn open_connection(target: &Target) -> Result<SendRequest<Bytes>, ErrorKind> {
    let stream = http1::connect_tcp(&target.addrs, target.timeout).await?;
    let handshake = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(stream);
    let (sender, connection) = tokio::time::timeout(target.timeout, handshake)
        .await
        .map_err(|_| ErrorKind::Connection)?
        .map_err(|_| ErrorKind::Connection)?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// One slot's handle on its lane's HTTP/2 connection.
pub struct GrpcConn {
    sender: SendRequest<Bytes>,
    uri: Uri,
    headers: HeaderMap,
    /// Set by any handle of the lane that saw the connection fail.
    broken: Arc<AtomicBool>,
}

impl GrpcConn {
    fn new(
        target: &Target,
        sender: SendRequest<Bytes>,
        broken: Arc<AtomicBool>,
    ) -> Result<GrpcConn, ErrorKind> {
        let uri = format!("http://{}{INFER_PATH}", target.authority)
            .parse()
            .map_err(|_| ErrorKind::BadResponse)?;
        Ok(GrpcConn {
            sender,
            uri,
            headers: request_headers(target),
            broken,
        })
    }

    pub fn is_usable(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
    }

    /// Sends one framed `ModelInferRequest`, begun at `sent`, and returns the encoded
    /// `ModelInferResponse`.
    pub async fn infer(&mut self, framed: &Bytes, sent: Instant) -> Result<Reply, ErrorKind> {
        let result = self.call(framed, sent).await;
        if matches!(result, Err(ErrorKind::Connection)) {
            self.broken.store(true, Ordering::Relaxed);
        }
        result
    }

    async fn call(&mut self, framed: &Bytes, sent: Instant) -> Result<Reply, ErrorKind> {
        poll_fn(|cx| self.sender.poll_ready(cx))
            .await
            .map_err(|e| h2_error(&e))?;
        let mut request = Request::new(());
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        let (response, mut body) = self
            .sender
            .send_request(request, false)
            .map_err(|e| h2_error(&e))?;
        body.send_data(framed.clone(), true)
            .map_err(|e| h2_error(&e))?;
        let send_ns = nanos(sent.elapsed());
        let response = response.await.map_err(|e| h2_error(&e))?;
        let first_byte = Instant::now();
        let (head, mut stream) = response.into_parts();
        if head.status != http::StatusCode::OK {
            return Err(ErrorKind::HttpStatus(head.status.as_u16()));
        }
        // A "trailers-only" answer carries its status in the headers.
        if let Some(code) = grpc_status(&head.headers) {
            return Err(ErrorKind::GrpcCode(code));
        }
        let message = read_message(&mut stream).await?;
        let trailers = stream.trailers().await.map_err(|e| h2_error(&e))?;
        match trailers.as_ref().and_then(grpc_status) {
            Some(0) => {}
            Some(code) => return Err(ErrorKind::GrpcCode(code)),
            None => return Err(ErrorKind::GrpcCode(UNKNOWN)),
        }
        let done = Instant::now();
        Ok(Reply {
            send_ns,
            recv_ns: nanos(done.saturating_duration_since(first_byte)),
            done,
            body: message,
            header_len: None,
        })
    }
}

/// Reads the answer's DATA frames, gives their flow-control capacity back, and returns the
/// one message they frame.
async fn read_message(stream: &mut h2::RecvStream) -> Result<Bytes, ErrorKind> {
    let mut body = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    while let Some(chunk) = stream.data().await {
        let chunk = chunk.map_err(|e| h2_error(&e))?;
        let _ = stream.flow_control().release_capacity(chunk.len());
        if let Some(buffer) = joined.as_mut() {
            buffer.extend_from_slice(&chunk);
            if buffer.len() > MAX_MESSAGE + 5 {
                return Err(ErrorKind::BadResponse);
            }
        } else if body.is_empty() {
            body = chunk;
        } else {
            let mut buffer = BytesMut::from(&body[..]);
            buffer.extend_from_slice(&chunk);
            joined = Some(buffer);
        }
    }
    let body = joined.map_or(body, BytesMut::freeze);
    unframe(body)
}

/// The message inside gRPC's 5-byte length prefix; compressed or cut messages are bad.
fn unframe(mut body: Bytes) -> Result<Bytes, ErrorKind> {
    if body.len() < 5 || body[0] != 0 {
        return Err(ErrorKind::BadResponse);
    }
    body.advance(1);
    let len = body.get_u32() as usize;
    if body.len() < len {
        return Err(ErrorKind::BadResponse);
    }
    Ok(body.split_to(len))
}

fn grpc_status(headers: &HeaderMap) -> Option<i32> {
    headers.get("grpc-status")?.to_str().ok()?.parse().ok()
}

/// The error kind of an h2 failure: a broken connection, or a reset stream mapped to the gRPC
/// code the gRPC specification gives it.
fn h2_error(error: &h2::Error) -> ErrorKind {
    if error.is_io() || error.is_go_away() {
        return ErrorKind::Connection;
    }
    match error.reason() {
        Some(h2::Reason::REFUSED_STREAM) => ErrorKind::GrpcCode(UNAVAILABLE),
        Some(h2::Reason::CANCEL) => ErrorKind::GrpcCode(CANCELLED),
        Some(h2::Reason::ENHANCE_YOUR_CALM) => ErrorKind::GrpcCode(RESOURCE_EXHAUSTED),
        Some(h2::Reason::INADEQUATE_SECURITY) => ErrorKind::GrpcCode(PERMISSION_DENIED),
        Some(_) => ErrorKind::GrpcCode(INTERNAL),
        None => ErrorKind::Connection,
    }
}

/// The headers of every call: gRPC's content type, `te: trailers`, and the `-H` headers as
/// metadata (perf_analyzer drops them on gRPC; we send them).
fn request_headers(target: &Target) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(TE, HeaderValue::from_static("trailers"));
    headers.insert(
        USER_AGENT,
        HeaderValue::from_static(concat!("inferperf/", env!("CARGO_PKG_VERSION"))),
    );
    for (name, value) in &target.headers {
        if let (Ok(n), Ok(v)) = (HeaderName::from_str(name), HeaderValue::from_str(value)) {
            headers.append(n, v);
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_framed_and_unframed() {
        let framed = frame_message(b"abc");
        assert_eq!(&framed[..], b"\0\0\0\0\x03abc");
        assert_eq!(&unframe(framed).unwrap()[..], b"abc");
        let compressed = Bytes::from_static(b"\x01\0\0\0\x01z");
        assert_eq!(unframe(compressed).unwrap_err(), ErrorKind::BadResponse);
        let cut = Bytes::from_static(b"\0\0\0\0\x09abc");
        assert_eq!(unframe(cut).unwrap_err(), ErrorKind::BadResponse);
    }
}
