//! gRPC's transport, written on the h2 crate for the hot path: the HTTP/2 connections of a run
//! (shared by several in-flight slots, as perf_analyzer's client shares a channel), the
//! request headers of a call, gRPC's 5-byte message framing, and the reading of framed
//! messages from a stream of DATA frames. tonic's channel puts a tower buffer task, hyper's
//! client task and a body-pipe task between a request and the socket and costs about 60k
//! instructions per call; driving h2 directly keeps each call on its slot's own thread and
//! costs a fraction of that (bench/client/README.md). The calls themselves (unary, stream)
//! belong to the adapters that make them.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, TE, USER_AGENT};
use http::{HeaderMap, Method, Request, Uri};

use tokio::io::{AsyncRead, AsyncWrite};

use super::h2_unary::UnaryConnection;
use super::tcp;
use super::tls::Alpn;
use super::Peer;
use crate::backend::outcome::{ErrorKind, Failure, Malformation};
use crate::config::GrpcCompression;
pub use inferperf_wire::grpc_frames::MAX_MESSAGE;
use inferperf_wire::grpc_frames::{encoding_name, MessageError, MessageReader};

/// Receive windows: large enough that a big tensor is not throttled by window updates.
const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;
/// gRPC status codes used below.
const CANCELLED: i32 = 1;
pub const UNKNOWN: i32 = 2;
const PERMISSION_DENIED: i32 = 7;
const RESOURCE_EXHAUSTED: i32 = 8;
const INTERNAL: i32 = 13;
const UNAVAILABLE: i32 = 14;

/// The HTTP/2 connections of a run, each shared by up to `share` in-flight slots (a
/// "lane"), as Triton's C++ client library shares one gRPC channel among up to six clients
/// of the same URL — so perf_analyzer's slots share connections too. Sharing lets one write
/// and one read carry several calls.
pub struct SharedConnections {
    share: usize,
    lanes: tokio::sync::Mutex<HashMap<usize, Lane>>,
    /// The lanes of unary calls, on the hand-written client of `transport::h2_unary`.
    unary: tokio::sync::Mutex<HashMap<usize, Arc<UnaryConnection>>>,
}

/// One shared connection: the handle that opens streams on it, and whether it broke.
#[derive(Clone)]
pub struct Lane {
    pub sender: SendRequest<Bytes>,
    /// Set by any handle of the lane that saw the connection fail.
    pub broken: Arc<AtomicBool>,
    /// The largest message taken from it (`--max-response-bytes`).
    pub message_limit: usize,
    /// The encoding its calls advertise, in which answers may come compressed.
    pub compression: Option<GrpcCompression>,
}

impl Lane {
    /// A reader of its calls' answers: its message limit and advertised encoding.
    pub fn message_reader(&self) -> MessageReader {
        MessageReader::with(self.message_limit, self.compression)
    }

    pub fn is_usable(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
    }

    pub fn mark_broken(&self) {
        self.broken.store(true, Ordering::Relaxed);
    }
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
            unary: Default::default(),
        }
    }

    /// How many in-flight slots share one connection.
    pub fn width(&self) -> usize {
        self.share
    }

    /// The lane (shared connection) of in-flight slot `slot`.
    pub fn lane(&self, slot: usize) -> usize {
        slot / self.share
    }

    /// The connection of `slot`'s lane, opened when the lane has none or its connection
    /// broke.
    pub async fn connect(&self, peer: &Peer, slot: usize) -> Result<Lane, ErrorKind> {
        let mut lanes = self.lanes.lock().await;
        let index = self.lane(slot);
        if let Some(open) = lanes.get(&index).filter(|l| l.is_usable()) {
            return Ok(open.clone());
        }
        let lane = Lane {
            sender: open_connection(peer).await?,
            broken: Arc::new(AtomicBool::new(false)),
            message_limit: peer.max_response_bytes,
            compression: peer.grpc_compression,
        };
        lanes.insert(index, lane.clone());
        Ok(lane)
    }
}

impl SharedConnections {
    /// The unary-call connection of `slot`'s lane, opened when the lane has none or its
    /// connection closed.
    pub async fn connect_unary(
        &self,
        peer: &Peer,
        slot: usize,
    ) -> Result<Arc<UnaryConnection>, ErrorKind> {
        let mut lanes = self.unary.lock().await;
        let index = self.lane(slot);
        if let Some(open) = lanes.get(&index).filter(|c| c.is_usable()) {
            return Ok(open.clone());
        }
        let conn = super::h2_unary::connect(peer).await?;
        lanes.insert(index, conn.clone());
        Ok(conn)
    }
}

/// Opens an HTTP/2 connection whose I/O runs as a task of the calling client thread; it ends
/// when every handle on it is dropped or the server goes away.
async fn open_connection(peer: &Peer) -> Result<SendRequest<Bytes>, ErrorKind> {
    let stream = tcp::connect_tcp(&peer.addrs, peer.timeout).await?;
    match &peer.tls {
        None => h2_over(stream, peer.timeout).await,
        Some(tls) => {
            let stream = tls.connect(stream, Alpn::H2, peer.timeout).await?;
            h2_over(stream, peer.timeout).await
        }
    }
}

