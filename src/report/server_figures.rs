//! The engine's and the GPUs' figures of a level as named values with units, in a fixed
//! order, for the reports that tabulate them (the `-f` CSV's columns, the HTML report's
//! table); the console and the AIPerf exports write their own layouts. Also the one sentence
//! both the console and the HTML report give a count the engine and the client disagree on.

use crate::measure::server::engine_figures::{CountCheck, EngineFigures, GaugeFigures};
use crate::measure::server::gpu_figures::GpuTelemetry;
use crate::measure::window::WindowStats;

/// One engine or GPU figure of a level, named with its unit.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedFigure {
    pub name: String,
    pub unit: &'static str,
    pub value: Option<f64>,
}

/// The engine's figures of a level, always the same names in the same order (a figure the
/// engine does not export has no value).
pub fn engine_figures(f: &EngineFigures) -> Vec<NamedFigure> {
    let figure = |name: &str, unit, value| NamedFigure {
        name: name.to_string(),
        unit,
        value,
    };
    let percent = |v: Option<f64>| v.map(|v| v * 100.0);
    let avg = |g: Option<GaugeFigures>, scale: f64| g.map(|g| g.avg * scale);
    let max = |g: Option<GaugeFigures>, scale: f64| g.map(|g| g.max * scale);
    let mut all = vec![
        figure(
            "Engine Requests Running Avg",
            "requests",
            avg(f.running, 1.0),
        ),
        figure(
            "Engine Requests Running Max",
            "requests",
            max(f.running, 1.0),
        ),
        figure(
            "Engine Requests Waiting Avg",
            "requests",
            avg(f.waiting, 1.0),
        ),
        figure(
            "Engine Requests Waiting Max",
            "requests",
            max(f.waiting, 1.0),
        ),
        figure("Engine KV Cache Usage Avg", "%", avg(f.kv_usage, 100.0)),
        figure("Engine KV Cache Usage Max", "%", max(f.kv_usage, 100.0)),
    ];
    all.extend([
        figure(
            "Engine Prefix Cache Hit Rate",
            "%",
            percent(f.prefix_hit_rate),
        ),
        figure("Engine Preemptions", "requests", f.preemptions),
        figure("Engine Prompt Tokens/s", "tokens/s", f.prompt_tokens_per_s),
        figure(
            "Engine Generation Tokens/s",
            "tokens/s",
            f.generation_tokens_per_s,
        ),
    ]);
    for (names, h) in [
        (
            ["Engine TTFT p50", "Engine TTFT p90", "Engine TTFT p99"],
            f.ttft,
        ),
        (
            ["Engine ITL p50", "Engine ITL p90", "Engine ITL p99"],
            f.itl,
        ),
        (
            [
                "Engine Request Latency p50",
                "Engine Request Latency p90",
                "Engine Request Latency p99",
            ],
            f.e2e,
        ),
    ] {
        let values = [
            h.map(|h| h.p50_ms),
            h.map(|h| h.p90_ms),
            h.map(|h| h.p99_ms),
        ];
        all.extend(
            names
                .into_iter()
                .zip(values)
                .map(|(n, v)| figure(n, "ms", v)),
        );
    }
    all
}

/// The engine's and the GPUs' figures of a window for the tables (none without
/// `--server-metrics` or `--gpu-telemetry`).
pub fn server_figures(w: &WindowStats) -> Vec<NamedFigure> {
    let Some(metrics) = &w.metrics else {
        return Vec::new();
    };
    let mut all = EngineFigures::of(metrics).map_or_else(Vec::new, |f| engine_figures(&f));
    if let Some(t) = GpuTelemetry::of(metrics, w.output_token_count()) {
        all.extend(gpu_figures(&t));
    }
    all
}

/// The GPU figures of a level for the tables: each GPU's (named by its UUID), then the
/// energy of all and the output tokens per joule over all.
pub fn gpu_figures(t: &GpuTelemetry) -> Vec<NamedFigure> {
    let figure = |name: String, unit, value| NamedFigure { name, unit, value };
    let mut all = Vec::new();
    for gpu in &t.gpus {
        let name = |what: &str| format!("GPU {} {what}", gpu.uuid);
        all.extend([
            figure(name("Utilization Avg"), "%", gpu.utilization.map(|g| g.avg)),
            figure(name("Memory Used Max"), "MiB", gpu.memory_used_mib),
            figure(name("Power Avg"), "W", gpu.power_watts.map(|g| g.avg)),
            figure(name("Power Max"), "W", gpu.power_watts.map(|g| g.max)),
            figure(name("Energy"), "J", gpu.energy_joules),
            figure(
                name("Output Tokens/J"),
                "tokens/J",
                gpu.output_tokens_per_joule,
            ),
        ]);
    }
    all.push(figure("All GPUs Energy".into(), "J", t.energy_joules));
    let per_joule = t.output_tokens_per_joule;
    all.push(figure(
        "All GPUs Output Tokens/J".into(),
        "tokens/J",
        per_joule,
    ));
    all
}

/// What a count the engine and the client disagree on says, for the console's warning and
/// the HTML report's.
pub fn disagreement(c: &CountCheck) -> String {
    let allowance = match c.in_flight {
        0.0 => "1%".to_string(),
        n => format!("1% and the {n:.0} the requests in flight at the level's ends account for"),
    };
    format!(
        "The engine counted {:.0} {}, the client {:.0} ({:+.1}%), more apart than {allowance}: another client used the server, or one side counts wrongly.",
        c.engine,
        c.what,
        c.client,
        c.off() * 100.0,
    )
}
