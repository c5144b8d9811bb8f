//! The embedded KServe v2 reference server: the default profiling target and the ground
//! truth of the tests. Built-in synthetic models ([`def`], [`kinds`], [`models`], the
//! decoupled [`stream`] kind and the answers [`spoil`]ed on purpose) run behind
//! Triton-like schedulers ([`sched`]), one [`served`] model each, and count Triton's
//! statistics ([`stats`]); one [`LocalServer`] holds them with the server-wide state (trace
//! settings in [`trace`], shared-memory regions in [`shm`]) and is the single way in for
//! the front ends and in-process callers alike. The `llm` and `embeddings` kinds are
//! served OpenAI-style ([`openai_wire`]), an `llm` model's requests batched continuously by
//! its engines ([`llm`]) with a [`llm::prefix_cache`] and prompts counted by
//! [`llm::prompt_tokens`]; a [`bls`] model calls other models inside its own compute, as a
//! Triton Python model's BLS requests do.
//!
//! The front ends sit above that state and nothing below imports them: [`http`] is a
//! router over one route file per API (KServe v2, OpenAI, TF Serving REST, TorchServe,
//! shared memory, trace settings, the Prometheus page) sharing one reply kit; [`grpc`]
//! serves KServe's gRPC service and TF Serving's `PredictionService` ([`tfserving`], whose
//! core the REST routes share). [`start`] binds the ports and returns once they listen.

// Inside the crate `pub(crate)` is the default: `pub` is what other crates use.
#![warn(unreachable_pub)]

mod answer_parts;
mod anthropic_wire;
mod bls;
mod def;
mod describe;
mod embeddings_wire;
mod error;
mod generate_wire;
mod gpu_power;
mod grpc;
mod http;
mod kinds;
mod limits;
mod llm;
mod local;
mod models;
mod openai_wire;
mod process;
mod rankings_wire;
mod responses_wire;
mod sched;
mod sequences;
mod served;
mod shm;
mod spoil;
mod stats;
mod stream;
mod tfserving;
mod tls;
mod trace;

use std::future::Future;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use def::{
    default_models, kinds_help, Dist, FailMode, LlmTiming, ModelDef, ModelKind, FAIL_CODES,
    MAX_STREAM_RESPONSES,
};
pub use error::InferError;
pub use limits::MAX_MESSAGE_BYTES;
pub use local::LocalServer;
pub use process::{process_cpu_seconds, process_resident_bytes};
pub use shm::{Place as ShmPlace, Region as ShmRegion, ShmRegions};
pub use stats::TokenCounts;
pub use stream::StreamAnswer;
pub use tls::TlsFiles;
pub use trace::TraceSettings;

/// How long [`RunningServer::shutdown`] waits for open requests before it stops anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Where to listen and what to serve. Port 0 picks a free port; no metrics port means no
/// Prometheus page.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub host: IpAddr,
    pub http_port: u16,
    pub grpc_port: u16,
    pub metrics_port: Option<u16>,
    pub models: Vec<ModelDef>,
    /// Offer the statistics extension (off: behave like KServe or MLServer, which have none).
    pub statistics: bool,
    /// Serve HTTPS and gRPC over TLS on the same ports (mTLS with a client CA).
    pub tls: Option<TlsFiles>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            http_port: 8000,
            grpc_port: 8001,
            metrics_port: None,
            models: default_models(),
            statistics: true,
            tls: None,
        }
    }
}

/// A running server; [`RunningServer::shutdown`] stops it (dropping it stops it too).
#[derive(Debug)]
pub struct RunningServer {
    pub http_addr: SocketAddr,
    pub grpc_addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    /// The models being served, for in-process calls alongside the network.
    pub local: LocalServer,
    stops: Vec<oneshot::Sender<()>>,
    tasks: Vec<JoinHandle<()>>,
}

