//! The results file, `results.json`: everything a run measured in one file that machines
//! read, so that every report after the console's — the HTML page, `compare`, merging the
//! shards of a run — is a reader of this file rather than a second path through the
//! measurement. It holds the settings (no header values), the model, and per level every
//! window with its counts, errors, rates, client health, server breakdown, metrics, LLM
//! figures and each distribution's HDR histogram in HdrHistogram's V2 compressed format, so
//! windows, levels and machines merge without loss; then the merged figures and how and why
//! the level ended. A `--ramp` / `--load-steps` run has its per-second buckets instead.
//!
//! It is recorded as the run goes ([`Recorder`]) and written by the results-file report
//! (`--report-dir DIR` → `DIR/results.json`, `--results-file F`), read back with [`read`],
//! and described field by field in `docs/results.schema.json` (checked against real files
//! by `tests/suite/results.rs`). Its settings ([`settings`], the one place the
//! configuration becomes the record, in `record/settings.rs`; read back for the reports in
//! `reader/settings.rs`) are what every report is rendered from.
//!
//! For a reader: `read(path)?` gives a [`ResultsFile`]; each [`DistributionRecord`] lists the
//! run's percentiles and `distribution()?` rebuilds a
//! [`Distribution`](crate::measure::distribution::Distribution) for any other percentile or
//! for merging ([`merge_distributions`]); [`window_stats`] gives a whole window back as
//! measured, and `scale_out::merge` merges the results files of a run's shards into one run.

mod reader;
mod record;
mod recorder;
mod schema;
mod writer;

#[cfg(test)]
pub(crate) use reader::settings::test_settings;
pub use reader::settings::ResultsPath;
pub use reader::{merge_distributions, read};
pub use record::restore::{error_kind, model_spec, window_stats};
pub use record::settings::{command_line_record, settings, without_userinfo};
pub use record::{distribution_record, file_percentiles, window_record, FILE_PERCENTILES};
pub use recorder::{MergedOrigin, Recorder, RunEnd};
pub use schema::*;
pub use writer::{check_writable, replace_file, write_file};
