//! HTTP/1.1 written by hand for the hot path. A client that keeps one request in flight per
//! connection needs little of HTTP: write a request whose bytes were framed once, then read
//! one response (`Content-Length`, chunked, or until close). Doing that directly on the
//! socket, instead of through hyper's dispatcher, connection task and header maps, takes the
//! client's user-space cost per request down by a factor of several (measured with
//! callgrind; see bench/client/README.md). The head and chunk parsing is the wire crate's
//! (`inferperf_wire::http1`), shared with the fuzz target. The stream is a
//! plain socket, read by readiness as before, or a TLS connection ([`super::tls`]).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};

use super::tcp::connect_tcp;
use super::tls::{Alpn, TlsClient};
use super::Peer;
use crate::backend::outcome::{ErrorKind, Malformation};
use inferperf_wire::http1::{
    body_reservation, chunk_head, parse_head, trailers_end, BodyKind, Head, Http1Error,
    MAX_HEAD_BYTES,
};
use io::Io;

mod io;
mod post;
pub use post::{post, post_accepting};

/// A response that is not HTTP as it should be.
const UNREADABLE: ErrorKind = ErrorKind::BadResponse(Malformation::Unreadable);
const TOO_LARGE: ErrorKind = ErrorKind::BadResponse(Malformation::TooLarge);

/// `--max-response-bytes`' default: far above any model's answer, low enough that a server
/// streaming without end is stopped long before the client's memory is.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 30;

/// Spare room made in the read buffer before each read.
pub(crate) const READ_CHUNK: usize = 4096;
/// A connection idle this long is checked for a close by the server before it is reused
/// (servers drop idle keep-alive connections after a few seconds).
const IDLE_CHECK: Duration = Duration::from_millis(500);

/// Frames a complete HTTP/1.1 request: request line, `Host`, the given headers, and a
/// `Content-Length` when there is a body.
pub fn frame_request(
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Bytes {
    let mut out = Vec::with_capacity(128 + body.len());
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !body.is_empty() || method == "POST" {
        out.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Bytes::from(out)
}

/// The `-H` headers, except those the framing writes itself.
pub fn user_headers(headers: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> {
    headers
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "host" | "content-length"))
        .map(|(name, value)| (name.as_str(), value.as_str()))
}

/// One response as read from the connection.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// `Inference-Header-Content-Length`, when the server sent it.
    pub header_len: Option<usize>,
    pub body: Bytes,
    /// When the first byte of the response was read.
    pub first_byte: Instant,
    /// Bytes that came after the body the head declares (the connection is not reused).
    pub trailing: usize,
}

impl From<Http1Error> for ErrorKind {
    fn from(e: Http1Error) -> ErrorKind {
        match e {
            Http1Error::Unreadable => UNREADABLE,
            Http1Error::Incomplete => ErrorKind::Connection,
        }
    }
}

/// The head of a response whose body is read part by part ([`Http1Stream::next_part`]).
#[derive(Debug, Clone, Copy)]
pub struct ResponseStart {
    pub status: u16,
    /// The body is server-sent events.
    pub event_stream: bool,
    /// When the first byte of the response was read.
    pub first_byte: Instant,
}

/// What is left of a body being read part by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remaining {
    Bytes(usize),
    Chunks,
    UntilClose,
    Done,
}

/// One keep-alive HTTP/1.1 connection with its read buffer.
pub struct Http1Stream {
    io: Io,
    buf: BytesMut,
    open: bool,
    last_used: Instant,
    /// The body still to read of a response read part by part.
    remaining: Remaining,
    /// That response asked for the connection to close.
    closing: bool,
    /// The largest body taken (`--max-response-bytes`); a bigger one is a bad response.
    body_limit: usize,
}

impl Http1Stream {
    /// Connects to the first address that accepts within `timeout`.
    pub async fn connect(addrs: &[SocketAddr], timeout: Duration) -> Result<Self, ErrorKind> {
        Self::connect_with(addrs, timeout, None).await
    }

    /// Connects to the server, over TLS when the run asks for it, taking bodies of at most
    /// `--max-response-bytes`.
    pub async fn open(peer: &Peer) -> Result<Self, ErrorKind> {
        let stream = Self::connect_with(&peer.addrs, peer.timeout, peer.tls.as_deref()).await?;
        Ok(stream.limit_body(peer.max_response_bytes))
    }

    /// Connects, then makes the TLS handshake when `tls` is given.
    pub async fn connect_with(
        addrs: &[SocketAddr],
        timeout: Duration,
        tls: Option<&TlsClient>,
    ) -> Result<Self, ErrorKind> {
        let tcp = connect_tcp(addrs, timeout).await?;
        let io = match tls {
            None => Io::Plain(tcp),
            Some(tls) => Io::Tls(Box::new(tls.connect(tcp, Alpn::Http1, timeout).await?)),
        };
        Ok(Http1Stream {
            io,
            buf: BytesMut::new(),
            open: true,
            last_used: Instant::now(),
            remaining: Remaining::Done,
            closing: false,
            body_limit: DEFAULT_MAX_RESPONSE_BYTES,
        })
    }

