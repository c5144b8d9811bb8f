//! One HTTP/2 connection's state, driven by the calls that use it: there is no connection
//! task. A call that waits polls the socket itself — writes what is queued, reads what came,
//! files each frame under its stream and wakes that stream's call — so an answer reaches
//! its caller without a hop through another task. The last call to poll the socket is the
//! one tokio wakes; when it leaves, it hands the socket to another waiting call.
//!
//! Requests are written together: the first call to open a stream in a turn of the runtime
//! becomes the connection's flusher and lets the calls woken with it run first, so that the
//! requests they open go out in its one write (a loopback write costs the client more than
//! the rest of a call does).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::frame::{self as f, FrameHead};

mod receive;
use crate::backend::outcome::{ErrorKind, Failure};

/// What the connection reads from and writes to: TCP, or TLS over TCP.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// The receive windows this client announces: large, so that a big tensor is not throttled.
pub const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
pub const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;
/// The read buffer's first size (one largest frame) and the most it grows to.
const READ_START: usize = f::DEFAULT_MAX_FRAME + f::HEADER_LEN + 1024;
const READ_MOST: usize = 256 * 1024;
/// Request bytes queued beyond this wait until the socket took the queue.
const WRITE_QUEUE: usize = 256 * 1024;
/// Reads one poll makes before it lets other tasks run.
const READS_PER_POLL: usize = 32;
/// The largest header block taken (HEADERS and its CONTINUATION frames).
const MAX_HEADER_BLOCK: usize = 1024 * 1024;

/// A call's answer as the connection received it.
#[derive(Debug)]
pub struct Received {
    pub status: u16,
    /// `grpc-status` in the answer's head (a "trailers-only" answer).
    pub head_grpc_status: Option<i32>,
    /// Whether trailers came, and their `grpc-status`.
    pub trailers: bool,
    pub trailer_grpc_status: Option<i32>,
    pub body: Bytes,
    pub first_byte: Instant,
    pub done: Instant,
}

/// One open stream: what is left to send, and what came back.
struct Stream {
    id: u32,
    send_window: i64,
    pending: Bytes,
    status: Option<u16>,
    head_grpc_status: Option<i32>,
    trailers: bool,
    trailer_grpc_status: Option<i32>,
    first_byte: Option<Instant>,
    /// When the queue holding its HEADERS was handed to the socket whole.
    sent: Option<Instant>,
    body: BytesMut,
    limit: usize,
    done: Option<Instant>,
    error: Option<Failure>,
    recv_unacked: u32,
    waker: Option<Waker>,
}

impl Stream {
    fn finished(&self) -> bool {
        self.done.is_some() || self.error.is_some()
    }

    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// A header block whose CONTINUATION frames are still coming.
struct PartialBlock {
    stream: u32,
    bytes: Vec<u8>,
    end_stream: bool,
}

/// HPACK's decoder, its table held to the 4,096 bytes HTTP/2 allows by default (this client
/// never raises SETTINGS_HEADER_TABLE_SIZE).
fn decoder() -> loona_hpack::Decoder<'static> {
    let mut decoder = loona_hpack::Decoder::new();
    decoder.set_max_allowed_table_size(4096);
    decoder
}

/// The state of one connection, behind the connection's lock.
pub struct ConnState {
    io: Pin<Box<dyn Io>>,
    read: Vec<u8>,
    read_start: usize,
    read_end: usize,
    write: Vec<u8>,
    written: usize,
    decoder: loona_hpack::Decoder<'static>,
    next_id: u32,
    streams: Vec<Stream>,
    peer_max_frame: usize,
    peer_initial_window: i64,
    peer_max_streams: usize,
    send_window: i64,
    recv_unacked: u32,
    block: Option<PartialBlock>,
    going_away: bool,
    pub(super) failed: bool,
    pub(super) got_settings: bool,
    last_driver: u32,
    /// The call that writes the queue at its next poll (0: none); calls opened meanwhile
    /// only queue their frames.
    flusher: u32,
    slot_waiters: Vec<Waker>,
}

impl ConnState {
    pub fn new(io: Pin<Box<dyn Io>>) -> ConnState {
        let mut write = Vec::with_capacity(1024);
        f::put_preface(&mut write, STREAM_WINDOW, CONNECTION_WINDOW);
        ConnState {
            io,
            read: vec![0; READ_START],
            read_start: 0,
            read_end: 0,
            write,
            written: 0,
            decoder: decoder(),
            next_id: 1,
            streams: Vec::new(),
            peer_max_frame: f::DEFAULT_MAX_FRAME,
            peer_initial_window: f::DEFAULT_WINDOW,
            peer_max_streams: usize::MAX,
            send_window: f::DEFAULT_WINDOW,
            recv_unacked: 0,
            block: None,
            going_away: false,
            failed: false,
            got_settings: false,
            last_driver: 0,
            flusher: 0,
            slot_waiters: Vec::new(),
        }
    }

