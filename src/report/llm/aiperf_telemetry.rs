//! What AIPerf writes beside its metrics when it scrapes the server and the GPUs, from a
//! level's merged windows: the power-efficiency metrics of `profile_export_aiperf.json` and
//! `.csv` (total energy, average power, output tokens per joule, energy per output token),
//! the JSON's `telemetry_data` (per GPU: power, energy, utilization, memory), and
//! `server_metrics_export.json` / `.csv` with the engine's series under the engine's own
//! names (gauges' mean and maximum, counters' total and rate, histograms' count, bucket
//! deltas and percentile estimates).

use super::json::{object, Json};
use crate::measure::server::engine_figures::EngineFigures;
use crate::measure::server::engine_metrics::{Engine, Role, ROLES};
use crate::measure::server::gpu_figures::GpuTelemetry;
use crate::measure::server::metrics::{MetricsWindow, SeriesStats};
use crate::measure::window::WindowStats;
use crate::results::Settings;

/// AIPerf's `(tag, header, unit, value)` power-efficiency metrics of a level (none without
/// GPU energy).
pub fn power_metrics(w: &WindowStats) -> Vec<(&'static str, &'static str, &'static str, f64)> {
    let Some(t) = telemetry(w) else {
        return Vec::new();
    };
    let Some(joules) = t.energy_joules.filter(|&j| j > 0.0) else {
        return Vec::new();
    };
    let secs = w.duration.as_secs_f64();
    let watts: f64 = t
        .gpus
        .iter()
        .filter_map(|g| g.power_watts.map(|p| p.avg))
        .sum();
    let mut all = vec![("nvidia_total_gpu_energy", "Total GPU Energy", "J", joules)];
    if secs > 0.0 {
        let average = joules / secs;
        all.push((
            "nvidia_average_gpu_power",
            "Average GPU Power",
            "W",
            average,
        ));
    }
    all.push(("nvidia_total_gpu_power", "Total GPU Power", "W", watts));
    let tokens = w.output_token_count();
    if tokens > 0.0 {
        let per_token = joules * 1e3 / tokens;
        all.push((
            "nvidia_energy_per_output_token",
            "Energy per Output Token",
            "mJ/token",
            per_token,
        ));
        let per_joule = tokens / joules;
        all.push((
            "nvidia_output_tokens_per_joule",
            "Output Tokens per Joule",
            "tokens/J",
            per_joule,
        ));
    }
    all
}

fn telemetry(w: &WindowStats) -> Option<GpuTelemetry> {
    GpuTelemetry::of(w.metrics.as_ref()?, w.output_token_count())
}

/// The `telemetry_data` object of `profile_export_aiperf.json`: the GPUs by index under
/// the exporter's address (`nvml` for NVML), each with its metrics' statistics.
pub fn telemetry_data(settings: &Settings, w: &WindowStats) -> Option<Json> {
    let t = telemetry(w)?;
    let endpoint = endpoint_display(settings.gpu_telemetry.as_deref().unwrap_or("nvml"));
    let stat = |unit: &str, pairs: Vec<(&str, f64)>| {
        let mut all = vec![("unit", Json::from(unit))];
        all.extend(pairs.into_iter().map(|(k, v)| (k, Json::from(v))));
        object(all)
    };
    let gpus = (t.gpus.iter().enumerate()).map(|(index, gpu)| {
        let mut metrics = Vec::new();
        if let Some(p) = gpu.power_watts {
            metrics.push((
                "nvidia_power_usage",
                stat("W", vec![("avg", p.avg), ("max", p.max)]),
            ));
        }
        if let Some(j) = gpu.energy_joules {
            metrics.push((
                "nvidia_energy_consumption",
                stat("MJ", vec![("avg", j / 1e6)]),
            ));
        }
        if let Some(u) = gpu.utilization {
            let pairs = vec![("avg", u.avg), ("max", u.max)];
            metrics.push(("nvidia_gpu_utilization", stat("%", pairs)));
        }
        if let Some(mib) = gpu.memory_used_mib {
            let gb = mib * 1_048_576.0 / 1e9;
            metrics.push(("nvidia_memory_used", stat("GB", vec![("max", gb)])));
        }
        let summary = object([
            ("gpu_index", Json::from(index as u64)),
            ("gpu_name", Json::Null),
            ("gpu_uuid", Json::from(gpu.uuid.as_str())),
            ("platform", Json::from("nvidia")),
            ("hostname", Json::Null),
            ("metrics", object(metrics)),
        ]);
        (format!("gpu_{index}"), summary)
    });
    let endpoints = object([(endpoint.clone(), object([("gpus", object(gpus))]))]);
    Some(object([
        (
            "summary",
            object([
                (
                    "endpoints_configured",
                    Json::Array(vec![Json::from(endpoint.as_str())]),
                ),
                (
                    "endpoints_successful",
                    Json::Array(vec![Json::from(endpoint.as_str())]),
                ),
            ]),
        ),
        ("endpoints", endpoints),
    ]))
}

/// An address as AIPerf shows it: no scheme, no trailing `/metrics`.
fn endpoint_display(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.strip_suffix("/metrics").unwrap_or(rest).to_string()
}

