//! The unary client against a real HTTP/2 server (the h2 crate's), each test making the
//! server do one thing a client must handle: answers out of order on a shared connection,
//! windows far smaller than the messages, RST_STREAM, GOAWAY, a stream limit, PING, a
//! cancelled call, a head split into CONTINUATION frames.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use h2::server::{Builder, SendResponse};
use h2::RecvStream;
use http::{HeaderMap, Request, Response};
use tokio::net::{TcpListener, TcpStream};

use super::frame::{encode_call_head, CallHead};
use super::UnaryConnection;
use crate::backend::outcome::ErrorKind;
use inferperf_wire::grpc_frames::frame;

type Handler = Arc<
    dyn Fn(usize, Request<RecvStream>, SendResponse<Bytes>) -> BoxFuture<'static, ()> + Send + Sync,
>;

/// A server on a free port whose streams go to `handler` (with their arrival number); each
/// connection's driver is handed to `on_connection` first (for GOAWAY and PING tests).
async fn server(builder: Builder, handler: Handler) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let count = Arc::new(AtomicUsize::new(0));
        while let Ok((socket, _)) = listener.accept().await {
            socket.set_nodelay(true).unwrap();
            let (builder, handler, count) = (builder.clone(), handler.clone(), count.clone());
            tokio::spawn(async move {
                let mut conn = builder.handshake::<_, Bytes>(socket).await.unwrap();
                while let Some(Ok((request, respond))) = conn.accept().await {
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(handler(n, request, respond));
                }
            });
        }
    });
    addr
}

fn head() -> Vec<u8> {
    encode_call_head(&CallHead {
        tls: false,
        authority: "127.0.0.1",
        path: "/test.Service/Echo",
        encoding: None,
        user_agent: "inferperf/test",
        metadata: &[],
    })
}

async fn connect(addr: std::net::SocketAddr) -> Arc<UnaryConnection> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    UnaryConnection::handshake(tcp).await.unwrap()
}

/// Reads a request's whole body, giving its window back as it goes.
async fn whole_body(body: &mut RecvStream) -> Bytes {
    let mut all = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        all.extend_from_slice(&chunk);
    }
    all.freeze()
}

fn trailers_ok() -> HeaderMap {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", "0".parse().unwrap());
    trailers
}

/// Answers with `body`, as the server's windows allow, then trailers with status OK.
async fn answer(mut respond: SendResponse<Bytes>, mut body: Bytes) {
    let head = Response::builder()
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let mut send = respond.send_response(head, false).unwrap();
    while !body.is_empty() {
        send.reserve_capacity(body.len());
        let room = std::future::poll_fn(|cx| send.poll_capacity(cx))
            .await
            .unwrap()
            .unwrap();
        let chunk = body.split_to(room.min(body.len()));
        send.send_data(chunk, false).unwrap();
    }
    send.send_trailers(trailers_ok()).unwrap();
}

fn echo() -> Handler {
    Arc::new(|_, request, respond| {
        Box::pin(async move {
            let mut body = request.into_body();
            let got = whole_body(&mut body).await;
            answer(respond, got).await;
        })
    })
}

#[tokio::test]
async fn answers_out_of_order_reach_their_own_calls_on_a_shared_connection() {
    // Each answer waits inversely to the call's arrival, so they come back reversed.
    let handler: Handler = Arc::new(|n, request, respond| {
        Box::pin(async move {
            let mut body = request.into_body();
            let got = whole_body(&mut body).await;
            tokio::time::sleep(Duration::from_millis(60 - 10 * n as u64)).await;
            answer(respond, got).await;
        })
    });
    let conn = connect(server(Builder::new(), handler).await).await;
    let head = head();
    let messages: Vec<Bytes> = (0..6u8).map(|i| frame(&[i; 10], None)).collect();
    let calls = messages.iter().map(|m| conn.call(&head, m, 1 << 20));
    let answers = futures::future::join_all(calls).await;
    for (sent, got) in messages.iter().zip(answers) {
        let got = got.unwrap();
        assert_eq!(
            (got.status, got.trailers, got.trailer_grpc_status),
            (200, true, Some(0))
        );
        assert_eq!(got.body, *sent);
    }
}

