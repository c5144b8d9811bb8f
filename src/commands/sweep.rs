//! `inferperf sweep`: how does a server setting change the curve? For each setting of the
//! `--param` values it starts the server command on free ports, waits until it is ready,
//! runs the same profile as `inferperf profile` in this process into the setting's folder,
//! stops the server and goes on; then prints one table of settings by load level and writes
//! `DIR/sweep.html` overlaying their curves. A server that fails is a row saying so, never
//! the end of the sweep; Ctrl-C stops the current server and reports what was measured.

mod server;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use super::profile;

use crate::cli::SweepArgs;
use crate::config::sweep::{Ports, Setting, SweepPlan, GRPC_PORT, METRICS_PORT};
use crate::config::{Config, REPORT_CSV_NAME, RESULTS_FILE_NAME};
use crate::load::profiler::Interrupt;
use crate::report::console::sweep::{row_sentence, table, SettingEnd, SweepRow};
use crate::report::html::sweep::{self as page, SweepPage};
use inferperf_wire::error::{
    RunError, RunResult, EXIT_GENERIC, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNSTABLE,
};
use server::{describe, free_ports, signal_group, Server, Waited};

/// The server lines a failed setting's row shows.
const TAIL_LINES: usize = 5;
/// The comparison page's name in the sweep's folder.
pub const SWEEP_PAGE: &str = "sweep.html";

/// Runs the sweep; the exit code is 0 when every setting was measured and stable, 2 when a
/// level was unstable, 99 when a server or a profile failed, 130 after Ctrl-C.
pub async fn run(args: &SweepArgs) -> RunResult<i32> {
    let plan = SweepPlan::from_args(args)?;
    std::fs::create_dir_all(&plan.report_dir).map_err(|e| {
        RunError::bad_option(format!(
            "Cannot create the sweep's folder {}: {e}.",
            plan.report_dir.display()
        ))
    })?;
    let interrupt = Arc::new(Interrupt::default());
    let pgid = Arc::new(AtomicI32::new(0));
    watch_signals(interrupt.clone(), pgid.clone());
    let settings = plan.settings();
    println!(
        "inferperf sweep: {} setting(s) of `{}`; reports in {}/\n",
        settings.len(),
        plan.command_text,
        plan.report_dir.display()
    );
    let page_path = plan.report_dir.join(SWEEP_PAGE);
    let mut rows = Vec::new();
    for (i, setting) in settings.iter().enumerate() {
        if interrupt.is_raised() {
            break;
        }
        println!(
            "=== setting {}/{}: {} ===",
            i + 1,
            settings.len(),
            setting.label()
        );
        let row = run_setting(&plan, setting, &interrupt, &pgid).await;
        if row.end.failed() {
            println!("{}: {}", row.label, row_sentence(&row).unwrap_or_default());
            for line in &row.log_tail {
                println!("    | {line}");
            }
        }
        println!();
        rows.push(row);
        // The page is there while the sweep goes on; a failure to write it is told at the end.
        let _ = write_page(args, &rows, false, &page_path);
    }
    let interrupted = interrupt.is_raised();
    println!(
        "=== sweep: {} of {} setting(s) measured{} ===",
        rows.iter().filter(|r| !r.end.failed()).count(),
        settings.len(),
        if interrupted {
            ", interrupted (Ctrl-C)"
        } else {
            ""
        }
    );
    print!("{}", table(&rows));
    write_page(args, &rows, interrupted, &page_path).map_err(|e| {
        RunError::failed(format!(
            "Cannot write the sweep's page {}: {e}.",
            page_path.display()
        ))
    })?;
    println!("  -> {}", page_path.display());
    Ok(exit_code(&rows, interrupted))
}

fn write_page(
    args: &SweepArgs,
    rows: &[SweepRow],
    interrupted: bool,
    path: &Path,
) -> std::io::Result<()> {
    let sweep = SweepPage {
        command: &args.server,
        profile: &args.profile,
        rows,
        interrupted,
    };
    page::write(&sweep, path)
}

