//! The byte stream under the hand-written HTTP/1.1 client: a plain socket, read by
//! readiness without a buffer while it waits (the measured hot path, unchanged), or TLS
//! over one (`backend::tls`), read and written through tokio-rustls.

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::READ_CHUNK;
use crate::backend::tls::TlsIo;

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
async fn fill_plain(stream: &mut TcpStream, buf: &mut BytesMut) -> std::io::Result<usize> {
    loop {
        std::future::poll_fn(|cx| stream.poll_read_ready(cx)).await?;
        let read = if buf.capacity() == 0 {
            try_read_unbuffered(stream, buf)
        } else {
            buf.reserve(READ_CHUNK);
            stream.try_read_buf(buf)
        };
        match read {
            // Readiness was stale (tokio clears it): wait again.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => return other,
        }
    }
}

/// Reads into a new buffer, made only when bytes came: a connection without one (it
/// is waiting for an answer) keeps none through a wake-up that finds nothing to read.
/// Readiness says little: tokio keeps a socket readable until a read would block, so
/// the first read after every answer finds nothing. Kept out of line, so that its
/// array is not in the frame of every read.
#[inline(never)]
fn try_read_unbuffered(stream: &TcpStream, buf: &mut BytesMut) -> std::io::Result<usize> {
    let mut first = [0u8; READ_CHUNK];
    let n = stream.try_read(&mut first)?;
    if n > 0 {
        *buf = BytesMut::with_capacity(READ_CHUNK);
        buf.extend_from_slice(&first[..n]);
    }
    Ok(n)
}
