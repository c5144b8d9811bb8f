//! A level's engine figures (`--server-metrics`) from its merged metrics window: gauges'
//! mean and maximum, counters' increase and rate, the prefix-cache hit rate, and the
//! percentiles of the engine's histograms from the increase of each bucket over the level.

use serde::{Deserialize, Serialize};

use super::engine_metrics::Role;
use super::metrics::{MetricsWindow, SeriesStats};
use crate::measure::window::WindowStats;

/// How far the engine's and the client's counts may differ before a warning.
pub const AGREEMENT: f64 = 0.01;

/// A gauge over a level: its mean and its highest reading.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct GaugeFigures {
    pub avg: f64,
    pub max: f64,
}

/// Percentiles of an engine histogram over a level, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct HistogramFigures {
    pub count: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
}

/// What the engine did over a level, as its own metrics say.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EngineFigures {
    /// The engine whose metrics these are (`vllm`, `sglang`, `tgi`, `llamacpp`, `triton`,
    /// `trtllm`), as recognised or named with `--server-metrics-preset`.
    pub engine: Option<String>,
    pub running: Option<GaugeFigures>,
    pub waiting: Option<GaugeFigures>,
    /// KV-cache usage, 0 to 1.
    pub kv_usage: Option<GaugeFigures>,
    /// Prefix-cache hits over lookups, 0 to 1.
    pub prefix_hit_rate: Option<f64>,
    pub preemptions: Option<f64>,
    pub prompt_tokens: Option<f64>,
    pub generation_tokens: Option<f64>,
    pub prompt_tokens_per_s: Option<f64>,
    pub generation_tokens_per_s: Option<f64>,
    /// Requests the engine finished (aborted ones left out).
    pub requests: Option<f64>,
    pub ttft: Option<HistogramFigures>,
    pub itl: Option<HistogramFigures>,
    pub e2e: Option<HistogramFigures>,
}

impl EngineFigures {
    /// The engine's figures of a window (or merged windows); `None` when it tracked none.
    pub fn of(window: &MetricsWindow) -> Option<EngineFigures> {
        if !window.series.keys().any(|k| k.starts_with("engine:")) {
            return None;
        }
        let series = |role: Role| window.series.get(role.key());
        let gauge = |role: Role| {
            series(role).filter(|s| s.count > 0).map(|s| GaugeFigures {
                avg: s.sum / s.count as f64,
                max: s.max,
            })
        };
        let increase = |role: Role| series(role).filter(|s| s.seconds > 0.0).map(|s| s.increase);
        let rate = |role: Role| {
            series(role)
                .filter(|s| s.seconds > 0.0)
                .map(|s| s.increase / s.seconds)
        };
        let hit_rate = match (increase(Role::CacheHits), increase(Role::CacheQueries)) {
            (Some(hits), Some(queries)) if queries > 0.0 => Some(hits / queries),
            _ => None,
        };
        Some(EngineFigures {
            engine: window.engine.map(|e| e.name().to_string()),
            running: gauge(Role::Running),
            waiting: gauge(Role::Waiting),
            kv_usage: gauge(Role::KvUsage),
            prefix_hit_rate: hit_rate,
            preemptions: increase(Role::Preemptions),
            prompt_tokens: increase(Role::PromptTokens),
            generation_tokens: increase(Role::GenerationTokens),
            prompt_tokens_per_s: rate(Role::PromptTokens),
            generation_tokens_per_s: rate(Role::GenerationTokens),
            requests: increase(Role::Requests),
            ttft: histogram(window, Role::Ttft),
            itl: histogram(window, Role::Itl),
            e2e: histogram(window, Role::E2e),
        })
    }
}

/// A count both the engine and the client keep over a level, and each one's figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountCheck {
    /// What is counted: `requests`, `prompt tokens` or `generation tokens`.
    pub what: String,
    pub engine: f64,
    pub client: f64,
    /// How far apart the requests in flight at the level's two ends can put the two: the
    /// engine counts a token when it makes it, the client when its request ends, so a
    /// request under way at the start or the end is on one side only; and so is what ended
    /// while a boundary's page was being read.
    #[serde(default)]
    pub in_flight: f64,
}