/// 130 after Ctrl-C, else 99 when a setting failed, else 2 when a level was unstable, else 0.
fn exit_code(rows: &[SweepRow], interrupted: bool) -> i32 {
    if interrupted {
        EXIT_INTERRUPTED
    } else if rows.iter().any(|r| r.end.failed()) {
        EXIT_GENERIC
    } else if rows.iter().any(|r| r.end == SettingEnd::Unstable) {
        EXIT_UNSTABLE
    } else {
        EXIT_OK
    }
}

/// One setting: its server started, waited for, profiled and stopped.
async fn run_setting(
    plan: &SweepPlan,
    setting: &Setting,
    interrupt: &Arc<Interrupt>,
    pgid: &AtomicI32,
) -> SweepRow {
    let mut row = SweepRow {
        values: setting.values.clone(),
        label: setting.label(),
        dir: setting.dir_name(),
        command: String::new(),
        end: SettingEnd::ProfileFailed,
        message: None,
        log_tail: Vec::new(),
        results: None,
    };
    let dir = plan.setting_dir(setting);
    let prepared = clear_dir(&dir).and_then(|()| {
        let wanted = 1 + plan.names(GRPC_PORT) as usize + plan.names(METRICS_PORT) as usize;
        let ports = free_ports(wanted)?;
        Ok(Ports {
            port: ports[0],
            grpc_port: plan.names(GRPC_PORT).then(|| ports[1]),
            metrics_port: plan.names(METRICS_PORT).then(|| ports[wanted - 1]),
        })
    });
    let ports = match prepared {
        Ok(ports) => ports,
        Err(e) => {
            row.message = Some(format!("cannot prepare {}: {e}", dir.display()));
            return row;
        }
    };
    let cfg = match plan.profile_config(setting, &ports) {
        Ok(cfg) => cfg,
        Err(e) => {
            row.message = Some(e.to_string());
            return row;
        }
    };
    row.command = plan.command(setting, &ports);
    println!("server: {}", row.command);
    let log = dir.join("server.log");
    let mut server = match Server::spawn(&row.command, &log) {
        Ok(server) => server,
        Err(e) => {
            row.end = SettingEnd::ServerFailed;
            row.message = Some(format!("cannot run the server command: {e}"));
            return row;
        }
    };
    pgid.store(server.pgid(), Ordering::SeqCst);
    let addr = SocketAddr::from(([127, 0, 0, 1], ports.port));
    let path = &ready_path(&cfg);
    let ready = server
        .wait_ready(addr, path, plan.ready_timeout, interrupt)
        .await;
    let not_ready = match ready {
        Waited::Ready(took) => {
            println!(
                "ready after {:.1} s (GET {path} on {addr})\n",
                took.as_secs_f64()
            );
            None
        }
        Waited::Exited(status) => Some((
            SettingEnd::ServerFailed,
            format!(
                "the server exited before it was ready ({})",
                describe(status)
            ),
        )),
        Waited::TimedOut => Some((
            SettingEnd::ServerFailed,
            format!(
                "the server was not ready within {} s (GET {path} on {addr} never answered 200)",
                plan.ready_timeout.as_secs_f64()
            ),
        )),
        Waited::Interrupted => Some((
            SettingEnd::Interrupted,
            "interrupted (Ctrl-C) before the server was ready".to_string(),
        )),
    };
    if let Some((end, message)) = not_ready {
        server.stop(plan.stop_grace).await;
        pgid.store(0, Ordering::SeqCst);
        row.end = end;
        row.message = Some(message);
        if end == SettingEnd::ServerFailed {
            row.log_tail = server.log_tail(TAIL_LINES);
        }
        return row;
    }
    let result = profile::profile(&cfg, interrupt.clone()).await;
    let died = server.exited();
    server.stop(plan.stop_grace).await;
    pgid.store(0, Ordering::SeqCst);
    row.results = crate::results::read(&dir).ok();
    if let Err(e) = &result {
        println!("error: {e}");
    }
    let (end, message) = match (died, result) {
        (Some(status), _) => (
            SettingEnd::ServerFailed,
            Some(format!(
                "the server died during its profile ({})",
                describe(status)
            )),
        ),
        (None, _) if interrupt.is_raised() => (SettingEnd::Interrupted, None),
        (None, Err(e)) => (
            SettingEnd::ProfileFailed,
            Some(format!("the profile failed: {e}")),
        ),
        (None, Ok(outcome)) if outcome.exit_code == EXIT_UNSTABLE => (SettingEnd::Unstable, None),
        (None, Ok(_)) => (SettingEnd::Measured, None),
    };
    if end.failed() {
        row.log_tail = server.log_tail(TAIL_LINES);
    }
    row.end = end;
    row.message = message;
    row
}

