//! `inferperf demo`: a first report with one command. It starts the embedded server inside
//! the process on free loopback ports, profiles short sweeps that show what users come for —
//! how throughput and latency grow with concurrency, how dynamic batching pays off, and every
//! answer of a decoupled (streaming) model timed, an LLM's tokens streamed over the OpenAI
//! API — prints perf_analyzer's and GenAI-Perf's reports and writes the CSVs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::profile;
use crate::cli::{Command, DemoArgs};
use crate::config::Config;
use crate::load::profiler::{Interrupt, Profiler};
use crate::measure::cpu::process_cpu_time;
use crate::ui::progress::Live;
use inferperf_server::{self as server, ModelDef, RunningServer, ServeOptions};
use inferperf_wire::error::{RunError, RunResult, EXIT_OK};

/// The models the demo serves.
const DEMO_MODELS: [&str; 5] = [
    "slow=sleep:ms=5,instances=8",
    "batched=sleep:ms=2,max_batch=8,queue_delay_us=500",
    "tokens=stream:responses=5,first_ms=10,interval_ms=4,instances=4",
    "noop=noop",
    "chat=llm:ttft_ms=20,itl_ms=5,prefill_us_per_token=50,max_batch=8",
];

/// One profile the demo runs: a title, the model, the protocol, the sweep.
struct Scenario {
    title: &'static str,
    model: &'static str,
    protocol: &'static str,
    range: &'static str,
    /// Over gRPC's ModelStreamInfer (`--streaming`).
    streaming: bool,
    csv: &'static str,
    /// More flags, as typed.
    extra: &'static [&'static str],
}

const SCENARIOS: [Scenario; 4] = [
    Scenario {
        title: "a 5 ms model with 8 instances over HTTP: throughput grows with concurrency until the 8 instances are busy, then only latency grows",
        model: "slow",
        protocol: "http",
        range: "1:22:7",
        streaming: false,
        csv: "sleep_http.csv",
        extra: &[],
    },
    Scenario {
        title: "a 2 ms model with dynamic batching (max 8) over gRPC: batching pays off",
        model: "batched",
        protocol: "grpc",
        range: "1:15:7",
        streaming: false,
        csv: "batched_grpc.csv",
        extra: &[],
    },
    Scenario {
        title: "a decoupled model streaming 5 answers per request (the first after 10 ms, then every 4 ms; 4 instances): every answer timed",
        model: "tokens",
        protocol: "grpc",
        range: "1:4:3",
        streaming: true,
        csv: "tokens_stream.csv",
        extra: &[],
    },
    Scenario {
        title: "an LLM over the OpenAI chat API (first token after 20 ms + 50 us per prompt token, then one every 5 ms; 8 sequences batched, so past 8 requests only TTFT grows): TTFT, inter-token latency, tokens/s",
        model: "chat",
        protocol: "http",
        range: "2:16:7",
        streaming: true,
        csv: "chat_openai.csv",
        extra: &[
            "--service-kind",
            "openai",
            "--endpoint",
            "v1/chat/completions",
            "--synthetic-input-tokens-mean",
            "200",
            "--output-tokens-mean",
            "10",
            "--output-tokens-mean-deterministic",
        ],
    },
];

/// `inferperf demo`, with Ctrl-C watched: the exit code.
pub async fn run(args: &DemoArgs) -> RunResult<i32> {
    let interrupt = Arc::new(Interrupt::default());
    super::watch_ctrl_c(interrupt.clone());
    let result = demo(args, interrupt.clone()).await;
    super::interrupted(&interrupt, result)
}