#[tokio::test]
async fn large_messages_pass_both_ways_through_windows_far_smaller_than_them() {
    let mut builder = Builder::new();
    builder
        .initial_window_size(16 * 1024)
        .initial_connection_window_size(64 * 1024);
    let conn = connect(server(builder, echo()).await).await;
    let payload: Vec<u8> = (0..9 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let framed = frame(&payload, None);
    let got = conn.call(&head(), &framed, 16 << 20).await.unwrap();
    assert_eq!(got.body.len(), framed.len());
    assert!(got.body == framed, "the echoed 9 MiB came back changed");
    // The same connection still serves calls.
    let small = frame(b"after", None);
    assert_eq!(
        conn.call(&head(), &small, 1 << 20).await.unwrap().body,
        small
    );
}

#[tokio::test]
async fn a_reset_stream_ends_its_call_with_grpcs_code_and_the_connection_goes_on() {
    let handler: Handler = Arc::new(|n, request, mut respond| {
        Box::pin(async move {
            if n == 0 {
                respond.send_reset(h2::Reason::REFUSED_STREAM);
                return;
            }
            let mut body = request.into_body();
            let got = whole_body(&mut body).await;
            answer(respond, got).await;
        })
    });
    let conn = connect(server(Builder::new(), handler).await).await;
    let message = frame(b"x", None);
    let refused = conn.call(&head(), &message, 1 << 20).await.unwrap_err();
    assert_eq!(
        refused.kind,
        ErrorKind::GrpcCode(14),
        "REFUSED_STREAM is UNAVAILABLE"
    );
    assert!(conn.is_usable());
    assert_eq!(
        conn.call(&head(), &message, 1 << 20).await.unwrap().body,
        message
    );
}

#[tokio::test]
async fn goaway_lets_the_taken_call_finish_and_takes_no_new_one() {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let gate = Arc::new(tokio::sync::Mutex::new(Some(rx)));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut conn = Builder::new().handshake::<_, Bytes>(socket).await.unwrap();
        let (request, respond) = conn.accept().await.unwrap().unwrap();
        conn.graceful_shutdown();
        let gate = gate.clone();
        tokio::spawn(async move {
            let rx = gate.lock().await.take().unwrap();
            let _ = rx.await;
            let mut body = request.into_body();
            let got = whole_body(&mut body).await;
            answer(respond, got).await;
        });
        while let Some(Ok(_)) = conn.accept().await {}
    });
    let conn = connect(addr).await;
    let message = frame(b"taken", None);
    let head = head();
    let taken = tokio::spawn({
        let (conn, head, message) = (conn.clone(), head.clone(), message.clone());
        async move { conn.call(&head, &message, 1 << 20).await }
    });
    // The GOAWAY arrives while the first call waits; then the server answers it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    tx.send(()).unwrap();
    let got = taken.await.unwrap().unwrap();
    assert_eq!(got.body, message);
    assert!(
        !conn.is_usable(),
        "a connection told to go away takes no new call"
    );
    let refused = conn.call(&head, &message, 1 << 20).await.unwrap_err();
    assert_eq!(refused.kind, ErrorKind::Connection);
}

#[tokio::test]
async fn calls_beyond_the_servers_stream_limit_wait_for_room() {
    let live = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (l, m) = (live.clone(), most.clone());
    let handler: Handler = Arc::new(move |_, request, respond| {
        let (live, most) = (l.clone(), m.clone());
        Box::pin(async move {
            let now = live.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            let mut body = request.into_body();
            let got = whole_body(&mut body).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            live.fetch_sub(1, Ordering::SeqCst);
            answer(respond, got).await;
        })
    });
    let mut builder = Builder::new();
    builder.max_concurrent_streams(2);
    let conn = connect(server(builder, handler).await).await;
    let head = head();
    let messages: Vec<Bytes> = (0..8u8).map(|i| frame(&[i; 3], None)).collect();
    let answers =
        futures::future::join_all(messages.iter().map(|m| conn.call(&head, m, 1 << 20))).await;
    for (sent, got) in messages.iter().zip(answers) {
        assert_eq!(got.unwrap().body, *sent);
    }
    assert!(
        most.load(Ordering::SeqCst) <= 2,
        "the server saw {} calls at once",
        most.load(Ordering::SeqCst)
    );
}

