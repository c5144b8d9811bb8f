//! The `serve` command: the embedded reference server (`crate::server`) on the ports and
//! with the models and TLS files the flags give, until it is stopped.

use crate::cli::ServeArgs;
use inferperf_server as server;
use inferperf_wire::error::RunError;

/// Runs the embedded server until it is stopped.
pub async fn run(args: &ServeArgs) -> Result<i32, RunError> {
    let models = if args.models.is_empty() {
        server::default_models()
    } else {
        args.models
            .iter()
            .map(|m| {
                m.parse()
                    .map_err(|e| RunError::bad_option(format!("--model {m}: {e}")))
            })
            .collect::<Result<_, _>>()?
    };
    let opts = server::ServeOptions {
        host: args.host,
        http_port: args.http_port,
        grpc_port: args.grpc_port,
        metrics_port: args.metrics_port,
        models,
        statistics: !args.no_statistics,
        tls: serve_tls(args)?,
    };
    server::run_serve(opts)
        .await
        .map_err(|e| RunError::failed(format!("The server stopped: {e:#}.")))?;
    Ok(0)
}

/// `serve --tls-cert C --tls-key K [--tls-client-ca CA]`: both files or neither.
fn serve_tls(args: &ServeArgs) -> Result<Option<server::TlsFiles>, RunError> {
    match (&args.tls_cert, &args.tls_key) {
        (None, None) if args.tls_client_ca.is_some() => Err(RunError::bad_option(
            "--tls-client-ca needs --tls-cert and --tls-key: the server must have a certificate of its own.",
        )),
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => {
            let files = server::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.tls_client_ca.clone(),
            };
            files
                .check()
                .map_err(|e| RunError::bad_option(format!("{e:#}.")))?;
            Ok(Some(files))
        }
        _ => Err(RunError::bad_option(
            "--tls-cert and --tls-key go together: give the server's certificate and its private key.",
        )),
    }
}
