//! One slot's connection to the server, of the kind its adapter opened, and the request
//! timeout that bounds each exchange on it. The registry of connection kinds: a new API adds
//! its connection here.

use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::time::Sleep;

use super::api::{dynamic_grpc, kserve, local, openai, tfserving, torchserve, triton_c_api};
use super::{ErrorKind, Exchange, Failure, Request, Target};

/// The request timeout of one slot: a single timer that each request moves forward, so
/// that bounding a request costs no timer registration of its own.
pub struct Deadline {
    timer: Pin<Box<Sleep>>,
    timeout: Duration,
}

impl Deadline {
    pub fn new(timeout: Duration) -> Self {
        Deadline {
            timer: Box::pin(tokio::time::sleep(timeout)),
            timeout,
        }
    }

    /// The timer, set to fire `timeout` after `sent`.
    fn start(&mut self, sent: Instant) -> Pin<&mut Sleep> {
        let at = tokio::time::Instant::from_std(sent + self.timeout);
        self.timer.as_mut().reset(at);
        self.timer.as_mut()
    }
}

/// One slot's connection to the server, of the kind its adapter opened. Every kind has
/// `send(&mut self, &Request, &mut Exchange) -> Result<(), Failure>`, which sends one request
/// and reads and checks its answers, and `is_usable`.
pub enum Connection {
    KserveHttp(kserve::rest::HttpConn),
    /// KServe's ModelInfer, a unary gRPC call.
    KserveGrpc(kserve::unary::GrpcConn),
    KserveStream(kserve::stream::StreamConn),
    Local(local::LocalConn),
    /// A request to Triton in this process.
    TritonCApi(triton_c_api::CApiConn),
    OpenAi(openai::conn::OpenAiConn),
    TfHttp(tfserving::rest::TfHttpConn),
    /// TF Serving's Predict, a unary gRPC call.
    TfGrpc(tfserving::grpc::TfGrpcConn),
    TorchServe(torchserve::TsConn),
    /// A call of any gRPC method (perf_analyzer's dynamic gRPC).
    DynamicGrpc(dynamic_grpc::DynamicGrpcConn),
}

impl Connection {
    /// Opens a new connection for in-flight slot `slot`.
    pub async fn open(target: &Target, slot: usize) -> Result<Connection, ErrorKind> {
        target.api.open(target, slot).await
    }

    /// The slot's connection while it can still be used, else a new one in its place, with
    /// when opening that one began (`None`: the connection was reused). Each request checks
    /// its connection once, here (an idle connection's check reads the clock).
    pub async fn reuse_or_open<'a>(
        slot: &'a mut Option<Connection>,
        target: &Target,
        index: usize,
    ) -> Result<(&'a mut Connection, Option<Instant>), ErrorKind> {
        if slot.as_mut().is_some_and(|c| !c.is_usable()) {
            *slot = None;
        }
        if let Some(conn) = slot {
            return Ok((conn, None));
        }
        let opening = Instant::now();
        // Opening is rare (once per connection) and its future, the largest of any kind's
        // (a gRPC handshake), would otherwise be part of every slot's task for the whole
        // run: boxed, the task is a quarter smaller (10,000 slots: ~5 MiB).
        let conn = Box::pin(Connection::open(target, index)).await?;
        Ok((slot.insert(conn), Some(opening)))
    }

    /// Sends one request and reads its answers until the slot's deadline.
    pub async fn exchange(
        &mut self,
        request: &Request,
        ex: &mut Exchange<'_>,
        deadline: &mut Deadline,
    ) -> Result<(), Failure> {
        let timer = deadline.start(ex.sent);
        let send = async {
            match self {
                Connection::KserveHttp(c) => c.send(request, ex).await,
                Connection::KserveGrpc(c) => c.send(request, ex).await,
                Connection::KserveStream(c) => c.send(request, ex).await,
                Connection::Local(c) => c.send(request, ex).await,
                Connection::TritonCApi(c) => c.send(request, ex).await,
                Connection::OpenAi(c) => c.send(request, ex).await,
                Connection::TfHttp(c) => c.send(request, ex).await,
                Connection::TfGrpc(c) => c.send(request, ex).await,
                Connection::TorchServe(c) => c.send(request, ex).await,
                Connection::DynamicGrpc(c) => c.send(request, ex).await,
            }
        };
        tokio::select! {
            biased;
            result = send => result,
            _ = timer => Err(ErrorKind::Timeout.into()),
        }
    }

    /// False once the connection broke; the slot then opens a new one.
    pub fn is_usable(&mut self) -> bool {
        match self {
            Connection::KserveHttp(c) => c.is_usable(),
            Connection::KserveGrpc(c) => c.is_usable(),
            Connection::KserveStream(c) => c.is_usable(),
            Connection::Local(_) | Connection::TritonCApi(_) => true,
            Connection::OpenAi(c) => c.is_usable(),
            Connection::TfHttp(c) => c.is_usable(),
            Connection::TfGrpc(c) => c.is_usable(),
            Connection::TorchServe(c) => c.is_usable(),
            Connection::DynamicGrpc(c) => c.is_usable(),
        }
    }
}
