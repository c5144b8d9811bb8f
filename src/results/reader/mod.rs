//! Reading a results file back: the reports built on it (the HTML page, `compare`) read
//! through here, never by hand. A file that is not JSON, not inferperf's, of another
//! `schema_version`, or whose histograms do not decode is refused with one sentence naming
//! it (exit 3, as any bad input file). Distributions come back as [`Distribution`]s that
//! answer any percentile and merge without loss.
//!
//! Its [`settings`] module reads the recorded settings back as the values reports need.

pub(crate) mod settings;

use std::path::{Path, PathBuf};

use super::schema::*;
use crate::config::RESULTS_FILE_NAME;
use crate::measure::distribution::{Distribution, Exact};
use inferperf_wire::error::{RunError, RunResult};

/// Reads a results file: `results.json` itself, or a `--report-dir` folder holding one.
pub fn read(path: impl AsRef<Path>) -> RunResult<ResultsFile> {
    let given = path.as_ref();
    let path: PathBuf = if given.is_dir() {
        given.join(RESULTS_FILE_NAME)
    } else {
        given.to_path_buf()
    };
    let shown = path.display();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        RunError::bad_option(match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "No results file at {shown}: give a results.json or a --report-dir folder that holds one."
            ),
            _ => format!("Cannot read the results file {shown}: {e}."),
        })
    })?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        RunError::bad_option(format!(
            "{shown} is not a results file: it is not JSON ({e})."
        ))
    })?;
    match value.get("schema_version").map(serde_json::Value::as_u64) {
        Some(Some(v)) if v == SCHEMA_VERSION as u64 => {}
        Some(Some(v)) => {
            let writer = value
                .pointer("/tool/version")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("unknown");
            return Err(RunError::bad_option(format!(
                "{shown} has schema_version {v} (written by inferperf {writer}); this inferperf {} reads version {SCHEMA_VERSION}: read it with an inferperf that knows version {v}.",
                env!("CARGO_PKG_VERSION")
            )));
        }
        _ => {
            return Err(RunError::bad_option(format!(
                "{shown} is not an inferperf results file: it has no schema_version."
            )))
        }
    }
    let file: ResultsFile = serde_json::from_str(&text)
        .map_err(|e| RunError::bad_option(format!("{shown} is not a valid results file: {e}.")))?;
    check_histograms(&file)
        .and_then(|_| check_times(&file))
        .map_err(|why| {
            RunError::bad_option(format!("{shown} is not a valid results file: {why}."))
        })?;
    Ok(file)
}

/// Every histogram of the file decodes and agrees with its count.
fn check_histograms(file: &ResultsFile) -> Result<(), String> {
    let check = |place: String, w: &WindowRecord| -> Result<(), String> {
        for (name, d) in w.distributions() {
            if d.histogram.is_some() {
                d.rebuild()
                    .map_err(|why| format!("{place}, {name}: {why}"))?;
            }
        }
        Ok(())
    };
    for (l, level) in file.levels.iter().enumerate() {
        for (i, w) in level.windows.iter().enumerate() {
            check(format!("level {}, window {}", l + 1, i + 1), w)?;
        }
        check(format!("level {}, merged", l + 1), &level.merged)?;
    }
    if let Some(timeline) = &file.timeline {
        for (i, bucket) in timeline.buckets.iter().enumerate() {
            check(format!("timeline bucket {}", i + 1), &bucket.window)?;
        }
        if let Some(total) = &timeline.total {
            check("timeline total".to_string(), total)?;
        }
    }
    Ok(())
}

/// The longest time a results file may hold, in seconds: about 31 years. A time past it
/// (or below zero, or not a number) cannot have been measured and would overflow a clock.
const MAX_RECORD_S: f64 = 1e9;

/// Every time of the file (offsets, durations, CPU time, the clock offset) is one a run can
/// have measured.
fn check_times(file: &ResultsFile) -> Result<(), String> {
    let within = |place: &str, name: &str, secs: f64, min: f64| {
        inferperf_wire::number::within(
            &format!("{place}, {name}"),
            secs,
            min,
            MAX_RECORD_S,
            "seconds",
        )
        .map(|_| ())
        .map_err(|e| e.to_string().trim_end_matches('.').to_string())
    };
    let window = |place: String, w: &WindowRecord| -> Result<(), String> {
        let times = [
            ("start_s", w.start_s),
            ("end_s", w.end_s),
            ("duration_s", Some(w.duration_s)),
            ("client.cpu_s", Some(w.client.cpu_s)),
            (
                "client.max_concurrency_wait_s",
                Some(w.client.max_concurrency_wait_s),
            ),
        ];
        for (name, secs) in times {
            if let Some(secs) = secs {
                within(&place, name, secs, 0.0)?;
            }
        }
        Ok(())
    };
    if let Some(offset) = file.clock_offset_s {
        within("the file", "clock_offset_s", offset, -MAX_RECORD_S)?;
    }
    if let Some(duration) = file.duration_s {
        within("the file", "duration_s", duration, 0.0)?;
    }
    for (l, level) in file.levels.iter().enumerate() {
        for (i, w) in level.windows.iter().enumerate() {
            window(format!("level {}, window {}", l + 1, i + 1), w)?;
        }
        window(format!("level {}, merged", l + 1), &level.merged)?;
    }
    Ok(())
}

impl WindowRecord {
    /// Every distribution of the window by its name in the file (`latency`, …, and for an
    /// LLM run `tokens.output_tokens`, …).
    pub fn distributions(&self) -> Vec<(&'static str, &DistributionRecord)> {
        let mut all = vec![
            ("latency", &self.latency),
            ("service", &self.service),
            ("first_response", &self.first_response),
            ("inter_response", &self.inter_response),
            ("responses", &self.responses),
            ("send_lag", &self.send_lag),
        ];
        if let Some(t) = &self.tokens {
            all.extend([
                ("tokens.output_tokens", &t.output_tokens),
                ("tokens.input_tokens", &t.input_tokens),
                ("tokens.second_token", &t.second_token),
                ("tokens.inter_token", &t.inter_token),
                ("tokens.per_user_throughput", &t.per_user_throughput),
                ("tokens.http_connecting", &t.http_connecting),
                ("tokens.http_sending", &t.http_sending),
                ("tokens.http_waiting", &t.http_waiting),
                ("tokens.http_receiving", &t.http_receiving),
            ]);
        }
        all
    }
}

impl DistributionRecord {
    /// The distribution as the run had it: any percentile, mean, std, and merging with
    /// others (windows of a level, levels of several runs or machines).
    pub fn distribution(&self) -> RunResult<Distribution> {
        self.rebuild().map_err(|why| {
            RunError::bad_option(format!("A distribution of the results file: {why}."))
        })
    }

    fn rebuild(&self) -> Result<Distribution, String> {
        let Some(histogram) = &self.histogram else {
            return Err("it has no histogram".to_string());
        };
        let exact = Exact {
            count: self.count,
            sum: self.sum as u128,
            sum_sq: self.sum_of_squares,
            min: if self.count == 0 { u64::MAX } else { self.min },
            max: self.max,
        };
        Distribution::rebuild(histogram, exact)
    }
}

/// The distributions merged, as if their values had been recorded in one window.
pub fn merge_distributions<'a>(
    records: impl IntoIterator<Item = &'a DistributionRecord>,
) -> RunResult<Distribution> {
    let mut merged = Distribution::default();
    for record in records {
        merged.merge(&record.distribution()?);
    }
    Ok(merged)
}
