//! The reports of one run, fed in order: [`Reports`] opens every report of
//! [`REPORTS`](super::REPORTS) that the run's settings ask for, keeps the run's record
//! ([`Recorder`]) and tells each report of the start, every level or second, and the end,
//! with the record as it stands. The commands call nothing else to report a run.

use crate::measure::level::LevelResult;
use crate::measure::timeline::Bucket;
use crate::results::{Recorder, ResultsFile, RunEnd};
use inferperf_wire::error::RunResult;
use inferperf_wire::model::ModelSpec;

use super::{Measured, Origin, Reporter, Run, Sent, REPORTS};

/// The open reports of a run and its record.
pub struct Reports {
    record: Recorder,
    origin: Origin,
    reporters: Vec<Box<dyn Reporter>>,
    /// Default until [`Reports::start`] (a run that fails before has no model).
    model: ModelSpec,
}

impl Reports {
    /// Opens every report the record's settings ask for, in the list's order; the first
    /// that cannot be opened is the error (nothing was measured yet).
    pub fn open(record: Recorder, origin: Origin) -> RunResult<Reports> {
        let settings = &record.file().settings;
        let reporters = REPORTS
            .iter()
            .filter(|entry| (entry.is_on)(settings, origin))
            .map(|entry| (entry.open)(settings))
            .collect::<RunResult<Vec<_>>>()?;
        Ok(Reports {
            record,
            origin,
            reporters,
            model: ModelSpec::default(),
        })
    }

    /// The record as it stands.
    pub fn file(&self) -> &ResultsFile {
        self.record.file()
    }

    /// Records this host's clock offset from the run's reference shard.
    pub fn set_clock_offset(&mut self, offset_s: Option<f64>) {
        self.record.set_clock_offset(offset_s);
    }

    /// The model is known (and, for a measured run, what it sends): every report starts.
    pub fn start(&mut self, model: &ModelSpec, sent: Option<&Sent<'_>>) -> RunResult<()> {
        self.record.set_model(model);
        self.model = model.clone();
        self.each(|reporter, run| reporter.start(run, sent))
    }

    /// A level was just measured.
    pub fn level(&mut self, level: &LevelResult) {
        self.record.add_level(level);
        let _ = self.each(|reporter, run| {
            reporter.level(run, level);
            Ok(())
        });
    }

    /// A second of a timeline was just closed.
    pub fn bucket(&mut self, bucket: &Bucket) {
        self.record.add_bucket(bucket);
        let _ = self.each(|reporter, run| {
            reporter.bucket(run, bucket);
            Ok(())
        });
    }

    /// The run ended: the record is completed and every report finishes, also after an
    /// error of another; the first error in the list's order is returned.
    pub fn finish(&mut self, end: RunEnd<'_>, measured: Measured<'_>) -> RunResult<()> {
        self.record.finish(end);
        let run = Run {
            file: self.record.file(),
            model: &self.model,
            origin: self.origin,
        };
        let mut first_error = Ok(());
        for reporter in &mut self.reporters {
            let finished = reporter.finish(&run, &measured);
            if first_error.is_ok() {
                first_error = finished;
            }
        }
        first_error
    }

    /// Calls `step` on every report in order, stopping at the first error.
    fn each(
        &mut self,
        mut step: impl FnMut(&mut dyn Reporter, &Run<'_>) -> RunResult<()>,
    ) -> RunResult<()> {
        let run = Run {
            file: self.record.file(),
            model: &self.model,
            origin: self.origin,
        };
        for reporter in &mut self.reporters {
            step(reporter.as_mut(), &run)?;
        }
        Ok(())
    }
}