    /// Sets the largest body this connection takes (`--max-response-bytes`).
    pub fn limit_body(mut self, limit: usize) -> Self {
        self.body_limit = limit;
        self
    }

    /// False once the connection failed, was closed by the server, or the last answer asked
    /// for it to close. A connection idle for a while is probed first (one non-blocking
    /// read), so that a keep-alive timeout on the server does not show up as a failed
    /// request.
    pub fn is_usable(&mut self) -> bool {
        if self.open && self.last_used.elapsed() >= IDLE_CHECK {
            self.open = self.io.is_idle_and_open();
        }
        self.open
    }

    /// Writes a whole framed request.
    pub async fn send(&mut self, request: &[u8]) -> Result<(), ErrorKind> {
        let written = self.io.write_request(request).await;
        written.map_err(|_| self.broken(ErrorKind::Connection))
    }

    /// Reads one whole response.
    pub async fn receive(&mut self) -> Result<Response, ErrorKind> {
        let mut first_byte = None;
        let head = loop {
            let head = self.read_head(&mut first_byte).await?;
            if !(100..200).contains(&head.status) {
                break head;
            }
            // An informational answer (100 Continue): the real one follows.
            self.buf.advance(head.len);
        };
        let first_byte = first_byte.unwrap_or_else(Instant::now);
        self.buf.advance(head.len);
        let body = match head.body {
            BodyKind::Empty => Bytes::new(),
            BodyKind::Length(n) => self.read_exact_body(n).await?,
            BodyKind::Chunked => self.read_chunked().await?,
            BodyKind::UntilClose => self.read_to_close().await?,
        };
        // Bytes after the answer, or a server that will close: start afresh next time.
        let trailing = self.buf.len();
        if head.close || trailing > 0 {
            self.open = false;
        }
        self.last_used = Instant::now();
        Ok(Response {
            status: head.status,
            header_len: head.header_len,
            body,
            first_byte,
            trailing,
        })
    }

