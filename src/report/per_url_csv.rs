//! `--per-url-csv FILE`: with several `-u` servers, a row per level (or second of a
//! `--ramp` / `--load-steps` run) and URL — its throughput, p50 and p99 latency, requests
//! and errors — written at the end of the run. With one server, its one row per level is
//! the whole run's.

use std::path::{Path, PathBuf};

use crate::measure::level::LevelResult;
use crate::measure::timeline::Bucket;
use crate::measure::window::WindowStats;
use crate::results::Settings;
use inferperf_wire::error::RunResult;

use super::csv::{probe_flag, write_error};
use super::format::{format_throughput, level_name_value, mode_column, usec};
use super::{Entry, Measured, Reporter, Run};

/// The columns of `--per-url-csv`, after the level's (`Concurrency` or `Request Rate`).
pub const PER_URL_COLUMNS: [&str; 6] = [
    "URL",
    "Inferences/Second",
    "p50 latency",
    "p99 latency",
    "Requests",
    "Errors",
];

pub const REPORT: Entry = Entry {
    name: "per-URL CSV",
    is_on: |settings, _| settings.outputs.per_url_csv.is_some(),
    open,
};

fn open(settings: &Settings) -> RunResult<Box<dyn Reporter>> {
    let path = PathBuf::from(settings.outputs.per_url_csv.as_deref().unwrap_or_default());
    probe_flag("--per-url-csv", &path)?;
    Ok(Box::new(PerUrlCsv { path }))
}

struct PerUrlCsv {
    path: PathBuf,
}

impl Reporter for PerUrlCsv {
    fn finish(&mut self, run: &Run<'_>, measured: &Measured<'_>) -> RunResult<()> {
        let text = match measured {
            Measured::Levels(levels) if !levels.is_empty() => per_url_csv(run.settings(), levels),
            Measured::Timeline { buckets, .. } if !buckets.is_empty() => {
                per_url_timeline_csv(run.settings(), buckets)
            }
            _ => return Ok(()),
        };
        write_to(&self.path, &text).map_err(|e| write_error(&self.path, &e))
    }
}

/// The `--per-url-csv` text: a header, then a row per level and URL (levels in the order
/// they were measured, URLs in `-u` order). Latencies in µs, as the `-f` CSV.
pub fn per_url_csv(settings: &Settings, results: &[LevelResult]) -> String {
    let mut text = format!("{},{}\n", mode_column(results), PER_URL_COLUMNS.join(","));
    for r in results {
        let (_, level) = level_name_value(&r.level);
        for (url, cells) in url_rows(settings, &r.merged) {
            text.push_str(&format!("{level},{url},{}\n", cells.join(",")));
        }
    }
    text
}

/// The `--per-url-csv` text of a `--ramp` / `--load-steps` run: a row per second and URL,
/// in time order, the first column the bucket's start as in the time-series CSV.
pub fn per_url_timeline_csv(settings: &Settings, buckets: &[Bucket]) -> String {
    let mut text = format!("Time (s),{}\n", PER_URL_COLUMNS.join(","));
    for bucket in buckets {
        let start = bucket.start.as_secs_f64();
        for (url, cells) in url_rows(settings, &bucket.stats) {
            text.push_str(&format!("{start},{url},{}\n", cells.join(",")));
        }
    }
    text
}

/// Each server's cells of one merged window; with one server, its one row is the whole.
fn url_rows(settings: &Settings, w: &WindowStats) -> Vec<(String, Vec<String>)> {
    if w.replicas.is_empty() {
        let cells = cells(
            w.throughput(),
            w.percentile_us(50.0),
            w.percentile_us(99.0),
            w.completed(),
            w.error_count(),
        );
        return vec![(settings.url.clone(), cells)];
    }
    (w.replicas.iter().zip(settings.servers()))
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

fn write_to(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}
