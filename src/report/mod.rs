//! Reports: turn a run's measured levels into what people and tools read. Every report —
//! the console, the `-f` CSV with its ensemble and per-URL variants, perf_analyzer's profile
//! export, the LLM artifacts, the HTML page, the results file — is a [`Reporter`] fed by the
//! run's recorded settings ([`Settings`], the `settings` of results.json) and its level
//! results, never by the configuration, and [`REPORTS`] is the one list that says which
//! are on. A run measured here ([`Origin::Measured`]: `profile`, `sweep`, `demo`, a
//! `--ramp` timeline) and a run merged from its shards' files ([`Origin::Merged`]) both go
//! through [`Reports`], so they are rendered by the same code.
//!
//! The console report and the CSV follow perf_analyzer's layout so that existing scripts
//! and habits keep working. Adding a report is one file that implements [`Reporter`] and
//! one line in [`REPORTS`]. `compare` and `report` are commands that read results files
//! (their renderings are [`compare`] and [`html`]); the live progress line is UI
//! (`crate::ui`).

pub mod answers;
pub mod compare;
pub mod console;
pub mod csv;
pub mod ensemble_csv;
pub mod format;
pub mod html;
pub mod llm;
pub mod metrics;
pub mod per_url_csv;
pub mod profile_export;
pub mod repeats;
mod reports;
pub mod results_file;
pub mod server_figures;

pub use console::search::search_block;
pub use console::timeline::{bucket_line, timeline_header, timeline_summary, write_timeline_csv};
pub use console::{level_block, settings_block, summary_block};
pub use csv::{csv_header, csv_rows, write_csv};
pub use format::mode_column;
pub use reports::Reports;

use crate::data::Dataset;
use crate::measure::level::LevelResult;
use crate::measure::timeline::Bucket;
use crate::measure::window::WindowStats;
use crate::results::{ResultsFile, Settings};
use inferperf_wire::error::RunResult;
use inferperf_wire::model::ModelSpec;

use llm::payloads::Payloads;

/// Every report, in the order they are opened, fed and finished. Opening checks what can
/// be checked before anything is measured (the results file's folder first: `--report-dir`
/// creates the folder the CSV then goes in); when several fail at the end, the first in
/// this order is the error the run reports.
pub const REPORTS: [Entry; 8] = [
    results_file::REPORT,
    console::REPORT,
    csv::REPORT,
    ensemble_csv::REPORT,
    per_url_csv::REPORT,
    llm::artifacts::REPORT,
    profile_export::REPORT,
    html::REPORT,
];

/// One report of [`REPORTS`]: its name, whether a run asks for it, and how it is opened.
pub struct Entry {
    pub name: &'static str,
    /// Whether a run with these settings, measured or merged, writes this report.
    pub is_on: fn(&Settings, Origin) -> bool,
    /// Opens the report before anything is measured: a path that cannot be written is
    /// refused here, so that no run is measured only to lose its report.
    pub open: fn(&Settings) -> RunResult<Box<dyn Reporter>>,
}

/// Where a run's levels come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Measured by this process: its requests are at hand ([`Sent`]).
    Measured,
    /// Merged from its shards' results files (`inferperf merge`): levels only.
    Merged,
}

/// A report, told of the run as it goes. Each call gets the run as recorded so far; a
/// report that writes a file keeps its first write error for [`Reporter::finish`] (the
/// measurement goes on; the other reports are still written).
pub trait Reporter {
    /// The model is known and nothing is measured yet: opening lines, files claimed (with
    /// what a measured run sends, for the reports that list its requests). An error here
    /// stops the run.
    fn start(&mut self, _run: &Run<'_>, _sent: Option<&Sent<'_>>) -> RunResult<()> {
        Ok(())
    }

    /// A level was just measured.
    fn level(&mut self, _run: &Run<'_>, _level: &LevelResult) {}

    /// A second of a `--ramp` / `--load-steps` run was just closed.
    fn bucket(&mut self, _run: &Run<'_>, _bucket: &Bucket) {}

    /// The run ended (the record says how): summaries and last writes; this report's
    /// first error.
    fn finish(&mut self, _run: &Run<'_>, _measured: &Measured<'_>) -> RunResult<()> {
        Ok(())
    }
}

/// What every report is rendered from: the run's record (its settings, and the levels or
/// seconds so far when a results file is written), the model, and where the levels come
/// from.
pub struct Run<'a> {
    pub file: &'a ResultsFile,
    pub model: &'a ModelSpec,
    pub origin: Origin,
}

impl Run<'_> {
    /// The run's recorded settings.
    pub fn settings(&self) -> &Settings {
        &self.file.settings
    }
}

