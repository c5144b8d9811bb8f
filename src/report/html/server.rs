//! What the server was doing beside the client's figures: the engine's own metrics
//! (`--server-metrics`) and the GPUs (`--gpu-telemetry`) per level, as a table with the
//! engine's counts beside the client's, and over the run's windows as timelines under the
//! client's own per-window figures; and for LLM runs the curve serving setups are compared
//! on — output tokens per second against output tokens per second per user, in all and per
//! GPU when the telemetry counts the GPUs.

use std::fmt::Write;

use super::load_name;
use super::svg::{colored, esc, load_chart, num, Points};
use crate::measure::server::engine_figures::EngineFigures;
use crate::measure::server::gpu_figures::GpuTelemetry;
use crate::report::server_figures::{disagreement, engine_figures, gpu_figures, NamedFigure};
use crate::results::{LevelRecord, ResultsFile, WindowRecord};

/// The engine and GPU figures of a window record, for the table.
fn named(w: &WindowRecord) -> Vec<NamedFigure> {
    let mut all = w
        .engine
        .as_ref()
        .map_or_else(Vec::new, |e| engine_figures(&e.figures));
    all.extend(w.gpu_telemetry.as_ref().map_or_else(Vec::new, gpu_figures));
    all
}

/// The section: nothing when the run asked for neither the engine's metrics nor the GPUs'.
pub fn server(file: &ResultsFile) -> String {
    let names: Vec<String> = (file.levels.iter())
        .map(|l| named(&l.merged))
        .max_by_key(Vec::len)
        .unwrap_or_default()
        .into_iter()
        .map(|f| format!("{} ({})", f.name, f.unit))
        .collect();
    let failures = failed_scrapes(file);
    if names.is_empty() && failures.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>What the server was doing</h2>");
    out.push_str(&failures);
    if names.is_empty() {
        return out;
    }
    out.push_str(&disagreements(file));
    out.push_str(&table(file, &names));
    out.push_str("<div class=\"charts\">");
    out.push_str(&timelines(file));
    out.push_str("</div>");
    out
}

/// A note per level whose metrics pages failed to answer (the run went on without them).
fn failed_scrapes(file: &ResultsFile) -> String {
    let mut out = String::new();
    for l in &file.levels {
        let Some(m) = l.merged.metrics.as_ref().filter(|m| m.failed_scrapes > 0) else {
            continue;
        };
        let _ = write!(
            out,
            "<div class=\"warn\">{}: {} of {} scrapes of the metrics pages failed, the last one: {}. The figures below leave them out.</div>",
            esc(&load_name(l)),
            m.failed_scrapes,
            m.scrapes + m.failed_scrapes,
            esc(m.last_error.as_deref().unwrap_or("no reason given"))
        );
    }
    out
}

/// A warning per level and count the engine and the client disagree on (see
/// `CountCheck::disagrees`).
fn disagreements(file: &ResultsFile) -> String {
    let mut out = String::new();
    for l in &file.levels {
        let checks = l.merged.engine.iter().flat_map(|e| &e.counts);
        for c in checks.filter(|c| c.disagrees()) {
            let _ = write!(
                out,
                "<div class=\"warn\">{}: {}</div>",
                esc(&load_name(l)),
                esc(&disagreement(c))
            );
        }
    }
    out
}

