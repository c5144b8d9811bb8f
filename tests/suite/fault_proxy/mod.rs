//! A fault-injecting HTTP/1.1 proxy for the fault tests: it sits between inferperf and a
//! real server (the embedded one, or `inferperf serve` in a process of its own), forwards
//! every request, and spoils the answers a plan picks — reset, silence, dribbled bytes,
//! error statuses in bursts, garbage, a lying `Content-Length`, a huge body — so that each
//! fault reaches the client as it would from a broken server or network.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward it and its answer untouched.
    Pass,
    /// Read the request, then reset the client's connection (no answer).
    Reset,
    /// Read the request and never answer (the connection stays open).
    Silent,
    /// Forward the answer one byte at a time, this many milliseconds apart.
    Dribble(u64),
    /// Answer this status with a short JSON error, without asking the server.
    Status(u16),
    /// Answer bytes that are not HTTP, then close.
    Garbage,
    /// Forward the answer's head, half its body, then close.
    ShortBody,
    /// Forward the answer with bytes after the declared body.
    LongBody,
    /// Forward the answer without `Content-Length`, its body ending where the proxy closes.
    NoLength,
    /// Answer 200 with a body of this many bytes.
    Huge(usize),
}

/// Which fault the request with this number (from 0, in arrival order) gets.
pub type Plan = Arc<dyn Fn(u64) -> Fault + Send + Sync>;

/// A running proxy.
pub struct Proxy {
    pub addr: SocketAddr,
    /// Requests read so far.
    pub requests: Arc<AtomicU64>,
}

/// Starts a proxy on a free loopback port in front of `upstream`.
pub async fn start(upstream: SocketAddr, plan: Plan) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let counter = requests.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let _ = client.set_nodelay(true);
            tokio::spawn(connection(client, upstream, plan.clone(), counter.clone()));
        }
    });
    Proxy { addr, requests }
}

/// Serves one client connection until it closes or a fault ends it.
async fn connection(mut client: TcpStream, upstream: SocketAddr, plan: Plan, n: Arc<AtomicU64>) {
    let mut from_client = Vec::new();
    let mut server: Option<(TcpStream, Vec<u8>)> = None;
    while let Some(request) = read_message(&mut client, &mut from_client).await {
        let fault = plan(n.fetch_add(1, Ordering::SeqCst));
        let answer = match fault {
            Fault::Reset => return reset(client),
            Fault::Silent => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Fault::Status(code) => status_answer(code),
            Fault::Garbage => {
                let _ = client
                    .write_all(b"\x00\x17garbage\xff\xfe not http\r\n\r\n")
                    .await;
                return;
            }
            Fault::Huge(len) => huge_answer(len),
            _ => match forward(&mut server, upstream, &request).await {
                Some(answer) => answer,
                None => return reset(client),
            },
        };
        if !deliver(&mut client, answer, fault).await {
            return;
        }
    }
}

/// Sends the answer as the fault spoils it; false when the connection must end.
async fn deliver(client: &mut TcpStream, answer: Vec<u8>, fault: Fault) -> bool {
    match fault {
        Fault::Dribble(ms) => {
            for byte in answer {
                if client.write_all(&[byte]).await.is_err() {
                    return false;
                }
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            true
        }
        Fault::ShortBody => {
            let (head, body) = split_head(&answer);
            let _ = client.write_all(head).await;
            let _ = client.write_all(&body[..body.len() / 2]).await;
            false
        }
        Fault::LongBody => {
            let mut spoiled = answer;
            spoiled.extend_from_slice(b"{\"extra\": true}");
            client.write_all(&spoiled).await.is_ok()
        }
        Fault::NoLength => {
            let _ = client.write_all(&without_length(&answer)).await;
            false
        }
        Fault::Huge(_) => {
            // Written in pieces, so a client that stops reading does not stall the proxy.
            for piece in answer.chunks(1 << 20) {
                if client.write_all(piece).await.is_err() {
                    return false;
                }
            }
            true
        }
        _ => client.write_all(&answer).await.is_ok(),
    }
}

/// Ends the connection with a TCP reset (linger 0), as a crashed peer does. (tokio warns
/// that a lingering close blocks the thread; a linger of 0 never does.)
#[allow(deprecated)]
fn reset(client: TcpStream) {
    let _ = client.set_linger(Some(Duration::ZERO));
    drop(client);
}

/// Sends the request upstream (connecting when needed) and reads the whole answer.
async fn forward(
    server: &mut Option<(TcpStream, Vec<u8>)>,
    upstream: SocketAddr,
    request: &[u8],
) -> Option<Vec<u8>> {
    if server.is_none() {
        let stream = TcpStream::connect(upstream).await.ok()?;
        let _ = stream.set_nodelay(true);
        *server = Some((stream, Vec::new()));
    }
    let (stream, buf) = server.as_mut().unwrap();
    let answer = async {
        stream.write_all(request).await.ok()?;
        read_message(stream, buf).await
    }
    .await;
    if answer.is_none() {
        *server = None;
    }
    answer
}

/// Reads one HTTP message framed by `Content-Length` (none means no body); `None` when
/// the peer closed or sent something else.
pub async fn read_message(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let whole = end + 4 + content_length(&buf[..end])?;
            if buf.len() >= whole {
                return Some(buf.drain(..whole).collect());
            }
        }
        let mut chunk = [0u8; 16 * 1024];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn content_length(head: &[u8]) -> Option<usize> {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    if head.contains("transfer-encoding: chunked") {
        return None;
    }
    Some(
        head.lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap_or(0)),
    )
}

fn split_head(message: &[u8]) -> (&[u8], &[u8]) {
    let end = message.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    message.split_at(end)
}

/// The message with its `Content-Length` line dropped and `Connection: close` added.
fn without_length(message: &[u8]) -> Vec<u8> {
    let (head, body) = split_head(message);
    let head = String::from_utf8_lossy(head);
    let mut out = String::new();
    for line in head.split("\r\n").filter(|l| !l.is_empty()) {
        if !line.to_ascii_lowercase().starts_with("content-length:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn status_answer(code: u16) -> Vec<u8> {
    let body = format!("{{\"error\":\"injected {code}\"}}");
    format!(
        "HTTP/1.1 {code} Injected\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn huge_answer(len: usize) -> Vec<u8> {
    let mut answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n"
    )
    .into_bytes();
    answer.resize(answer.len() + len, b' ');
    answer
}

/// Starts a byte-for-byte TCP proxy in front of `upstream` that resets each connection
/// `after` it opened: whatever is in flight on it (a gRPC stream's answers) breaks off.
pub async fn start_cutting(upstream: SocketAddr, after: Duration) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let connections = requests.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            connections.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(cut_after(client, upstream, after));
        }
    });
    Proxy { addr, requests }
}

async fn cut_after(mut client: TcpStream, upstream: SocketAddr, after: Duration) {
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return reset(client);
    };
    let _ = tokio::time::timeout(
        after,
        tokio::io::copy_bidirectional(&mut client, &mut server),
    )
    .await;
    reset(client);
}