/// The setting's folder, created, without the reports of an earlier sweep.
fn clear_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for name in [RESULTS_FILE_NAME, REPORT_CSV_NAME, "report.html"] {
        match std::fs::remove_file(dir.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// What answers 200 once the server is ready, as the API's table says (KServe v2's
/// readiness, OpenAI's model list, TorchServe's ping, TF Serving's model metadata), or the
/// endpoint type's where it has its own (Triton's generate extension: KServe v2's
/// readiness; Hugging Face TGI and TEI: `/health`).
fn ready_path(cfg: &Config) -> String {
    let endpoint = cfg.target.llm().map(|llm| llm.endpoint.facts());
    let path = endpoint.and_then(|e| e.readiness_path);
    let path = path.unwrap_or(cfg.target.service_kind().capabilities().readiness_path);
    path.replace("{model}", &cfg.target.model_name)
}

/// Ctrl-C once: the current window ends, the server is stopped and the reports written
/// (exit 130). Twice, or SIGTERM / SIGHUP: the server's group is killed and inferperf exits
/// at once (130, or 128 + the signal).
fn watch_signals(interrupt: Arc<Interrupt>, pgid: Arc<AtomicI32>) {
    let group = pgid.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        eprintln!("Interrupted: finishing the current window, stopping the server and writing the reports (Ctrl-C again to kill the server and exit now).");
        interrupt.raise();
        if tokio::signal::ctrl_c().await.is_ok() {
            signal_group(group.load(Ordering::SeqCst), libc::SIGKILL);
            std::process::exit(EXIT_INTERRUPTED);
        }
    });
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        let number = tokio::select! {
            _ = term.recv() => libc::SIGTERM,
            _ = hup.recv() => libc::SIGHUP,
        };
        signal_group(pgid.load(Ordering::SeqCst), libc::SIGKILL);
        std::process::exit(128 + number);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{normalize_args, Cli, Command};
    use clap::Parser;

    fn ready_path_of(args: &[&str]) -> String {
        let mut all = vec!["inferperf", "-m", "m"];
        all.extend_from_slice(args);
        let args = normalize_args(all.iter().map(|s| s.to_string()).collect());
        let Command::Profile(p) = Cli::try_parse_from(args).unwrap().command else {
            panic!("a profile");
        };
        ready_path(&Config::from_args(&p).unwrap())
    }

    #[test]
    fn the_endpoint_type_says_when_its_server_is_ready() {
        let openai = ["--service-kind", "openai", "--endpoint-type"];
        let path = |endpoint: &str| ready_path_of(&[&openai[..], &[endpoint]].concat());
        assert_eq!(path("chat"), "/v1/models");
        assert_eq!(path("generate"), "/v2/health/ready");
        assert_eq!(path("huggingface_generate"), "/health");
        assert_eq!(ready_path_of(&[]), "/v2/health/ready");
        let tfserving = ready_path_of(&["--service-kind", "tfserving"]);
        assert_eq!(tfserving, "/v1/models/m/metadata");
    }
}
