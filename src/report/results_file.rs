//! The results file (`--report-dir DIR` → `DIR/results.json`, `--results-file F`) as a
//! report: its path is checked when the run opens its reports (an unusable one stops the
//! run at once, exit 3); the run's record is written when the model is known, rewritten
//! whole after every level (every few seconds of a timeline) and once more when the run
//! ends — normally, on an error, or on Ctrl-C — so that what is on disk is always a
//! complete, valid file. A write that fails later does not stop the measurement: the error
//! is kept and returned at the end (exit 99).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::measure::level::LevelResult;
use crate::measure::timeline::Bucket;
use crate::results::{check_writable, write_file, Settings};
use inferperf_wire::error::{RunError, RunResult};

use super::{Entry, Measured, Origin, Reporter, Run, Sent};

pub const REPORT: Entry = Entry {
    name: "results file",
    is_on,
    open,
};

/// A timeline's file is rewritten at most this often, and then only when the last write
/// took under a twentieth of the time since (its buckets grow with the run).
const TIMELINE_WRITE_EVERY: Duration = Duration::from_secs(1);

fn is_on(settings: &Settings, _: Origin) -> bool {
    settings.results_path().is_some()
}

fn open(settings: &Settings) -> RunResult<Box<dyn Reporter>> {
    let at = settings.results_path().ok_or_else(|| {
        RunError::failed("The results file was opened without --report-dir or --results-file.")
    })?;
    check_writable(&at)?;
    Ok(Box::new(ResultsFileReport {
        path: at.path,
        error: None,
        last_write: None,
    }))
}

/// The results file being written.
struct ResultsFileReport {
    path: PathBuf,
    /// The first write that failed; nothing is written after it.
    error: Option<RunError>,
    last_write: Option<(Instant, Duration)>,
}

impl ResultsFileReport {
    /// Writes the record whole (through a temporary file renamed over it).
    fn write(&mut self, run: &Run<'_>) {
        if self.error.is_some() {
            return;
        }
        let began = Instant::now();
        match write_file(&self.path, run.file) {
            Ok(()) => self.last_write = Some((Instant::now(), began.elapsed())),
            Err(e) => {
                self.error = Some(RunError::failed(format!(
                    "Cannot write the results file {}: {e}.",
                    self.path.display()
                )))
            }
        }
    }
}

impl Reporter for ResultsFileReport {
    fn start(&mut self, run: &Run<'_>, _sent: Option<&Sent<'_>>) -> RunResult<()> {
        self.write(run);
        Ok(())
    }

    fn level(&mut self, run: &Run<'_>, _level: &LevelResult) {
        self.write(run);
    }

    fn bucket(&mut self, run: &Run<'_>, _bucket: &Bucket) {
        let due = self
            .last_write
            .is_none_or(|(at, took)| at.elapsed() >= TIMELINE_WRITE_EVERY.max(took * 20));
        if due {
            self.write(run);
        }
    }

    fn finish(&mut self, run: &Run<'_>, _measured: &Measured<'_>) -> RunResult<()> {
        self.write(run);
        self.error.take().map_or(Ok(()), Err)
    }
}