/// HTTP/2 over a connected stream, plain or TLS.
async fn h2_over<T>(stream: T, timeout: Duration) -> Result<SendRequest<Bytes>, ErrorKind>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let handshake = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(stream);
    let (sender, connection) = tokio::time::timeout(timeout, handshake)
        .await
        .map_err(|_| ErrorKind::Connection)?
        .map_err(|_| ErrorKind::Connection)?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// The head of every call to `path` on the server: gRPC's content type, `te: trailers`, and
/// the `-H` headers as metadata (perf_analyzer drops them on gRPC; we send them).
pub fn call_head(peer: &Peer, path: &str) -> Result<Request<()>, ErrorKind> {
    let scheme = if peer.tls.is_some() { "https" } else { "http" };
    let uri: Uri = format!("{scheme}://{}{path}", peer.authority)
        .parse()
        .map_err(|_| ErrorKind::Connection)?;
    let mut request = Request::new(());
    *request.method_mut() = Method::POST;
    *request.uri_mut() = uri;
    *request.headers_mut() = request_headers(peer);
    Ok(request)
}

fn request_headers(peer: &Peer) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    if let Some(algorithm) = peer.grpc_compression {
        let name = HeaderValue::from_static(encoding_name(algorithm));
        headers.insert("grpc-encoding", name.clone());
        headers.insert("grpc-accept-encoding", name);
    }
    headers.insert(TE, HeaderValue::from_static("trailers"));
    headers.insert(
        USER_AGENT,
        HeaderValue::from_static(concat!("inferperf/", env!("CARGO_PKG_VERSION"))),
    );
    for (name, value) in &peer.headers {
        if let (Ok(n), Ok(v)) = (HeaderName::from_str(name), HeaderValue::from_str(value)) {
            headers.append(n, v);
        }
    }
    headers
}

/// A copy of a call's head for one more call (h2 takes the head by value).
pub fn copy_head(head: &Request<()>) -> Request<()> {
    let mut request = Request::new(());
    *request.method_mut() = head.method().clone();
    *request.uri_mut() = head.uri().clone();
    *request.headers_mut() = head.headers().clone();
    request
}

/// The `grpc-status` of a head or trailers, if it has one.
pub fn grpc_status(headers: &HeaderMap) -> Option<i32> {
    headers.get("grpc-status")?.to_str().ok()?.parse().ok()
}

/// The error kind of an h2 failure: a broken connection, or a reset stream mapped to the gRPC
/// code the gRPC specification gives it.
pub fn h2_error(error: &h2::Error) -> ErrorKind {
    if error.is_io() || error.is_go_away() {
        return ErrorKind::Connection;
    }
    match error.reason() {
        Some(reason) => ErrorKind::GrpcCode(grpc_code_of_reset(reason.into())),
        None => ErrorKind::Connection,
    }
}

/// The gRPC code of a stream reset with HTTP/2 error `code` (gRPC's HTTP/2 mapping), for
/// both HTTP/2 clients.
pub fn grpc_code_of_reset(code: u32) -> i32 {
    match h2::Reason::from(code) {
        h2::Reason::REFUSED_STREAM => UNAVAILABLE,
        h2::Reason::CANCEL => CANCELLED,
        h2::Reason::ENHANCE_YOUR_CALM => RESOURCE_EXHAUSTED,
        h2::Reason::INADEQUATE_SECURITY => PERMISSION_DENIED,
        _ => INTERNAL,
    }
}

/// Reads chunks from `stream` into `reader` until a whole message is in, giving their
/// flow-control capacity back; `None` when the stream ended (with any bytes of a message
/// left over reported as a cut message).
pub async fn read_message(
    reader: &mut MessageReader,
    stream: &mut h2::RecvStream,
) -> Result<Option<Bytes>, Failure> {
    loop {
        if let Some(message) = reader.next_message()? {
            return Ok(Some(message));
        }
        match stream.data().await {
            Some(chunk) => {
                let chunk = chunk.map_err(|e| Failure::from(h2_error(&e)))?;
                let _ = stream.flow_control().release_capacity(chunk.len());
                reader.push(chunk);
            }
            None if reader.leftover() == 0 => return Ok(None),
            None => {
                return Err(Failure::bad(
                    Malformation::Truncated,
                    format!(
                        "the stream ended inside a gRPC message ({} bytes of it came)",
                        reader.leftover()
                    ),
                ))
            }
        }
    }
}

impl From<MessageError> for Failure {
    fn from(e: MessageError) -> Failure {
        match e {
            MessageError::TooLarge(why) => Failure::bad(Malformation::TooLarge, why),
            MessageError::Unreadable(why) => Failure::bad(Malformation::Unreadable, why),
        }
    }
}