/// Runs the demo; the exit code is 0 when every scenario ran. `interrupt` (Ctrl-C) stops it
/// after the current window, with that level's report.
async fn demo(args: &DemoArgs, interrupt: Arc<Interrupt>) -> RunResult<i32> {
    std::fs::create_dir_all(&args.out).map_err(|e| {
        RunError::failed(format!(
            "Cannot create the demo's output directory {}: {e}.",
            args.out.display()
        ))
    })?;
    let server = start_server().await?;
    println!(
        "inferperf demo: {} short sweeps and a cost comparison against the embedded server, which runs in this process (HTTP {}, gRPC {}); about 35 s with the default -p {}. The CSVs go to {}.\n",
        SCENARIOS.len(),
        server.http_addr,
        server.grpc_addr,
        args.measurement_interval,
        args.out.display()
    );
    let mut ran = Vec::new();
    for scenario in &SCENARIOS {
        println!("=== {} ===\n", scenario.title);
        let mut cfg = scenario_config(scenario, &server, args)?;
        cfg.target.server_in_process = true;
        profile::profile(&cfg, interrupt.clone()).await?;
        println!("  -> {}\n", csv_path(&args.out, scenario.csv).display());
        ran.push(scenario);
        if interrupt.is_raised() {
            break;
        }
    }
    write_report(&args.out, &ran)?;
    if !interrupt.is_raised() {
        let rows = cost_comparison(&server, args, &interrupt).await?;
        print!("{}", cost_table(&rows));
        write_cost_csv(&csv_path(&args.out, COST_CSV), &rows)?;
        println!("  -> {}\n", csv_path(&args.out, COST_CSV).display());
        print!("{NEXT}");
    }
    server.shutdown().await;
    Ok(EXIT_OK)
}

const COST_CSV: &str = "noop_cost.csv";

/// The demo's last words: the same measurement against a server of one's own.
const NEXT: &str =
    "Next, the first sweep against a server of your own (here the embedded one, started apart):
  inferperf serve --model slow=sleep:ms=5,instances=8 &
  inferperf -m slow -u localhost:8000 --concurrency-range 1:22:7 -p 1000 -f slow.csv
";

/// What one request costs on one path to the `noop` model.
pub struct CostRow {
    pub path: &'static str,
    pub requests: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    /// CPU of this process (client and server both live here) per request.
    pub cpu_us: f64,
}