#[tokio::test]
async fn a_ping_during_a_call_is_answered_and_a_cancelled_call_is_reset() {
    let (reset_tx, reset_rx) = tokio::sync::oneshot::channel::<h2::Reason>();
    let reset_tx = Arc::new(std::sync::Mutex::new(Some(reset_tx)));
    let (pong_tx, pong_rx) = tokio::sync::oneshot::channel::<bool>();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut conn = Builder::new().handshake::<_, Bytes>(socket).await.unwrap();
        let mut ping = conn.ping_pong();
        let mut pong_tx = Some(pong_tx);
        let mut n = 0;
        loop {
            tokio::select! {
                next = conn.accept() => {
                    let Some(Ok((request, mut respond))) = next else { break };
                    n += 1;
                    if n == 1 {
                        // Held: the client cancels it.
                        let reset_tx = reset_tx.clone();
                        tokio::spawn(async move {
                            let reason = std::future::poll_fn(|cx| respond.poll_reset(cx)).await.unwrap();
                            if let Some(tx) = reset_tx.lock().unwrap().take() { let _ = tx.send(reason); }
                            drop(request);
                        });
                    } else {
                        tokio::spawn(async move {
                            let mut body = request.into_body();
                            let got = whole_body(&mut body).await;
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            answer(respond, got).await;
                        });
                    }
                    if let (true, Some(tx), Some(mut ping)) = (n == 2, pong_tx.take_if(|_| n == 2), ping.take_if(|_| n == 2)) {
                        tokio::spawn(async move {
                            let pong = tokio::time::timeout(Duration::from_secs(2), ping.ping(h2::Ping::opaque())).await;
                            let _ = tx.send(matches!(pong, Ok(Ok(_))));
                        });
                    }
                }
            }
        }
    });
    let conn = connect(addr).await;
    let head = head();
    let message = frame(b"held", None);
    let held = tokio::time::timeout(
        Duration::from_millis(100),
        conn.call(&head, &message, 1 << 20),
    )
    .await;
    assert!(held.is_err(), "the held call timed out");
    let reason = tokio::time::timeout(Duration::from_secs(2), async {
        // The RST_STREAM goes out with the next call's frames.
        let next = conn.call(&head, &message, 1 << 20);
        let (answer, reason) = tokio::join!(next, reset_rx);
        (answer.unwrap().body, reason.unwrap())
    })
    .await
    .unwrap();
    assert_eq!(reason, (message.clone(), h2::Reason::CANCEL));
    assert!(
        pong_rx.await.unwrap(),
        "the server's PING got its acknowledgement"
    );
}

#[tokio::test]
async fn an_answer_head_split_into_continuation_frames_is_read() {
    let handler: Handler = Arc::new(|_, request, mut respond| {
        Box::pin(async move {
            let mut body = request.into_body();
            let got = whole_body(&mut body).await;
            let head = Response::builder()
                .header("content-type", "application/grpc")
                .header("x-large", "v".repeat(40_000))
                .body(())
                .unwrap();
            let mut send = respond.send_response(head, false).unwrap();
            send.send_data(got, false).unwrap();
            send.send_trailers(trailers_ok()).unwrap();
        })
    });
    let mut builder = Builder::new();
    builder.max_header_list_size(1 << 20);
    let conn = connect(server(builder, handler).await).await;
    let message = frame(b"continued", None);
    let got = conn.call(&head(), &message, 1 << 20).await.unwrap();
    assert_eq!((got.status, got.body), (200, message));
}

