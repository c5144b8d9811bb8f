//! What the reports say about each `-u` server when a run spreads its load over several:
//! a line per URL under each level's client figures (and under each second of a `--ramp` /
//! `--load-steps` run, with the server's requests, and under its totals), a settings line
//! naming the servers, and the `--per-url-csv` file with a row per level (or
//! second of a timeline) and URL. With one server nothing here
//! prints a line, so a single-server report is what it always was.

use std::path::Path;

use crate::config::Config;
use crate::measure::level::LevelResult;
use crate::measure::timeline::Bucket;
use crate::measure::window::WindowStats;

use super::format::{format_throughput, level_name_value, mode_column, usec};

/// The columns of `--per-url-csv`, after the level's (`Concurrency` or `Request Rate`).
pub const PER_URL_COLUMNS: [&str; 6] = [
    "URL",
    "Inferences/Second",
    "p50 latency",
    "p99 latency",
    "Requests",
    "Errors",
];

/// The settings line naming the servers, when there are several.
pub fn settings_line(cfg: &Config) -> Option<String> {
    (cfg.urls.len() > 1).then(|| {
        format!(
            "  Servers: {} (load spread round-robin; server statistics and metrics from {})",
            cfg.urls.join(", "),
            cfg.url
        )
    })
}

/// Under the server's figures, with several servers: whose they are.
pub fn first_server_note(cfg: &Config) -> Option<String> {
    (cfg.urls.len() > 1).then(|| {
        format!(
            "    (server figures of {} only, the first -u; the client figures are every server's)",
            cfg.url
        )
    })
}

/// `    URL host:port: throughput 98.5 infer/sec, p50 2034 usec, p99 2210 usec, errors 0`,
/// one per server of the window (none with one server).
pub fn replica_lines(cfg: &Config, w: &WindowStats) -> Vec<String> {
    (w.replicas.iter().zip(&cfg.urls))
        .map(|(r, url)| {
            format!(
                "    URL {url}: throughput {} infer/sec, p50 {} usec, p99 {} usec, errors {}",
                format_throughput(w.replica_throughput(r)),
                usec(r.percentile_us(50.0)),
                usec(r.percentile_us(99.0)),
                r.failed
            )
        })
        .collect()
}

/// Under a timeline's second, with several servers: each server's share of it, as
/// [`replica_lines`] and indented under the table's row, with the requests it answered (or
/// failed) in that second, so that the servers' shares add up to the second's.
pub fn bucket_replica_lines(cfg: &Config, w: &WindowStats) -> Vec<String> {
    (replica_lines(cfg, w).into_iter().zip(&w.replicas))
        .map(|(line, r)| format!("  {line}, requests {}", r.completed()))
        .collect()
}

/// The `--per-url-csv` text: a header, then a row per level and URL (levels in the order
/// they were measured, URLs in `-u` order). Latencies in µs, as the `-f` CSV.
pub fn per_url_csv(cfg: &Config, results: &[LevelResult]) -> String {
    let mut text = format!("{},{}\n", mode_column(results), PER_URL_COLUMNS.join(","));
    for r in results {
        let (_, level) = level_name_value(&r.level);
        for (url, cells) in url_rows(cfg, &r.merged) {
            text.push_str(&format!("{level},{url},{}\n", cells.join(",")));
        }
    }
    text
}

/// The `--per-url-csv` text of a `--ramp` / `--load-steps` run: a row per second and URL,
/// in time order, the first column the bucket's start as in the time-series CSV.
pub fn per_url_timeline_csv(cfg: &Config, buckets: &[Bucket]) -> String {
    let mut text = format!("Time (s),{}\n", PER_URL_COLUMNS.join(","));
    for bucket in buckets {
        let start = bucket.start.as_secs_f64();
        for (url, cells) in url_rows(cfg, &bucket.stats) {
            text.push_str(&format!("{start},{url},{}\n", cells.join(",")));
        }
    }
    text
}

/// Each server's cells of one merged window; with one server, its one row is the whole.
fn url_rows(cfg: &Config, w: &WindowStats) -> Vec<(String, Vec<String>)> {
    if w.replicas.is_empty() {
        let cells = cells(
            w.throughput(),
            w.percentile_us(50.0),
            w.percentile_us(99.0),
            w.completed(),
            w.error_count(),
        );
        return vec![(cfg.url.clone(), cells)];
    }
    (w.replicas.iter().zip(&cfg.urls))
        .map(|(r, url)| {
            let cells = cells(
                w.replica_throughput(r),
                r.percentile_us(50.0),
                r.percentile_us(99.0),
                r.completed(),
                r.failed,
            );
            (url.clone(), cells)
        })
        .collect()
}

fn cells(throughput: f64, p50_us: f64, p99_us: f64, requests: u64, errors: u64) -> Vec<String> {
    vec![
        format_throughput(throughput),
        usec(p50_us).to_string(),
        usec(p99_us).to_string(),
        requests.to_string(),
        errors.to_string(),
    ]
}

/// Writes `--per-url-csv`, when asked for.
pub fn write_per_url_csv(cfg: &Config, results: &[LevelResult]) -> std::io::Result<()> {
    match &cfg.per_url_csv {
        Some(path) => write_to(path, &per_url_csv(cfg, results)),
        None => Ok(()),
    }
}

/// Writes the `--per-url-csv` of a timeline run, when asked for.
pub fn write_per_url_timeline_csv(cfg: &Config, buckets: &[Bucket]) -> std::io::Result<()> {
    match &cfg.per_url_csv {
        Some(path) => write_to(path, &per_url_timeline_csv(cfg, buckets)),
        None => Ok(()),
    }
}

fn write_to(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}
