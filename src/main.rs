//! The `inferperf` binary: parse flags, dispatch to the command (`inferperf::commands`),
//! map the outcome to perf_analyzer's exit codes (0 ok, 2 unstable, 3 bad option, 99
//! other; 130 when Ctrl-C cut the run short).

use std::process::ExitCode;

use inferperf::cli::{clap_sentence, normalize_args, refuse_aiperf_only, top_help, Command};
use inferperf::commands;
use inferperf_wire::error::{RunError, EXIT_BAD_OPTION};

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
    if args.get(1).is_some_and(|a| a == "profile") {
        match inferperf::cli::expand_sweep(&args[2..]) {
            Ok(None) => {}
            Ok(Some(sweep)) => return block_on(commands::profile::variations::run(&sweep)),
            Err(sentence) => {
                eprintln!("error: {sentence}");
                return exit(EXIT_BAD_OPTION);
            }
        }
    }
    let cli = match inferperf::cli::parse_command_line(args.iter().cloned()) {
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
    block_on(run(cli.command, given))
}

/// Runs a command's future on a multi-threaded runtime; its exit code.
fn block_on(command: impl std::future::Future<Output = Result<i32, RunError>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(RunError::failed(format!("Cannot start the runtime: {e}."))),
    };
    match runtime.block_on(command) {
        Ok(code) => exit(code),
        Err(e) => fail(e),
    }
}

/// Runs a command; `given` is its command line after the program's name, headers hidden.
async fn run(command: Command, given: Vec<String>) -> Result<i32, RunError> {
    match command {
        Command::Profile(args) => commands::profile::run(&args, given).await,
        Command::Serve(args) => commands::serve::run(&args).await,
        Command::Demo(args) => commands::demo::run(&args).await,
        Command::Compare(args) => commands::compare::run(&commands::compare::CompareRequest {
            paths: &args.runs,
            fail_on: args.fail_on.as_deref(),
            output: args.output.as_deref(),
            allow_partial: args.allow_partial,
        }),
        Command::Report(args) => commands::report::run(&args.results, &args.output),
        Command::Sweep(args) => commands::sweep::run(&args).await,
        Command::Merge(args) => commands::merge::run(&args),
    }
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