impl RunningServer {
    /// Stops accepting, lets open requests finish for a few seconds, then ends the tasks.
    pub async fn shutdown(self) {
        for stop in self.stops {
            let _ = stop.send(());
        }
        for mut task in self.tasks {
            if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

/// Connections the kernel queues before the server accepts them: enough for a client that
/// opens thousands at once (the default of 128 drops their SYNs, and they retry a second
/// later).
const LISTEN_BACKLOG: u32 = 4096;

async fn bind(host: IpAddr, port: u16, what: &str) -> anyhow::Result<tokio::net::TcpListener> {
    let addr = SocketAddr::new(host, port);
    let listen = || -> std::io::Result<tokio::net::TcpListener> {
        let socket = match addr {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(LISTEN_BACKLOG)
    };
    listen().with_context(|| format!("cannot listen for {what} on {addr}; is the port in use?"))
}

/// A stop signal: the sender for [`RunningServer`], the future for a serve loop.
fn stop_pair() -> (
    oneshot::Sender<()>,
    impl Future<Output = ()> + Send + 'static,
) {
    let (stop, stopped) = oneshot::channel::<()>();
    (stop, async {
        let _ = stopped.await;
    })
}

/// Binds the ports, spawns the HTTP, gRPC and (if asked) metrics servers on the current
/// tokio runtime and returns once all listen.
pub async fn start(opts: ServeOptions) -> anyhow::Result<RunningServer> {
    let local = LocalServer::with_statistics(opts.models, opts.statistics)?;
    let tls = opts.tls.as_ref().map(tls::acceptor).transpose()?;
    let http_listener = bind(opts.host, opts.http_port, "HTTP").await?;
    let grpc_listener = bind(opts.host, opts.grpc_port, "gRPC").await?;
    let metrics_listener = match opts.metrics_port {
        Some(port) => Some(bind(opts.host, port, "metrics").await?),
        None => None,
    };
    let mut server = RunningServer {
        http_addr: http_listener.local_addr()?,
        grpc_addr: grpc_listener.local_addr()?,
        metrics_addr: metrics_listener
            .as_ref()
            .map(|l| l.local_addr())
            .transpose()?,
        local: local.clone(),
        stops: Vec::new(),
        tasks: Vec::new(),
    };
    let (stop, stopped) = stop_pair();
    let task = http::serve(
        http_listener,
        local.clone(),
        stopped,
        SHUTDOWN_GRACE,
        tls.clone(),
    );
    server.push(stop, tokio::spawn(task));
    let (stop, stopped) = stop_pair();
    let task = grpc::serve(grpc_listener, local.clone(), stopped, tls.clone());
    server.push(stop, tokio::spawn(task));
    if let Some(listener) = metrics_listener {
        let (stop, stopped) = stop_pair();
        let task = http::serve_metrics(listener, local.clone(), stopped, SHUTDOWN_GRACE, tls);
        server.push(stop, tokio::spawn(task));
    }
    Ok(server)
}

impl RunningServer {
    fn push(&mut self, stop: oneshot::Sender<()>, task: JoinHandle<()>) {
        self.stops.push(stop);
        self.tasks.push(task);
    }
}

/// Waits for Ctrl-C or, on Unix, SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// `inferperf serve`: starts, prints where it listens and what it serves, and runs until
/// Ctrl-C or SIGTERM.
pub async fn run_serve(opts: ServeOptions) -> anyhow::Result<()> {
    let defs: Vec<String> = opts.models.iter().map(ModelDef::to_string).collect();
    let scheme = match &opts.tls {
        None => "",
        Some(TlsFiles {
            client_ca: None, ..
        }) => " (TLS)",
        Some(_) => " (TLS, client certificates required)",
    };
    let server = start(opts).await?;
    let metrics = match server.metrics_addr {
        Some(addr) => format!("metrics on {addr}"),
        None => "metrics off".to_string(),
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "inferperf serve: HTTP on {}, gRPC on {}{scheme}, {metrics}",
        server.http_addr, server.grpc_addr
    )?;
    writeln!(out, "inferperf serve: models {}", defs.join("; "))?;
    out.flush()?;
    drop(out);
    stop_signal().await;
    server.shutdown().await;
    Ok(())
}