/// `noop` at concurrency 1 called in-process, over HTTP and over gRPC: the framework's own
/// cost per request, with nothing else to measure.
pub async fn cost_comparison(
    server: &RunningServer,
    args: &DemoArgs,
    interrupt: &Arc<Interrupt>,
) -> RunResult<Vec<CostRow>> {
    let interval = args.measurement_interval.to_string();
    let (http, grpc) = (server.http_addr.to_string(), server.grpc_addr.to_string());
    let paths: [(&'static str, Vec<&str>); 3] = [
        (
            "local",
            vec!["--service-kind", "local", "--model", "noop=noop"],
        ),
        ("HTTP", vec!["-u", &http, "-i", "http"]),
        ("gRPC", vec!["-u", &grpc, "-i", "grpc"]),
    ];
    let mut rows = Vec::new();
    for (path, extra) in paths {
        let mut flags = vec![
            "inferperf",
            "profile",
            "-m",
            "noop",
            "-p",
            &interval,
            "-r",
            "3",
            "-s",
            "100",
        ];
        flags.extend(extra);
        if args.no_progress {
            flags.push("--no-progress");
        }
        let mut cfg = profile_config(&flags)?;
        cfg.target.server_in_process = true;
        rows.push(measure_cost(path, &cfg, interrupt).await?);
    }
    Ok(rows)
}

async fn measure_cost(
    path: &'static str,
    cfg: &Config,
    interrupt: &Arc<Interrupt>,
) -> RunResult<CostRow> {
    let prepared = profile::prepare(cfg).await?;
    let cpu_before = process_cpu_time();
    let plan = profile::plan(cfg);
    let mut profiler = Profiler::new(plan, prepared.replicas, prepared.dataset, interrupt.clone());
    let live = Live::for_stderr(&cfg.output, &plan);
    if let Some(hook) = live.hook() {
        profiler = profiler.with_progress(hook);
    }
    let outcome = profiler.measure_levels(|_| {}).await;
    live.finish();
    let cpu = process_cpu_time().saturating_sub(cpu_before);
    if let Some(e) = outcome.error {
        return Err(e);
    }
    let level = outcome
        .results
        .first()
        .ok_or_else(|| RunError::failed("The cost comparison measured nothing."))?;
    let requests: u64 = level.windows.iter().map(|w| w.completed()).sum();
    Ok(CostRow {
        path,
        requests,
        mean_us: level.merged.mean_latency_us(),
        p50_us: level.merged.percentile_us(50.0),
        cpu_us: cpu.as_secs_f64() * 1e6 / requests.max(1) as f64,
    })
}

/// The comparison as a small table.
pub fn cost_table(rows: &[CostRow]) -> String {
    let mut out = String::from(
        "=== What the framework itself costs per request (model noop, concurrency 1) ===\n\n",
    );
    out +=
        "  path    mean latency   p50 latency   CPU per request (client + server, one process)\n";
    for r in rows {
        out += &format!(
            "  {:<6} {:>9.1} usec {:>9.1} usec {:>12.1} usec   ({} requests)\n",
            r.path, r.mean_us, r.p50_us, r.cpu_us, r.requests
        );
    }
    out + "\n"
}

fn write_cost_csv(path: &Path, rows: &[CostRow]) -> RunResult<()> {
    let mut text = String::from("Path,Requests,Avg latency,p50 latency,CPU per request\n");
    for r in rows {
        text += &format!(
            "{},{},{:.1},{:.1},{:.1}\n",
            r.path, r.requests, r.mean_us, r.p50_us, r.cpu_us
        );
    }
    std::fs::write(path, text)
        .map_err(|e| RunError::failed(format!("Cannot write {}: {e}.", path.display())))
}

async fn start_server() -> RunResult<RunningServer> {
    let models = DEMO_MODELS
        .iter()
        .map(|m| m.parse::<ModelDef>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RunError::failed(format!("The demo's model list is invalid: {e}")))?;
    server::start(ServeOptions {
        host: "127.0.0.1".parse().expect("loopback address"),
        http_port: 0,
        grpc_port: 0,
        models,
        ..Default::default()
    })
    .await
    .map_err(|e| RunError::failed(format!("The embedded server did not start: {e:#}.")))
}

/// The scenario's results file: its CSV's name with `.json`.
fn results_path(out: &Path, s: &Scenario) -> PathBuf {
    csv_path(out, s.csv).with_extension("json")
}

/// One HTML page with every scenario that ran, one after another: `OUT/report.html`.
fn write_report(out: &Path, ran: &[&Scenario]) -> RunResult<()> {
    let mut files = Vec::new();
    for s in ran {
        files.push((
            s.title.to_string(),
            crate::results::read(results_path(out, s))?,
        ));
    }
    let runs: Vec<(String, &crate::results::ResultsFile)> =
        files.iter().map(|(t, f)| (t.clone(), f)).collect();
    let path = out.join("report.html");
    std::fs::write(&path, crate::report::html::render_many(&runs))
        .map_err(|e| RunError::failed(format!("Cannot write {}: {e}.", path.display())))?;
    println!("HTML report: {}\n", path.display());
    Ok(())
}

fn csv_path(out: &Path, name: &str) -> PathBuf {
    out.join(name)
}

/// The scenario as the flags a user would type, so the demo runs exactly the real command.
fn scenario_config(s: &Scenario, server: &RunningServer, args: &DemoArgs) -> RunResult<Config> {
    let url = match s.protocol {
        "grpc" => server.grpc_addr.to_string(),
        _ => server.http_addr.to_string(),
    };
    let interval = args.measurement_interval.to_string();
    let csv = csv_path(&args.out, s.csv);
    let mut flags = vec![
        "inferperf",
        "profile",
        "-m",
        s.model,
        "-u",
        &url,
        "-i",
        s.protocol,
        "--concurrency-range",
        s.range,
        "-p",
        &interval,
        "-s",
        "15",
        "-r",
        "6",
    ];
    let csv = csv.to_string_lossy();
    flags.extend(["-f", &csv]);
    let results = results_path(&args.out, s);
    let results = results.to_string_lossy();
    flags.extend(["--results-file", &results]);
    if args.no_progress {
        flags.push("--no-progress");
    }
    if s.streaming {
        flags.push("--streaming");
    }
    flags.extend_from_slice(s.extra);
    profile_config(&flags)
}

/// Parses and validates profile flags as the command line would.
pub fn profile_config(flags: &[&str]) -> RunResult<Config> {
    let cli = crate::cli::parse_command_line(flags.iter().copied())
        .map_err(|e| RunError::bad_option(e.to_string()))?;
    match cli.command {
        Command::Profile(args) => Config::from_args(&args),
        _ => Err(RunError::bad_option("expected profile flags")),
    }
}