impl CountCheck {
    /// The engine's count less the client's, as a share of the client's.
    pub fn off(&self) -> f64 {
        (self.engine - self.client) / self.client.max(1.0)
    }

    /// Whether the two differ by more than [`AGREEMENT`] beyond what the requests in
    /// flight at the ends account for.
    pub fn disagrees(&self) -> bool {
        (self.engine - self.client).abs() > AGREEMENT * self.client.max(1.0) + self.in_flight
    }
}

/// The counts the engine and the client both kept over a level (the client's input tokens
/// are the server's usage figures where it gave them, else the client's own count). A
/// token count may differ by the most requests the engine held at once (running and
/// waiting) times the client's mean count per request; a request is counted by both when
/// it ends. Either may also differ by what the client counts in the time the engine's page
/// was read after a window's boundary.
pub fn count_checks(f: &EngineFigures, client: &WindowStats) -> Vec<CountCheck> {
    let tokens = client.tokens.as_ref();
    let client_input = tokens.map(|t| match t.usage_input_tokens.count() {
        0 => t.input_tokens.sum() as f64,
        _ => t.usage_input_tokens.sum() as f64,
    });
    let held = [f.running, f.waiting]
        .iter()
        .flatten()
        .map(|g| g.max)
        .sum::<f64>();
    let per_request = |count: f64| held * count / (client.ok.max(1) as f64);
    // What ended while a boundary's page was being read is on one side only as well.
    let read_late_s = client.metrics.as_ref().map_or(0.0, |m| m.read_late_s);
    let seconds = client.duration.as_secs_f64();
    let while_read = |count: f64| match seconds > 0.0 {
        true => count / seconds * read_late_s,
        false => 0.0,
    };
    let counts = [
        ("requests", f.requests, Some(client.ok as f64), false),
        ("prompt tokens", f.prompt_tokens, client_input, true),
        (
            "generation tokens",
            f.generation_tokens,
            tokens.map(|t| t.output_tokens.sum() as f64),
            true,
        ),
    ];
    (counts.into_iter())
        .filter_map(|(what, engine, client, per_token)| {
            let client = client?;
            Some(CountCheck {
                what: what.to_string(),
                engine: engine?,
                client,
                in_flight: while_read(client) + if per_token { per_request(client) } else { 0.0 },
            })
        })
        .collect()
}

/// A histogram's percentiles from its buckets' increases over the window, each placed by
/// linear interpolation within its bucket (as Prometheus' `histogram_quantile`); a rank in
/// the `+Inf` bucket is given the highest finite bound.
fn histogram(window: &MetricsWindow, role: Role) -> Option<HistogramFigures> {
    let prefix = format!("{}|", role.key());
    let mut buckets: Vec<(f64, f64)> = (window.series.iter())
        .filter_map(|(key, s): (&String, &SeriesStats)| {
            let le = key.strip_prefix(&prefix)?;
            let bound = match le {
                "+Inf" => f64::INFINITY,
                _ => le.parse().ok()?,
            };
            Some((bound, s.increase))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let at = |p: f64| percentile_ms(&buckets, total * p / 100.0);
    Some(HistogramFigures {
        count: total,
        p50_ms: at(50.0),
        p90_ms: at(90.0),
        p99_ms: at(99.0),
    })
}

/// The value at `rank` of cumulative buckets (bound in seconds, count up to it), in ms.
fn percentile_ms(buckets: &[(f64, f64)], rank: f64) -> f64 {
    let mut lower = (0.0, 0.0);
    for &(bound, cumulative) in buckets {
        if cumulative >= rank {
            if bound.is_infinite() {
                return lower.0 * 1e3;
            }
            let inside = cumulative - lower.1;
            let share = if inside > 0.0 {
                (rank - lower.1) / inside
            } else {
                1.0
            };
            return (lower.0 + (bound - lower.0) * share) * 1e3;
        }
        lower = (bound, cumulative);
    }
    lower.0 * 1e3
}

#[cfg(test)]
#[path = "engine_figures_tests.rs"]
mod tests;