/// What a measured run sends, for the reports that list its requests (the profile export,
/// the LLM artifacts): the dataset, and each entry's body as the run's API sends it (an
/// LLM run's; built when a report asks, since only those two need it).
pub struct Sent<'a> {
    pub dataset: &'a Dataset,
    pub bodies: &'a dyn Fn() -> Payloads,
}

/// What a run measured, when it ended.
pub enum Measured<'a> {
    /// It ended before its first level (before the model was known).
    Nothing,
    /// Levels, in the order measured (none when the first one failed).
    Levels(&'a [LevelResult]),
    /// A `--ramp` / `--load-steps` run: its seconds, and all of them merged.
    Timeline {
        buckets: &'a [Bucket],
        total: &'a WindowStats,
    },
}

#[cfg(test)]
use crate::backend::ErrorKind;
#[cfg(test)]
use crate::measure::level::{LevelEnd, LoadLevel};

/// The record of a run with these settings, before it measured anything.
#[cfg(test)]
pub(crate) fn test_record(settings: Settings) -> ResultsFile {
    crate::results::Recorder::new(settings).file().clone()
}

/// The settings `-m test` records (perf_analyzer's defaults).
#[cfg(test)]
pub(crate) fn test_settings() -> Settings {
    test_settings_with(&[])
}

/// The settings `-m test FLAGS` records.
#[cfg(test)]
pub(crate) fn test_settings_with(flags: &[&str]) -> Settings {
    let mut args = vec!["-m", "test"];
    args.extend_from_slice(flags);
    crate::results::test_settings(&args)
}

/// One window of `secs` seconds holding a successful request per latency (send 64 µs,
/// receive 16 µs each) and a failed request per error.
#[cfg(test)]
fn test_window(
    latencies_us: &[u64],
    errors: &[ErrorKind],
    secs: f64,
) -> crate::measure::window::WindowStats {
    use crate::measure::sample::Sample;
    use crate::measure::window::WindowStats;
    use std::time::{Duration, Instant};
    let start = Instant::now();
    let sample = |latency_us: u64, error: Option<ErrorKind>| Sample {
        scheduled: start,
        sent: start,
        send_ns: 64_000,
        recv_ns: 16_000,
        first: start + Duration::from_micros(latency_us),
        done: start + Duration::from_micros(latency_us),
        answers: 1,
        gaps: 0,
        connect_ns: 0,
        request: 0,
        replica: 0,
        sequence_id: 0,
        sequence_end: false,
        turn: 0,
        tokens: Default::default(),
        error,
    };
    let mut samples: Vec<Sample> = latencies_us.iter().map(|&l| sample(l, None)).collect();
    samples.extend(errors.iter().map(|&kind| sample(1, Some(kind))));
    WindowStats::from_samples(&samples, inferperf_wire::number::saturating_secs(secs), 1)
}

/// A level whose merged result is the one window built by [`test_window`].
#[cfg(test)]
fn test_level(level: LoadLevel, latencies_us: &[u64], secs: f64, end: LevelEnd) -> LevelResult {
    let window = test_window(latencies_us, &[], secs);
    LevelResult {
        level,
        merged: window.clone(),
        windows: vec![window],
        end,
        notes: Vec::new(),
        requests: None,
        slices: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_names_every_report_once() {
        let names: Vec<&str> = REPORTS.iter().map(|entry| entry.name).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        // A plain run writes the console report only; --report-dir adds its folder's three.
        let on = |settings: &Settings, origin| -> Vec<&str> {
            let on = REPORTS.iter().filter(|e| (e.is_on)(settings, origin));
            on.map(|entry| entry.name).collect()
        };
        assert_eq!(on(&test_settings(), Origin::Measured), ["console"]);
        let folder = test_settings_with(&["--report-dir", "runs/a"]);
        assert_eq!(
            on(&folder, Origin::Merged),
            [
                "results file",
                "console",
                "CSV",
                "ensemble CSV",
                "HTML page"
            ]
        );
    }
}
