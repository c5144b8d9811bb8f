//! The HTTP side of the embedded server, on hyper directly: a router that matches each
//! request's path and hands it to the route file of its API — [`torchserve`]
//! (`/predictions/…`, `/models…`, `/ping`), [`tfserving`] (`/v1/models/M:predict`,
//! `/v1/models/M/metadata`), [`trace`] (`/v2/models/M/trace/setting`), [`shm`]
//! (`/v2/systemsharedmemory…`), [`openai`] (`/v1/…`, `/tokenize`, the other LLM wire
//! formats' routes and Triton's `/v2/models/M/generate[_stream]`), [`metrics`]
//! (`GET /metrics`, as vLLM serves it on its one port) and [`kserve`] for every other path;
//! the metrics port has [`metrics`] alone. Route files answer with the kit in
//! [`reply`] (and [`openai`] its streamed bodies from [`event_stream`]) and reach the
//! models through [`LocalServer`]; none imports another or this router. Paths are matched by hand, not by a router framework: the inference route is
//! the hot path, and a framework cost measurable CPU per request there (see
//! bench/server/README.md).

mod event_stream;
mod kserve;
mod metrics;
mod openai;
mod reply;
mod shm;
mod tfserving;
mod torchserve;
mod trace;

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio_rustls::TlsAcceptor;

use crate::local::LocalServer;
use reply::Reply;

/// Serves every API's routes on the listener until `stop` completes, then lets open
/// connections finish their requests for up to `grace`.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    server: LocalServer,
    stop: impl Future<Output = ()>,
    grace: Duration,
    tls: Option<TlsAcceptor>,
) {
    serve_with(listener, stop, grace, tls, move |req| {
        dispatch(server.clone(), req)
    })
    .await
}

/// Serves the Prometheus page (`GET /metrics`) on the listener, as [`serve`] does.
pub(crate) async fn serve_metrics(
    listener: tokio::net::TcpListener,
    server: LocalServer,
    stop: impl Future<Output = ()>,
    grace: Duration,
    tls: Option<TlsAcceptor>,
) {
    serve_with(listener, stop, grace, tls, move |req| {
        metrics::handle(server.clone(), req)
    })
    .await
}

/// Hands a request to the route file whose paths it matches, asked in this order:
/// TorchServe's, TF Serving's (before OpenAI's, which share `/v1/models/`), the trace
/// settings, shared memory, OpenAI's (with Triton's generate routes, before KServe's that
/// share `/v2/models/`), the metrics page, and KServe's for every other path.
async fn dispatch(server: LocalServer, req: Request<Incoming>) -> Result<Reply, Infallible> {
    let (parts, body) = req.into_parts();
    let (method, path, headers) = (&parts.method, parts.uri.path(), &parts.headers);
    let reply = if let Some(route) = torchserve::route(path) {
        torchserve::handle(&server, method, route, headers, body).await
    } else if let Some(route) = tfserving::route(path) {
        tfserving::handle(&server, method, route, headers, body).await
    } else if let Some(model) = trace::route(path) {
        trace::handle(&server, method, model, headers, body).await
    } else if let Some(route) = shm::route(path) {
        shm::handle(&server, method, route, headers, body).await
    } else if openai::is_route(path) {
        openai::handle(&server, method, path, headers, body).await
    } else if path == "/metrics" && method == http::Method::GET {
        metrics::page(&server)
    } else {
        kserve::handle(&server, method, path, headers, body).await
    };
    Ok(reply)
}

/// Accepts connections and answers each request with `handler` (HTTP/1.1 or h2c; over TLS
/// when `tls` is given) until `stop` completes; then waits up to `grace` for open requests.
async fn serve_with<F, Fut>(
    listener: tokio::net::TcpListener,
    stop: impl Future<Output = ()>,
    grace: Duration,
    tls: Option<TlsAcceptor>,
    handler: F,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply, Infallible>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let builder = auto::Builder::new(TokioExecutor::new());
    tokio::pin!(stop);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut stop => break,
        };
        let Ok((tcp, _)) = tcp else {
            // Out of file descriptors or similar: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let Some(acceptor) = &tls else {
            let conn = builder.serve_connection(TokioIo::new(tcp), service_fn(handler.clone()));
            let conn = graceful.watch(conn.into_owned());
            tokio::spawn(async move {
                let _ = conn.await;
            });
            continue;
        };
        // The handshake runs in the connection's task, not in the accepting loop.
        let (acceptor, builder, handler) = (acceptor.clone(), builder.clone(), handler.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let Some(stream) = crate::tls::accept(&acceptor, tcp).await else {
                return;
            };
            let conn = builder.serve_connection(TokioIo::new(stream), service_fn(handler));
            let _ = watcher.watch(conn.into_owned()).await;
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(grace, graceful.shutdown()).await;
}
