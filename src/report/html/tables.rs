//! The settings of the run and the table of its levels (perf_analyzer's figures, errors,
//! stable or not and why).

use std::fmt::Write;

use super::svg::{esc, num};
use super::{load_name, ms, pct};
use crate::results::{LevelEndRecord, LevelRecord, LoadSettings, ResultsFile};

/// The run's settings as a two-column table.
pub fn settings(file: &ResultsFile) -> String {
    let s = &file.settings;
    let load = match &s.load {
        LoadSettings::Concurrency { start, end, step } => {
            format!("concurrency {start}:{end}:{step}")
        }
        LoadSettings::RequestRate {
            start,
            end,
            step,
            distribution,
            ..
        } => {
            format!("request rate {start}:{end}:{step} ({distribution})")
        }
        LoadSettings::Intervals { count, rate } => {
            format!("{count} request intervals ({} infer/s)", num(*rate))
        }
        LoadSettings::FixedSchedule => "fixed schedule".to_string(),
        LoadSettings::Periodic {
            start,
            end,
            step,
            request_period,
        } => {
            format!("periodic concurrency {start}:{end}:{step}, request period {request_period}")
        }
        LoadSettings::Timeline {
            kind,
            distribution,
            segments,
            ..
        } => {
            format!("{kind} ({distribution}), {} segment(s)", segments.len())
        }
    };
    let window = if s.measurement_mode == "count_windows" {
        format!("{} requests", s.measurement_request_count)
    } else {
        format!("{} ms", s.measurement_interval_ms)
    };
    let mut rows: Vec<(&str, String)> = vec![
        (
            "Model",
            format!(
                "{} (version {})",
                s.model_name,
                if s.model_version.is_empty() {
                    "latest"
                } else {
                    &s.model_version
                }
            ),
        ),
        (
            "Server",
            format!("{} · {} · {}", s.url, s.service_kind, s.protocol),
        ),
        ("Load", load),
        ("Batch size", s.batch_size.to_string()),
        (
            "Measurement",
            format!(
                "{}, {window}, stability ±{}%, at most {} trials",
                s.measurement_mode, s.stability_percentage, s.max_trials
            ),
        ),
        (
            "Stabilizing on",
            s.percentile
                .map_or("throughput and average latency".into(), |p| {
                    format!("p{p} latency")
                }),
        ),
        (
            "Started",
            format!(
                "{} for {}",
                file.started_at,
                file.duration_s.map_or("–".into(), |d| format!(
                    "{} s",
                    inferperf_wire::number::fixed(d, 1)
                ))
            ),
        ),
        (
            "Client host",
            format!("{} cores, {}", file.host.cores, file.host.os),
        ),
        ("Tool", format!("{} {}", file.tool.name, file.tool.version)),
    ];
    if let Some(t) = s.latency_threshold_ms {
        rows.push(("Latency limit", format!("{t} ms")));
    }
    if !s.slo.is_empty() {
        rows.push(("SLO", s.slo.join(", ")));
    }
    if !s.goodput.is_empty() {
        rows.push(("Goodput limits (ms)", s.goodput.join(" ")));
    }
    if let Some(m) = &file.model {
        rows.push((
            "Platform",
            format!(
                "{} · scheduler {}{}",
                m.platform,
                m.scheduler,
                if m.decoupled { " · decoupled" } else { "" }
            ),
        ));
    }
    if let Some(llm) = &s.llm {
        rows.push((
            "LLM",
            format!(
                "{} · input tokens {} · output tokens {}",
                llm.endpoint,
                llm.input_tokens_mean,
                llm.output_tokens_mean.map_or("–".into(), |n| n.to_string())
            ),
        ));
    }
    let state = if file.error.is_some() {
        "<span class=\"bad\">ended on an error (below)</span>".to_string()
    } else if file.interrupted {
        "<span class=\"bad\">interrupted</span>".to_string()
    } else if !file.finished {
        "running (the page is rewritten as the run goes)".to_string()
    } else {
        "<span class=\"ok\">finished</span>".to_string()
    };
    let mut out = String::from("<h2>Settings</h2><table>");
    for (k, v) in rows {
        let _ = write!(
            out,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            esc(k),
            esc(&v)
        );
    }
    let _ = write!(
        out,
        "<tr><th class=\"l\">Run</th><td class=\"l\">{state}</td></tr>"
    );
    if let Some(e) = &file.error {
        let _ = write!(
            out,
            "<tr><th class=\"l\">Error</th><td class=\"l bad\">{}</td></tr>",
            esc(e)
        );
    }
    out.push_str("</table>");
    out
}

/// The Stable cell: yes or no, and how the level ended when that was not by the stability
/// rule, in the console summary's words ("no (unstable)").
fn stable_cell(level: &LevelRecord) -> String {
    let mark = match level.end {
        LevelEndRecord::Stable | LevelEndRecord::SingleWindow => "",
        LevelEndRecord::Unstable => " (unstable)",
        LevelEndRecord::OverLatencyLimit => " (over latency limit)",
        LevelEndRecord::MissedSlo => " (missed SLO)",
        LevelEndRecord::Interrupted => " (interrupted)",
    };
    format!("{}{mark}", if level.stable { "yes" } else { "no" })
}

/// A row per level: throughput, the latency percentiles, average, errors, stable or not.
pub fn levels(file: &ResultsFile) -> String {
    let extra = file
        .settings
        .percentile
        .filter(|p| ![50.0, 90.0, 95.0, 99.0].contains(p));
    let mut out = String::from("<table><tr><th class=\"l\">Load</th><th>Throughput (infer/s)</th><th>p50 ms</th><th>p90 ms</th><th>p95 ms</th><th>p99 ms</th>");
    if let Some(p) = extra {
        let _ = write!(out, "<th>p{p} ms</th>");
    }
    out.push_str("<th>Avg ms</th><th>Requests</th><th>Errors</th><th>Windows</th><th class=\"l\">Stable</th><th class=\"l\">Why</th></tr>");
    for (i, level) in file.levels.iter().enumerate() {
        let m = &level.merged;
        let cell = |p: f64| {
            pct(&m.latency, p).map_or("–".into(), |v| inferperf_wire::number::fixed(ms(v), 3))
        };
        let knee = if file.knee == Some(i) {
            " ◆ knee"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}{knee}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&load_name(level)),
            inferperf_wire::number::fixed(m.throughput, 1),
            cell(50.0),
            cell(90.0),
            cell(95.0),
            cell(99.0)
        );
        if let Some(p) = extra {
            let _ = write!(out, "<td>{}</td>", cell(p));
        }
        let mut errors: Vec<String> = m
            .errors
            .iter()
            .map(|e| format!("{} {}", e.count, e.kind))
            .collect();
        if m.cancelled > 0 {
            errors.push(format!("{} cancelled", m.cancelled));
        }
        let _ = write!(
            out,
            "<td>{}</td><td>{}</td><td{}>{}</td><td>{}/{}</td><td class=\"l {}\">{}</td><td class=\"l\">{}</td></tr>",
            inferperf_wire::number::fixed(ms(m.latency.mean), 3),
            m.completed,
            if m.failed > 0 { " class=\"bad\"" } else { "" },
            if errors.is_empty() { "0".to_string() } else { esc(&errors.join(", ")) },
            level.merged_windows.len(),
            level.windows.len(),
            if level.stable { "ok" } else { "bad" },
            stable_cell(level),
            esc(&level.why)
        );
    }
    out.push_str("</table>");
    out
}
