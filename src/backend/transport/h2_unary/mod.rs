//! A hand-written HTTP/2 client for unary gRPC calls, as `http1.rs` is for HTTP/1.1. The h2
//! crate spends most of a gRPC call's client instructions (a connection task woken for
//! every call, per-call HPACK encoding with Huffman coding, stream bookkeeping, a copy of
//! every frame); here a call copies a head encoded once, writes HEADERS and DATA itself,
//! and the calls sharing a connection read it for each other (see `conn.rs`). It keeps
//! what HTTP/2 asks of a client: flow control both ways, the server's SETTINGS, PING,
//! GOAWAY, RST_STREAM, CONTINUATION, padding and the server's stream limit. Streaming calls
//! stay on h2 (`transport::h2`).

mod conn;
pub mod frame;
#[cfg(test)]
mod tests;

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;

pub use conn::Received;
use conn::{ConnState, Io};

use crate::backend::outcome::{ErrorKind, Failure};

/// One HTTP/2 connection that unary calls share.
pub struct UnaryConnection {
    state: Mutex<ConnState>,
    /// Set once the connection failed or the server sent GOAWAY.
    closed: AtomicBool,
}

impl std::fmt::Debug for UnaryConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "UnaryConnection(closed: {})",
            self.closed.load(Ordering::Relaxed)
        )
    }
}

impl UnaryConnection {
    /// HTTP/2 over a connected stream: the preface and SETTINGS go out and the server's
    /// SETTINGS are awaited (a server that does not speak HTTP/2 fails here).
    pub async fn handshake<T: Io + 'static>(io: T) -> Result<Arc<UnaryConnection>, ErrorKind> {
        let conn = UnaryConnection {
            state: Mutex::new(ConnState::new(Box::pin(io))),
            closed: AtomicBool::new(false),
        };
        poll_fn(|cx| {
            let mut state = conn.lock();
            state.drive(cx, 0);
            if state.failed {
                Poll::Ready(Err(ErrorKind::Connection))
            } else if state.got_settings {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            }
        })
        .await?;
        Ok(Arc::new(conn))
    }

    /// Whether a new call may start on it.
    pub fn is_usable(&self) -> bool {
        !self.closed.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, ConnState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One unary call: HEADERS with the encoded `head`, the `framed` message, and the
    /// answer as received (`limit` bounds its body). The call's first instant on the wire
    /// is in `sent`.
    pub fn call<'a>(&'a self, head: &'a [u8], framed: &'a Bytes, limit: usize) -> Call<'a> {
        Call {
            conn: self,
            head,
            framed,
            limit,
            stream: None,
            waited: false,
            sent: None,
        }
    }
}

/// A unary call in flight; dropped before its answer, it resets its stream.
pub struct Call<'a> {
    conn: &'a UnaryConnection,
    head: &'a [u8],
    framed: &'a Bytes,
    limit: usize,
    stream: Option<u32>,
    /// Whether it waited for room under the server's stream limit (and polled the socket).
    waited: bool,
    /// When the request was handed to the socket.
    pub sent: Option<Instant>,
}

impl Future for Call<'_> {
    type Output = Result<Received, Failure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut state = this.conn.lock();
        let id = match this.stream {
            Some(id) => id,
            None => {
                if !state.takes_calls() {
                    this.conn.closed.store(true, Ordering::Relaxed);
                    return Poll::Ready(Err(ErrorKind::Connection.into()));
                }
                if !state.has_room(cx.waker()) {
                    state.drive(cx, 0);
                    this.waited = true;
                    return Poll::Pending;
                }
                let id = state.open(this.head, this.framed, this.limit);
                this.stream = Some(id);
                this.waited = false;
                // The request waits in the queue for the connection's one write of this
                // turn, by this call (woken again once the others ran) or another.
                state.schedule_write(id, cx);
                state.wake_later(id, cx.waker());
                return Poll::Pending;
            }
        };
        // A call whose answer is already filed leaves the socket, and the requests queued
        // for this turn's write, to the others.
        if !state.has_outcome(id) {
            state.drive(cx, id);
        }
        if this.sent.is_none() {
            this.sent = state.sent_at(id);
        }
        let outcome = state.take(id, cx.waker());
        if !state.takes_calls() {
            this.conn.closed.store(true, Ordering::Relaxed);
        }
        match outcome {
            Some(result) => {
                this.stream = None;
                Poll::Ready(result)
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.stream.take() {
            self.conn.lock().abandon(id);
        } else if self.waited {
            self.conn.lock().stop_waiting();
        }
    }
}

/// Opens a connection to the server for unary calls: TCP, TLS when asked (ALPN h2), and
/// the HTTP/2 handshake, within the request timeout.
pub async fn connect(peer: &super::Peer) -> Result<Arc<UnaryConnection>, ErrorKind> {
    let tcp = super::tcp::connect_tcp(&peer.addrs, peer.timeout).await?;
    let open = async {
        match &peer.tls {
            None => UnaryConnection::handshake(tcp).await,
            Some(tls) => {
                let stream = tls.connect(tcp, super::tls::Alpn::H2, peer.timeout).await?;
                UnaryConnection::handshake(stream).await
            }
        }
    };
    tokio::time::timeout(peer.timeout, open)
        .await
        .map_err(|_| ErrorKind::Connection)?
}
