//! The byte stream under the hand-written HTTP/1.1 client: a plain socket, read without a
//! buffer while it waits and with one system call per answer that comes in one piece (the
//! measured hot path), or TLS over one (`transport::tls`), read and written through
//! tokio-rustls.

use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use super::READ_CHUNK;
use crate::backend::transport::tls::TlsIo;

/// A plain socket or a TLS connection (boxed: a TLS connection's state is large and the
/// plain one's enum should not carry it).
pub(super) enum Io {
    Plain(TcpStream),
    Tls(Box<TlsIo>),
}

impl Io {
    /// For an idle connection: false when the server closed it or sent something unasked.
    pub(super) fn is_idle_and_open(&mut self) -> bool {
        match self {
            Io::Plain(stream) => {
                let mut probe = [0u8; 1];
                matches!(
                    stream.try_read(&mut probe),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
                )
            }
            Io::Tls(stream) => stream.is_idle_and_open(),
        }
    }

    /// Writes a whole request (through TLS: and pushes its records onto the socket).
    pub(super) async fn write_request(&mut self, request: &[u8]) -> std::io::Result<()> {
        match self {
            Io::Plain(stream) => stream.write_all(request).await,
            Io::Tls(stream) => {
                stream.write_all(request).await?;
                stream.flush().await
            }
        }
    }

    /// Reads what has come into `buf`; 0 at the end of the stream.
    pub(super) async fn fill(&mut self, buf: &mut BytesMut) -> std::io::Result<usize> {
        match self {
            Io::Plain(stream) => fill_plain(stream, buf).await,
            Io::Tls(stream) => {
                buf.reserve(READ_CHUNK);
                stream.read_buf(buf).await
            }
        }
    }
}

/// Reads what a plain socket has into `buf`, waiting for readiness.
///
/// Both ways go through tokio's `poll_read`, which takes a read shorter than the room it
/// was given to mean the socket is drained and clears its readiness. `try_read` keeps the
/// socket "readable" until a read would block, so the next answer's first read, made just
/// after the request went out, was a `recvfrom` that found nothing (EAGAIN): ~0.9 more
/// system calls per request at concurrency 64 than the reads of this function (perf stat:
/// 1.9 `recvfrom` per request, 1.0 with it).
async fn fill_plain(stream: &mut TcpStream, buf: &mut BytesMut) -> std::io::Result<usize> {
    if buf.capacity() == 0 {
        return std::future::poll_fn(|cx| poll_read_unbuffered(stream, cx, buf)).await;
    }
    buf.reserve(READ_CHUNK);
    stream.read_buf(buf).await
}

/// Reads into a new buffer, made only when bytes came: a connection without one (it is
/// waiting for an answer) keeps none while it waits. The array lives in this poll's frame
/// alone, never in the future that waits (kept out of line, so that it is not in the frame
/// of every read either).
#[inline(never)]
fn poll_read_unbuffered(
    stream: &mut TcpStream,
    cx: &mut Context<'_>,
    buf: &mut BytesMut,
) -> Poll<std::io::Result<usize>> {
    let mut first = [MaybeUninit::<u8>::uninit(); READ_CHUNK];
    let mut read = ReadBuf::uninit(&mut first);
    ready!(Pin::new(stream).poll_read(cx, &mut read))?;
    let came = read.filled();
    if !came.is_empty() {
        *buf = BytesMut::with_capacity(READ_CHUNK);
        buf.extend_from_slice(came);
    }
    Poll::Ready(Ok(came.len()))
}