    /// Whether a new call may start here (neither broken nor told to go away).
    pub fn takes_calls(&self) -> bool {
        !self.failed && !self.going_away && self.next_id < 0x7fff_fff0
    }

    /// Whether the server's stream limit leaves room for one more call; if not, `waker`
    /// is woken when a call ends.
    pub fn has_room(&mut self, waker: &Waker) -> bool {
        if self.streams.len() < self.peer_max_streams {
            return true;
        }
        self.slot_waiters.push(waker.clone());
        false
    }

    /// Opens a stream: queues its HEADERS, and its message as DATA as the windows allow.
    pub fn open(&mut self, head: &[u8], framed: &Bytes, limit: usize) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        f::put_headers(
            &mut self.write,
            id,
            head,
            self.peer_max_frame,
            framed.is_empty(),
        );
        self.streams.push(Stream {
            id,
            send_window: self.peer_initial_window,
            pending: framed.clone(),
            status: None,
            head_grpc_status: None,
            trailers: false,
            trailer_grpc_status: None,
            first_byte: None,
            sent: None,
            body: BytesMut::new(),
            limit,
            done: None,
            error: None,
            recv_unacked: 0,
            waker: None,
        });
        id
    }

    /// The first call opened since the last write writes the queue at its next poll: its
    /// task is woken behind the tasks woken with it, whose calls only queue their requests.
    pub fn schedule_write(&mut self, id: u32, cx: &Context<'_>) {
        if self.flusher == 0 {
            self.flusher = id;
            cx.waker().wake_by_ref();
        }
    }

    /// Stream `id`'s call is woken with `waker` when its outcome comes.
    pub fn wake_later(&mut self, id: u32, waker: &Waker) {
        if let Some(stream) = self.streams.iter_mut().find(|s| s.id == id) {
            if !stream.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
                stream.waker = Some(waker.clone());
            }
        }
    }

    /// Whether stream `id`'s call has its outcome (answer or failure) waiting.
    pub fn has_outcome(&self, id: u32) -> bool {
        self.streams
            .iter()
            .find(|s| s.id == id)
            .is_none_or(Stream::finished)
    }

    /// When stream `id`'s request went to the socket, once it has.
    pub fn sent_at(&self, id: u32) -> Option<Instant> {
        self.streams.iter().find(|s| s.id == id)?.sent
    }

    /// Sends and receives what can be without waiting, on behalf of the call on stream
    /// `me` (0 for the handshake): afterwards that call's task is the one the socket wakes.
    pub fn drive(&mut self, cx: &mut Context<'_>, me: u32) {
        self.last_driver = me;
        if self.flusher == me {
            self.flusher = 0;
        }
        for _ in 0..READS_PER_POLL {
            if self.failed {
                return;
            }
            self.queue_data();
            if let Poll::Ready(Err(_)) = self.flush(cx) {
                self.fail(ErrorKind::Connection);
                return;
            }
            match self.read_frames(cx) {
                Poll::Pending => return,
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(kind)) => {
                    self.fail(kind);
                    return;
                }
            }
        }
        cx.waker().wake_by_ref();
    }

    /// Stream `id`'s outcome once it has one; else its call's waker is kept.
    pub fn take(&mut self, id: u32, waker: &Waker) -> Option<Result<Received, Failure>> {
        let Some(at) = self.streams.iter().position(|s| s.id == id) else {
            return Some(Err(ErrorKind::Connection.into()));
        };
        if !self.streams[at].finished() {
            self.wake_later(id, waker);
            return None;
        }
        let stream = self.streams.remove(at);
        self.leave(id);
        Some(match (stream.error, stream.done) {
            (Some(failure), _) => Err(failure),
            (None, Some(done)) => Ok(Received {
                status: stream.status.unwrap_or(0),
                head_grpc_status: stream.head_grpc_status,
                trailers: stream.trailers,
                trailer_grpc_status: stream.trailer_grpc_status,
                body: stream.body.freeze(),
                first_byte: stream.first_byte.unwrap_or(done),
                done,
            }),
            (None, None) => Err(ErrorKind::Connection.into()),
        })
    }

    /// A call dropped before its answer came (its timeout, or the run ended): the server is
    /// told to stop with RST_STREAM(CANCEL).
    pub fn abandon(&mut self, id: u32) {
        if let Some(at) = self.streams.iter().position(|s| s.id == id) {
            let stream = self.streams.remove(at);
            if !stream.finished() && !self.failed {
                f::put_rst_stream(&mut self.write, id, f::CANCEL);
            }
            self.leave(id);
        }
    }

    /// A call that waited for room left without starting: if it was the socket's last
    /// poller, a waiting call takes the socket over.
    pub fn stop_waiting(&mut self) {
        if self.last_driver == 0 {
            if let Some(other) = self.streams.iter_mut().find(|s| s.waker.is_some()) {
                other.wake();
            }
        }
    }

    /// A call left: the socket goes to another waiting call if this one was its poller or
    /// was to write the queue, and a call waiting for room may start.
    fn leave(&mut self, id: u32) {
        let was_flusher = self.flusher == id;
        if was_flusher {
            self.flusher = 0;
        }
        if self.last_driver == id || was_flusher {
            if let Some(other) = self.streams.iter_mut().find(|s| s.waker.is_some()) {
                other.wake();
            }
        }
        if let Some(w) = self.slot_waiters.pop() {
            w.wake();
        }
    }

    /// The connection broke: every open call ends with `kind`.
    fn fail(&mut self, kind: ErrorKind) {
        self.failed = true;
        for stream in &mut self.streams {
            if !stream.finished() {
                stream.error = Some(kind.into());
            }
            stream.wake();
        }
        for w in self.slot_waiters.drain(..) {
            w.wake();
        }
    }

    /// A protocol error by the server: GOAWAY is queued (sent if the socket takes it) and the
    /// connection ends.
    fn protocol_error(&mut self, code: u32) -> ErrorKind {
        let last = self.streams.iter().map(|s| s.id).max().unwrap_or(0);
        f::put_goaway(&mut self.write, last, code);
        let mut cx = Context::from_waker(Waker::noop());
        let _ = self.flush(&mut cx);
        ErrorKind::Connection
    }

    /// Moves request bytes into DATA frames as the stream and connection windows allow.
    fn queue_data(&mut self) {
        for stream in &mut self.streams {
            while !stream.pending.is_empty() && stream.error.is_none() {
                let room = stream.send_window.min(self.send_window).max(0) as usize;
                let n = stream.pending.len().min(self.peer_max_frame).min(room);
                if n == 0 || self.write.len() - self.written > WRITE_QUEUE {
                    break;
                }
                let end = n == stream.pending.len();
                let flags = if end { f::END_STREAM } else { 0 };
                f::put_head(&mut self.write, n, f::DATA, flags, stream.id);
                self.write.extend_from_slice(&stream.pending[..n]);
                stream.pending.advance(n);
                stream.send_window -= n as i64;
                self.send_window -= n as i64;
            }
        }
    }

    /// Writes the queue; Ready(Ok) once the socket took all of it.
    fn flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.write.len() {
            match self.io.as_mut().poll_write(cx, &self.write[self.written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        if !self.write.is_empty() {
            self.mark_sent();
        }
        self.write.clear();
        self.written = 0;
        self.io.as_mut().poll_flush(cx)
    }

    /// The streams whose HEADERS were in the queue just written are sent now.
    fn mark_sent(&mut self) {
        let mut now = None;
        for stream in self.streams.iter_mut().filter(|s| s.sent.is_none()) {
            stream.sent = Some(*now.get_or_insert_with(Instant::now));
        }
    }

    /// One read from the socket and the frames it completed.
    fn read_frames(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ErrorKind>> {
        self.make_room();
        let mut buf = ReadBuf::new(&mut self.read[self.read_end..]);
        match self.io.as_mut().poll_read(cx, &mut buf) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(_)) => Poll::Ready(Err(ErrorKind::Connection)),
            Poll::Ready(Ok(())) if buf.filled().is_empty() => {
                Poll::Ready(Err(ErrorKind::Connection))
            }
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                let full = self.read_end + n == self.read.len();
                self.read_end += n;
                self.process()?;
                if full && self.read.len() < READ_MOST {
                    self.read.resize(self.read.len() * 2, 0);
                }
                Poll::Ready(Ok(()))
            }
        }
    }

    /// Moves unread bytes to the front when the tail has no room for a whole frame.
    fn make_room(&mut self) {
        if self.read_start == self.read_end {
            self.read_start = 0;
            self.read_end = 0;
        } else if self.read.len() - self.read_end < f::DEFAULT_MAX_FRAME + f::HEADER_LEN {
            self.read.copy_within(self.read_start..self.read_end, 0);
            self.read_end -= self.read_start;
            self.read_start = 0;
        }
    }

    /// Handles every whole frame in the read buffer.
    fn process(&mut self) -> Result<(), ErrorKind> {
        let read = std::mem::take(&mut self.read);
        let result = self.process_in(&read);
        self.read = read;
        result
    }

    fn process_in(&mut self, read: &[u8]) -> Result<(), ErrorKind> {
        while self.read_end - self.read_start >= f::HEADER_LEN {
            let head = FrameHead::parse(&read[self.read_start..]);
            if head.len > f::DEFAULT_MAX_FRAME {
                return Err(self.protocol_error(f::FRAME_SIZE_ERROR));
            }
            let end = self.read_start + f::HEADER_LEN + head.len;
            if end > self.read_end {
                break;
            }
            let payload = &read[self.read_start + f::HEADER_LEN..end];
            self.read_start = end;
            self.on_frame(head, payload)?;
        }
        Ok(())
    }
}