#[tokio::test]
async fn a_call_that_gives_up_waiting_for_room_leaves_the_socket_to_the_others() {
    let handler: Handler = Arc::new(|_, request, respond| {
        Box::pin(async move {
            let mut body = request.into_body();
            let got = whole_body(&mut body).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            answer(respond, got).await;
        })
    });
    let mut builder = Builder::new();
    builder.max_concurrent_streams(1);
    let conn = connect(server(builder, handler).await).await;
    let message = frame(b"first", None);
    // Two tasks: the one that gives up must hand the socket back to the other.
    let first = tokio::spawn({
        let (conn, message) = (conn.clone(), message.clone());
        async move { conn.call(&head(), &message, 1 << 20).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let gave_up = tokio::spawn({
        let (conn, message) = (conn.clone(), message.clone());
        async move {
            tokio::time::timeout(
                Duration::from_millis(50),
                conn.call(&head(), &message, 1 << 20),
            )
            .await
            .is_err()
        }
    });
    assert!(gave_up.await.unwrap(), "no room for a second call");
    let answer = tokio::time::timeout(Duration::from_secs(2), first)
        .await
        .expect("the first call was left without a poller");
    assert_eq!(answer.unwrap().unwrap().body, message);
}

/// A socket that notes, for each write, how many HEADERS frames it carried.
struct CountingIo {
    inner: TcpStream,
    writes: Arc<std::sync::Mutex<Vec<usize>>>,
}

impl tokio::io::AsyncRead for CountingIo {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for CountingIo {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let result = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = &result {
            self.writes.lock().unwrap().push(headers_frames(&buf[..*n]));
        }
        result
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// HEADERS frames in a write made of whole frames (the client's writes start at a frame).
fn headers_frames(mut bytes: &[u8]) -> usize {
    let mut count = 0;
    while bytes.len() >= super::frame::HEADER_LEN {
        let head = super::frame::FrameHead::parse(bytes);
        count += usize::from(head.kind == super::frame::HEADERS);
        bytes = &bytes[(super::frame::HEADER_LEN + head.len).min(bytes.len())..];
    }
    count
}

/// A connection through [`CountingIo`] and the HEADERS frames of each of its writes.
async fn counted_connection(
    addr: std::net::SocketAddr,
) -> (Arc<UnaryConnection>, Arc<std::sync::Mutex<Vec<usize>>>) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let writes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let io = CountingIo {
        inner: tcp,
        writes: writes.clone(),
    };
    (UnaryConnection::handshake(io).await.unwrap(), writes)
}

fn writes_with_headers(writes: &std::sync::Mutex<Vec<usize>>) -> Vec<usize> {
    let writes = writes.lock().unwrap();
    writes.iter().copied().filter(|&n| n > 0).collect()
}

#[tokio::test]
async fn calls_started_in_one_turn_go_out_in_one_write() {
    let (conn, writes) = counted_connection(server(Builder::new(), echo()).await).await;
    let message = frame(b"together", None);
    // Six tasks that start their calls in the same turn of this single-threaded runtime.
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let (conn, message) = (conn.clone(), message.clone());
            tokio::spawn(async move { conn.call(&head(), &message, 1 << 20).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().body, message);
    }
    assert_eq!(
        writes_with_headers(&writes),
        [6],
        "HEADERS frames per write"
    );
}

#[tokio::test]
async fn calls_answered_in_one_read_send_their_next_requests_in_one_write() {
    // The server holds the first six answers until all six calls arrived, then sends them
    // together (one write of its connection task); later calls are answered at once.
    let barrier = Arc::new(tokio::sync::Barrier::new(6));
    let handler: Handler = Arc::new(move |n, request, respond| {
        let barrier = barrier.clone();
        Box::pin(async move {
            let mut body = request.into_body();
            let got = whole_body(&mut body).await;
            if n < 6 {
                barrier.wait().await;
            }
            answer(respond, got).await;
        })
    });
    let (conn, writes) = counted_connection(server(Builder::new(), handler).await).await;
    let message = frame(b"again", None);
    let slots: Vec<_> = (0..6)
        .map(|_| {
            let (conn, message) = (conn.clone(), message.clone());
            tokio::spawn(async move {
                let first = conn.call(&head(), &message, 1 << 20).await.unwrap();
                let second = conn.call(&head(), &message, 1 << 20).await.unwrap();
                (first.body, second.body)
            })
        })
        .collect();
    for slot in slots {
        assert_eq!(slot.await.unwrap(), (message.clone(), message.clone()));
    }
    // Each call woken by the read that brought its answer leaves the socket alone, so the
    // six next requests wait for one write.
    assert_eq!(
        writes_with_headers(&writes),
        [6, 6],
        "HEADERS frames per write"
    );
}