    /// Reads a response head and leaves its body to [`Http1Stream::next_part`].
    pub async fn receive_head(&mut self) -> Result<ResponseStart, ErrorKind> {
        let mut first_byte = None;
        let head = loop {
            let head = self.read_head(&mut first_byte).await?;
            self.buf.advance(head.len);
            if !(100..200).contains(&head.status) {
                break head;
            }
        };
        self.remaining = match head.body {
            BodyKind::Empty | BodyKind::Length(0) => Remaining::Done,
            BodyKind::Length(n) => Remaining::Bytes(n),
            BodyKind::Chunked => Remaining::Chunks,
            BodyKind::UntilClose => Remaining::UntilClose,
        };
        self.closing = head.close;
        // A server sends a stream's head before its first token: the wait for that (the
        // time to first token, seconds when the server is loaded) holds no buffer either.
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        }
        Ok(ResponseStart {
            status: head.status,
            event_stream: head.event_stream,
            first_byte: first_byte.unwrap_or_else(Instant::now),
        })
    }

    /// Appends the next part of the body to `out` as soon as it arrives (a whole chunk of a
    /// chunked body); `Ok(false)` once the body has ended.
    /// What the caller has not consumed of `out` counts against the body limit.
    pub async fn next_part(&mut self, out: &mut BytesMut) -> Result<bool, ErrorKind> {
        if out.len() > self.body_limit {
            return Err(self.broken(TOO_LARGE));
        }
        match self.remaining {
            Remaining::Done => Ok(false),
            Remaining::Bytes(left) => {
                if self.buf.is_empty() {
                    self.fill_body().await?;
                }
                let take = left.min(self.buf.len());
                out.extend_from_slice(&self.buf.split_to(take));
                self.remaining = match left - take {
                    0 => self.body_done(),
                    n => Remaining::Bytes(n),
                };
                Ok(true)
            }
            Remaining::Chunks => {
                if !self.next_chunk(out).await? {
                    self.remaining = self.body_done();
                }
                Ok(true)
            }
            Remaining::UntilClose => {
                if self.buf.is_empty() && !self.fill_or_eof().await? {
                    self.remaining = self.body_done();
                    return Ok(false);
                }
                out.extend_from_slice(&self.buf.split());
                Ok(true)
            }
        }
    }

    /// Reads what is left of the body being read part by part.
    pub async fn rest_of_body(&mut self, out: &mut BytesMut) -> Result<(), ErrorKind> {
        while self.next_part(out).await? {}
        Ok(())
    }

    /// Leaves a response before its body ended: the connection cannot serve another.
    pub fn abandon_body(&mut self) {
        if self.remaining != Remaining::Done {
            self.open = false;
            self.remaining = Remaining::Done;
        }
    }

    /// The body ended: the connection serves the next request unless the server closes it
    /// or sent more than the body.
    fn body_done(&mut self) -> Remaining {
        if self.closing || !self.buf.is_empty() {
            self.open = false;
        }
        // Between answers the connection holds no buffer: with thousands of streams most
        // of them are waiting for their next answer, and a buffer kept for each (grown to
        // a whole answer when a server sends one in a burst) was most of the client's
        // memory. The next read makes room again when bytes have arrived.
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        }
        self.last_used = Instant::now();
        Remaining::Done
    }

    /// Appends one chunk of a chunked body to `out`; `Ok(false)` at the last (empty) one,
    /// after its trailers.
    async fn next_chunk(&mut self, out: &mut BytesMut) -> Result<bool, ErrorKind> {
        let chunk = loop {
            match chunk_head(&self.buf) {
                Ok(Some(found)) => break found,
                Ok(None) => self.fill_body().await?,
                Err(e) => return Err(self.broken(e.into())),
            }
        };
        if chunk.last {
            self.buf.advance(chunk.line);
            self.skip_trailers().await?;
            return Ok(false);
        }
        let needed = chunk.end;
        if needed > self.body_limit {
            return Err(self.broken(TOO_LARGE));
        }
        while self.buf.len() < needed {
            self.fill_body().await?;
        }
        if &self.buf[needed - 2..needed] != b"\r\n" {
            return Err(self.broken(UNREADABLE));
        }
        out.extend_from_slice(&self.buf[chunk.line..needed - 2]);
        self.buf.advance(needed);
        Ok(true)
    }

    /// Marks the connection unusable and passes `kind` on.
    fn broken(&mut self, kind: ErrorKind) -> ErrorKind {
        self.open = false;
        kind
    }

    /// Reads more bytes into the buffer; the end of the stream is an error here.
    async fn fill(&mut self) -> Result<(), ErrorKind> {
        if self.fill_or_eof().await? {
            Ok(())
        } else {
            Err(self.broken(ErrorKind::Connection))
        }
    }

    /// Reads more of a body whose length is known: a clean end of the stream before it is
    /// all there is an answer cut short (a reset stays a connection error).
    async fn fill_body(&mut self) -> Result<(), ErrorKind> {
        if self.fill_or_eof().await? {
            Ok(())
        } else {
            Err(self.broken(ErrorKind::BadResponse(Malformation::Truncated)))
        }
    }

    /// Reads more bytes; `Ok(false)` at the end of the stream.
    async fn fill_or_eof(&mut self) -> Result<bool, ErrorKind> {
        let read = self.io.fill(&mut self.buf).await;
        match read {
            Ok(0) => {
                self.open = false;
                Ok(false)
            }
            Ok(_) => Ok(true),
            Err(_) => Err(self.broken(ErrorKind::Connection)),
        }
    }

    async fn read_head(&mut self, first_byte: &mut Option<Instant>) -> Result<Head, ErrorKind> {
        loop {
            if !self.buf.is_empty() {
                if let Some(head) = parse_head(&self.buf).map_err(|e| self.broken(e.into()))? {
                    return Ok(head);
                }
                if self.buf.len() > MAX_HEAD_BYTES {
                    return Err(self.broken(UNREADABLE));
                }
            }
            self.fill().await?;
            first_byte.get_or_insert_with(Instant::now);
        }
    }

    async fn read_exact_body(&mut self, len: usize) -> Result<Bytes, ErrorKind> {
        if len > self.body_limit {
            return Err(self.broken(TOO_LARGE));
        }
        self.buf.reserve(body_reservation(len, self.buf.len()));
        while self.buf.len() < len {
            self.fill_body().await?;
        }
        Ok(self.buf.split_to(len).freeze())
    }

    async fn read_to_close(&mut self) -> Result<Bytes, ErrorKind> {
        loop {
            if self.buf.len() > self.body_limit {
                return Err(self.broken(TOO_LARGE));
            }
            if !self.fill_or_eof().await? {
                break;
            }
        }
        self.open = false;
        Ok(self.buf.split().freeze())
    }

    /// Decodes a chunked body (trailers are read and dropped).
    async fn read_chunked(&mut self) -> Result<Bytes, ErrorKind> {
        let mut body = BytesMut::new();
        while self.next_chunk(&mut body).await? {
            if body.len() > self.body_limit {
                return Err(self.broken(TOO_LARGE));
            }
        }
        Ok(body.freeze())
    }

    /// Skips the trailer section after the last chunk, up to and including its blank line.
    async fn skip_trailers(&mut self) -> Result<(), ErrorKind> {
        loop {
            if let Some(end) = trailers_end(&self.buf) {
                self.buf.advance(end);
                return Ok(());
            }
            if self.buf.len() > MAX_HEAD_BYTES {
                return Err(self.broken(UNREADABLE));
            }
            self.fill().await?;
        }
    }
}

#[cfg(test)]
mod tests;
