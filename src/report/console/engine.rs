//! The serving engine's own account of a level (`--server-metrics`), under the level's
//! client figures: what it was running and queueing, its KV cache and prefix cache, its
//! token rates and its latency percentiles — and whether its counts of requests and tokens
//! agree with the client's (a warning past 1%: another client, or requests the engine
//! counted in another window, or figures one side gets wrong).

use crate::measure::server::engine_figures::{
    count_checks, EngineFigures, GaugeFigures, HistogramFigures,
};
use crate::measure::server::metrics::MetricsWindow;
use crate::measure::window::WindowStats;
use crate::report::server_figures::disagreement;

/// The console lines of the engine's figures of a level (none when it has none).
pub fn engine_lines(metrics: &MetricsWindow, client: &WindowStats) -> Vec<String> {
    let Some(f) = EngineFigures::of(metrics) else {
        return Vec::new();
    };
    let mut lines = vec!["  Engine (its own metrics): ".to_string()];
    let gauges = [
        ("Requests running", f.running, 1.0, ""),
        ("Requests waiting", f.waiting, 1.0, ""),
        ("KV-cache usage", f.kv_usage, 100.0, "%"),
    ];
    for (title, gauge, scale, unit) in gauges {
        if let Some(GaugeFigures { avg, max }) = gauge {
            lines.push(format!(
                "    {title}: avg {:.2}{unit}, max {:.2}{unit}",
                avg * scale,
                max * scale
            ));
        }
    }
    if let Some(rate) = f.prefix_hit_rate {
        lines.push(format!("    Prefix-cache hit rate: {:.1}%", rate * 100.0));
    }
    if let Some(n) = f.preemptions {
        lines.push(format!("    Preemptions: {n:.0}"));
    }
    for (title, rate) in [
        ("Prompt tokens", f.prompt_tokens_per_s),
        ("Generation tokens", f.generation_tokens_per_s),
    ] {
        if let Some(rate) = rate {
            lines.push(format!(
                "    {title}: {rate:.1}/s as the engine counted them"
            ));
        }
    }
    for (title, h) in [
        ("TTFT", f.ttft),
        ("Inter-token latency", f.itl),
        ("Request latency", f.e2e),
    ] {
        if let Some(HistogramFigures {
            p50_ms,
            p90_ms,
            p99_ms,
            ..
        }) = h
        {
            lines.push(format!(
                "    {title} (its histogram, placed within each bucket): p50 {p50_ms:.2} ms, p90 {p90_ms:.2} ms, p99 {p99_ms:.2} ms"
            ));
        }
    }
    lines.extend(agreement_lines(&f, client));
    lines
}

/// The counts the engine and the client both keep, side by side, then a warning for each
/// they disagree on beyond what the requests in flight account for.
fn agreement_lines(f: &EngineFigures, client: &WindowStats) -> Vec<String> {
    let checks = count_checks(f, client);
    if checks.is_empty() {
        return Vec::new();
    }
    let counts: Vec<String> = (checks.iter())
        .map(|c| format!("{:.0} {} (client {:.0})", c.engine, c.what, c.client))
        .collect();
    let mut lines = vec![format!("    Counted by the engine: {}", counts.join(", "))];
    lines.extend(
        (checks.iter().filter(|c| c.disagrees()))
            .map(|c| format!("    [WARNING] {}", disagreement(c))),
    );
    lines
}