/// One engine series as AIPerf exports it: its name, type and statistics.
struct ServerSeries {
    name: String,
    kind: &'static str,
    unit: Option<&'static str>,
    stats: Vec<(String, f64)>,
    buckets: Vec<(String, f64)>,
}

/// The engine's series of a level by their names on the engine's page.
fn server_series(m: &MetricsWindow) -> Vec<ServerSeries> {
    let engine = m.engine;
    let Some(figures) = EngineFigures::of(m) else {
        return Vec::new();
    };
    let name = |role: Role| {
        let family = engine.and_then(|e: Engine| e.family(role));
        family.map_or_else(|| role.key().to_string(), str::to_string)
    };
    let mut all = Vec::new();
    for role in ROLES {
        let series = |key: &str| m.series.get(key);
        if role.is_histogram() {
            let Some(h) = [figures.ttft, figures.itl, figures.e2e][histogram_index(role)] else {
                continue;
            };
            let prefix = format!("{}|", role.key());
            let buckets = (m.series.iter())
                .filter_map(|(k, s)| Some((k.strip_prefix(&prefix)?.to_string(), s.increase)))
                .collect();
            let stats = [
                ("count", h.count),
                ("p50_estimate", h.p50_ms / 1e3),
                ("p90_estimate", h.p90_ms / 1e3),
                ("p99_estimate", h.p99_ms / 1e3),
            ];
            all.push(ServerSeries {
                name: name(role),
                kind: "histogram",
                unit: Some("seconds"),
                stats: stats.map(|(k, v)| (k.to_string(), v)).to_vec(),
                buckets,
            });
            continue;
        }
        let Some(s) = series(role.key()).filter(|s: &&SeriesStats| s.count > 0) else {
            continue;
        };
        let (kind, stats) = if role.is_counter() {
            let rate = if s.seconds > 0.0 {
                s.increase / s.seconds
            } else {
                0.0
            };
            (
                "counter",
                vec![("total".into(), s.increase), ("rate".into(), rate)],
            )
        } else {
            let avg = s.sum / s.count as f64;
            ("gauge", vec![("avg".into(), avg), ("max".into(), s.max)])
        };
        all.push(ServerSeries {
            name: name(role),
            kind,
            unit: None,
            stats,
            buckets: Vec::new(),
        });
    }
    all
}

fn histogram_index(role: Role) -> usize {
    match role {
        Role::Ttft => 0,
        Role::Itl => 1,
        _ => 2,
    }
}

/// `server_metrics_export.json` (none without the engine's series).
pub fn server_metrics_json(settings: &Settings, w: &WindowStats) -> Option<Json> {
    let m = w.metrics.as_ref()?;
    let all = server_series(m);
    if all.is_empty() {
        return None;
    }
    let url = settings.metrics.as_ref().map_or("", |m| m.url.as_str());
    let endpoint = endpoint_display(url);
    let metrics = all.into_iter().map(|s| {
        let stats = object(s.stats.into_iter().map(|(k, v)| (k, Json::from(v))));
        let mut series = vec![
            ("endpoint_url", Json::from(endpoint.as_str())),
            ("labels", Json::Null),
            ("stats", stats),
        ];
        if s.kind == "histogram" {
            let buckets = s.buckets.into_iter().map(|(le, n)| (le, Json::from(n)));
            series.push(("buckets", object(buckets)));
        }
        let metric = object([
            ("type", Json::from(s.kind)),
            ("description", Json::from("")),
            ("unit", s.unit.map_or(Json::Null, Json::from)),
            ("series", Json::Array(vec![object(series)])),
        ]);
        (s.name, metric)
    });
    let configured = Json::Array(vec![Json::from(endpoint.as_str())]);
    let successful = match m.scrapes {
        0 => Json::Array(Vec::new()),
        _ => configured.clone(),
    };
    Some(object([
        ("schema_version", Json::from("1.1")),
        (
            "summary",
            object([
                ("endpoints_configured", configured),
                ("endpoints_successful", successful),
            ]),
        ),
        ("metrics_phase", Json::from("profiling")),
        ("metrics", object(metrics)),
    ]))
}

/// `server_metrics_export.csv`: a block per metric type, each with its statistics.
pub fn server_metrics_csv(settings: &Settings, w: &WindowStats) -> Option<String> {
    let all = server_series(w.metrics.as_ref()?);
    if all.is_empty() {
        return None;
    }
    let url = settings.metrics.as_ref().map_or("", |m| m.url.as_str());
    let endpoint = endpoint_display(url);
    let mut blocks = Vec::new();
    for kind in ["gauge", "counter", "histogram"] {
        let rows: Vec<&ServerSeries> = all.iter().filter(|s| s.kind == kind).collect();
        let Some(first) = rows.first() else {
            continue;
        };
        let keys: Vec<&str> = first.stats.iter().map(|(k, _)| k.as_str()).collect();
        let mut block = format!("Endpoint,Type,Metric,Unit,{},Description\n", keys.join(","));
        for s in rows {
            let values: Vec<String> = s.stats.iter().map(|(_, v)| format!("{v:.6}")).collect();
            block.push_str(&format!(
                "{endpoint},{kind},{},{},{},\n",
                s.name,
                s.unit.unwrap_or(""),
                values.join(",")
            ));
        }
        blocks.push(block);
    }
    Some(blocks.join("\n"))
}