/// A row per figure, a column per level.
fn table(file: &ResultsFile, names: &[String]) -> String {
    let mut out = String::from("<table><tr><th class=\"l\">Figure</th>");
    for l in &file.levels {
        let _ = write!(out, "<th>{}</th>", esc(&load_name(l)));
    }
    out.push_str("</tr>");
    let columns: Vec<Vec<NamedFigure>> = file.levels.iter().map(|l| named(&l.merged)).collect();
    for (i, name) in names.iter().enumerate() {
        let _ = write!(out, "<tr><td class=\"l\">{}</td>", esc(name));
        for figures in &columns {
            let cell = figures.get(i).and_then(|f| f.value).map_or("–".into(), num);
            let _ = write!(out, "<td>{}</td>", esc(&cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

/// Every window of the run in time order, with its level.
fn windows(file: &ResultsFile) -> Vec<(&LevelRecord, &WindowRecord)> {
    (file.levels.iter())
        .flat_map(|l| l.windows.iter().map(move |w| (l, w)))
        .filter(|(_, w)| w.end_s.is_some())
        .collect()
}

/// One point per window holding the figure, at the window's end.
fn per_window(file: &ResultsFile, f: impl Fn(&WindowRecord) -> Option<f64>, unit: &str) -> Points {
    (windows(file).into_iter())
        .filter_map(|(l, w)| {
            let (x, y) = (w.end_s?, f(w)?);
            let tip = format!(
                "{}, window to {} s: {} {unit}",
                load_name(l),
                num(x),
                num(y)
            );
            Some((x, y, tip))
        })
        .collect()
}

/// A chart over the run's time from named series (empty ones left out; no chart without
/// any point).
fn timeline_chart(title: &str, y: &str, series: Vec<(String, Points)>) -> String {
    let series = colored(series.into_iter().filter(|(_, p)| !p.is_empty()).collect());
    if series.is_empty() {
        return String::new();
    }
    load_chart(title, "time since start (s)", y, &series).finish()
}

fn engine(w: &WindowRecord) -> Option<&EngineFigures> {
    w.engine.as_ref().map(|e| &e.figures)
}

fn gpus(w: &WindowRecord) -> Option<&GpuTelemetry> {
    w.gpu_telemetry.as_ref()
}

/// The engine's gauges and token rate and the GPUs' power and utilization per window, with
/// the client's own figure beside the engine's where both count the same thing.
fn timelines(file: &ResultsFile) -> String {
    let mut out = timeline_chart(
        "Engine: requests per window",
        "requests",
        vec![
            (
                "running (engine, avg)".into(),
                per_window(file, |w| Some(engine(w)?.running?.avg), "running"),
            ),
            (
                "waiting (engine, avg)".into(),
                per_window(file, |w| Some(engine(w)?.waiting?.avg), "waiting"),
            ),
        ],
    );
    out.push_str(&timeline_chart(
        "Engine: KV-cache usage per window",
        "%",
        vec![(
            "KV-cache usage (avg)".into(),
            per_window(file, |w| Some(engine(w)?.kv_usage?.avg * 100.0), "%"),
        )],
    ));
    out.push_str(&timeline_chart(
        "Generated tokens per second: engine and client",
        "tokens/s",
        vec![
            (
                "engine".into(),
                per_window(file, |w| engine(w)?.generation_tokens_per_s, "tokens/s"),
            ),
            (
                "client".into(),
                per_window(
                    file,
                    |w| {
                        engine(w)?;
                        let tokens = w.tokens.as_ref().filter(|t| t.generates())?;
                        Some(tokens.output_token_throughput)
                    },
                    "tokens/s",
                ),
            ),
        ],
    ));
    let uuids: Vec<String> = (file.levels.iter())
        .filter_map(|l| gpus(&l.merged))
        .flat_map(|t| t.gpus.iter().map(|g| g.uuid.clone()))
        .fold(Vec::new(), |mut all, u| {
            if !all.contains(&u) {
                all.push(u);
            }
            all
        });
    let gpu_series = |f: fn(&crate::measure::server::gpu_figures::GpuFigures) -> Option<f64>,
                      unit| {
        (uuids.iter())
            .map(|uuid| {
                let points = per_window(
                    file,
                    |w| f(gpus(w)?.gpus.iter().find(|g| &g.uuid == uuid)?),
                    unit,
                );
                (uuid.clone(), points)
            })
            .collect::<Vec<_>>()
    };
    out.push_str(&timeline_chart(
        "GPU power per window (avg)",
        "W",
        gpu_series(|g| Some(g.power_watts?.avg), "W"),
    ));
    out.push_str(&timeline_chart(
        "GPU utilization per window (avg)",
        "%",
        gpu_series(|g| Some(g.utilization?.avg), "%"),
    ));
    out
}

/// A level's output tokens per second per user: the mean over its requests.
fn per_user(l: &LevelRecord) -> Option<f64> {
    let d = &l.merged.tokens.as_ref()?.per_user_throughput;
    (d.count > 0).then(|| d.mean / 1e3)
}

/// The GPUs a level's telemetry counted (none without telemetry).
fn gpu_count(l: &LevelRecord) -> Option<f64> {
    let n = gpus(&l.merged)?.gpus.len();
    (n > 0).then_some(n as f64)
}

/// A run's Pareto points: per level, output tokens per second per user (x) against output
/// tokens per second (y), over the GPUs' count when `per_gpu`; tooltips start with
/// `prefix`.
pub fn pareto_points(file: &ResultsFile, per_gpu: bool, prefix: &str) -> Points {
    (file.levels.iter())
        .filter_map(|l| {
            let x = per_user(l)?;
            let tokens = l.merged.tokens.as_ref().filter(|t| t.generates())?;
            let all = tokens.output_token_throughput;
            let y = if per_gpu { all / gpu_count(l)? } else { all };
            let unit = if per_gpu {
                "tokens/s per GPU"
            } else {
                "tokens/s"
            };
            let tip = format!(
                "{prefix}{}: {} {unit} at {} tokens/s per user",
                load_name(l),
                num(y),
                num(x)
            );
            Some((x, y, tip))
        })
        .collect()
}

/// The chart's title and axes.
pub const PARETO_TITLE: &str = "Output tokens/s against tokens/s per user";
pub const PARETO_X: &str = "output tokens/s per user (mean)";
pub const PARETO_Y: &str = "output tokens/s";

/// The Pareto chart of a run with token figures (nothing for a tensor run).
pub fn pareto(file: &ResultsFile) -> String {
    let all = pareto_points(file, false, "");
    if all.is_empty() {
        return String::new();
    }
    let mut named = vec![("all GPUs".to_string(), all)];
    let per_gpu = pareto_points(file, true, "");
    if !per_gpu.is_empty() {
        named.push(("per GPU".to_string(), per_gpu));
    }
    let series = colored(named);
    load_chart(PARETO_TITLE, PARETO_X, PARETO_Y, &series).finish()
}
