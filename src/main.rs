//! The `inferperf` binary: parse flags, run the command, map the outcome to perf_analyzer's
//! exit codes (0 ok, 2 unstable, 3 bad option, 99 other), and 130 when Ctrl-C cut the run
//! short.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use inferperf::cli::{
    clap_sentence, normalize_args, refuse_aiperf_only, top_help, Cli, Command, ServeArgs,
};
use inferperf::config::Config;
use inferperf::error::{RunError, EXIT_BAD_OPTION, EXIT_INTERRUPTED};
use inferperf::load::profiler::Interrupt;
use inferperf::server;

fn main() -> ExitCode {
    let args = match text_args(std::env::args_os()) {
        Ok(args) => args,
        Err(e) => return fail(e),
    };
    if let Some(help) = top_help(&args) {
        // A bare `inferperf` asks for nothing: the short help, as a mistake (exit 3).
        if args.len() == 1 {
            eprintln!("{help}");
            return exit(EXIT_BAD_OPTION);
        }
        println!("{help}");
        return exit(0);
    }
    let given = inferperf::cli::without_header_values(args.iter().skip(1).cloned());
    let args = normalize_args(args);
    if let Some(sentence) = refuse_aiperf_only(&args) {
        eprintln!("error: {sentence}");
        return exit(EXIT_BAD_OPTION);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            eprintln!("error: {}", clap_sentence(&e, &args));
            return exit(EXIT_BAD_OPTION);
        }
        Err(e) => {
            let _ = e.print();
            return exit(0);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(RunError::failed(format!("Cannot start the runtime: {e}."))),
    };
    let result = runtime.block_on(run(cli.command, given));
    match result {
        Ok(code) => exit(code),
        Err(e) => fail(e),
    }
}

/// Runs a command; `given` is its command line after the program's name, headers hidden.
async fn run(command: Command, given: Vec<String>) -> Result<i32, RunError> {
    match command {
        Command::Profile(args) => {
            let mut cfg = Config::from_args(&args)?;
            cfg.arguments = given;
            let interrupt = Arc::new(Interrupt::default());
            watch_ctrl_c(interrupt.clone());
            let result = inferperf::app::profile(&cfg, interrupt.clone()).await;
            interrupted(&interrupt, result.map(|outcome| outcome.exit_code))
        }
        Command::Serve(args) => serve(args).await,
        Command::Demo(args) => {
            let interrupt = Arc::new(Interrupt::default());
            watch_ctrl_c(interrupt.clone());
            let result = inferperf::demo::run(&args, interrupt.clone()).await;
            interrupted(&interrupt, result)
        }
        Command::Compare(args) => inferperf::app::compare::run(
            &args.runs,
            args.fail_on.as_deref(),
            args.output.as_deref(),
        ),
        Command::Report(args) => inferperf::app::report::run(&args.results, &args.output),
        // The sweep watches Ctrl-C itself: it must stop the server it started.
        Command::Sweep(args) => inferperf::sweep::run(&args).await,
        Command::Merge(args) => inferperf::app::merge::run(&args),
    }
}

/// A run cut short by Ctrl-C exits with 130 once its reports are written, whatever the
/// levels measured by then earned (an error that followed is still printed).
fn interrupted(interrupt: &Interrupt, result: Result<i32, RunError>) -> Result<i32, RunError> {
    if !interrupt.is_raised() {
        return result;
    }
    if let Err(e) = result {
        eprintln!("error: {e}");
    }
    Ok(EXIT_INTERRUPTED)
}

async fn serve(args: ServeArgs) -> Result<i32, RunError> {
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
        tls: serve_tls(&args)?,
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

/// First Ctrl-C: finish the current window and write every report (then exit 130). Second:
/// exit 130 now.
fn watch_ctrl_c(interrupt: Arc<Interrupt>) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        // The progress line may be drawn on standard error: write over it, not after it.
        let clear = if std::io::stderr().is_terminal() {
            "\r\x1b[2K"
        } else {
            ""
        };
        eprintln!("{clear}Interrupted: finishing the current window and writing the reports (Ctrl-C again to exit now).");
        interrupt.raise();
        if tokio::signal::ctrl_c().await.is_ok() {
            // No destructor runs on this exit: the run's shared-memory objects go now.
            inferperf::shm::unlink_all_created();
            std::process::exit(EXIT_INTERRUPTED);
        }
    });
}

fn fail(error: RunError) -> ExitCode {
    eprintln!("error: {error}");
    exit(error.exit_code())
}

/// The arguments as text; one that is not UTF-8 is a bad option, named by its place.
fn text_args(args: impl Iterator<Item = std::ffi::OsString>) -> Result<Vec<String>, RunError> {
    args.enumerate()
        .map(|(i, arg)| {
            arg.into_string().map_err(|raw| {
                RunError::bad_option(format!(
                    "Argument {i} ({:?}) is not valid UTF-8 text: give flags, names and paths as UTF-8.",
                    raw.to_string_lossy()
                ))
            })
        })
        .collect()
}

fn exit(code: i32) -> ExitCode {
    ExitCode::from(code.clamp(0, 255) as u8)
}
