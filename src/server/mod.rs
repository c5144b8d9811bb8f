//! The embedded KServe v2 reference server: the default profiling target and the ground
//! truth of the tests. It serves a fixed set of synthetic models ([`models`]) over HTTP
//! ([`http`], axum) and gRPC ([`grpc`], tonic) from one shared, read-only registry, so the
//! request path takes no lock. [`start`] binds both ports and returns once they listen.

mod grpc;
mod http;
mod models;

use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use models::{default_models, InferError, Model, ModelDef, ModelKind};

/// The largest HTTP body or gRPC message the server takes or sends.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// How long [`RunningServer::shutdown`] waits for open requests before it stops anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Where to listen and what to serve. Port 0 picks a free port.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub host: IpAddr,
    pub http_port: u16,
    pub grpc_port: u16,
    pub models: Vec<ModelDef>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            http_port: 8000,
            grpc_port: 8001,
            models: default_models(),
        }
    }
}

/// The served models by name; built once at start and shared read-only.
#[derive(Debug)]
pub struct Registry {
    models: HashMap<String, Arc<Model>>,
}

impl Registry {
    /// Builds the registry; two models of the same name are an error.
    pub fn new(defs: Vec<ModelDef>) -> anyhow::Result<Registry> {
        let mut models = HashMap::new();
        for def in defs {
            let name = def.name.clone();
            if models
                .insert(name.clone(), Arc::new(Model::new(def)))
                .is_some()
            {
                anyhow::bail!("model '{name}' is defined twice; give each --model its own name");
            }
        }
        Ok(Registry { models })
    }

    /// The model of that name, if `version` is empty or "1" (each model has one version).
    pub fn get(&self, name: &str, version: &str) -> Result<&Arc<Model>, InferError> {
        match self.models.get(name) {
            Some(model) if version.is_empty() || version == "1" => Ok(model),
            _ => Err(InferError::unknown_model(name, version)),
        }
    }
}

/// A running server; [`RunningServer::shutdown`] stops it (dropping it stops it too).
#[derive(Debug)]
pub struct RunningServer {
    pub http_addr: SocketAddr,
    pub grpc_addr: SocketAddr,
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

async fn bind(host: IpAddr, port: u16, what: &str) -> anyhow::Result<tokio::net::TcpListener> {
    let addr = SocketAddr::new(host, port);
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen for {what} on {addr}; is the port in use?"))
}

/// Binds both ports, spawns the HTTP and gRPC servers on the current tokio runtime and
/// returns once both listen.
pub async fn start(opts: ServeOptions) -> anyhow::Result<RunningServer> {
    let registry = Arc::new(Registry::new(opts.models)?);
    let http_listener = bind(opts.host, opts.http_port, "HTTP").await?;
    let grpc_listener = bind(opts.host, opts.grpc_port, "gRPC").await?;
    let http_addr = http_listener.local_addr()?;
    let grpc_addr = grpc_listener.local_addr()?;
    let (http_stop, http_stopped) = oneshot::channel::<()>();
    let (grpc_stop, grpc_stopped) = oneshot::channel::<()>();
    let http_task = tokio::spawn(http::serve(http_listener, registry.clone(), async {
        let _ = http_stopped.await;
    }));
    let grpc_task = tokio::spawn(grpc::serve(grpc_listener, registry, async {
        let _ = grpc_stopped.await;
    }));
    Ok(RunningServer {
        http_addr,
        grpc_addr,
        stops: vec![http_stop, grpc_stop],
        tasks: vec![http_task, grpc_task],
    })
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
    let server = start(opts).await?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "inferperf serve: HTTP on {}, gRPC on {}, metrics off",
        server.http_addr, server.grpc_addr
    )?;
    writeln!(out, "inferperf serve: models {}", defs.join("; "))?;
    out.flush()?;
    drop(out);
    stop_signal().await;
    server.shutdown().await;
    Ok(())
}
