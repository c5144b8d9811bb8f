//! The results file of a run as it goes, in memory: its settings from the start, the model
//! once known, each level (or timeline bucket) as it is measured, and how the run ended.
//! The reports read it — the results-file report writes it to disk after every level and at
//! the end, the HTML page renders it — so what they show is what the file holds. Levels
//! and buckets are kept only when the run writes a results file (`--report-dir`,
//! `--results-file`): a long `--ramp` run without one keeps no growing record.

use std::time::{Instant, SystemTime};

use super::record::{bucket_record, file_percentiles, level_record, model_record, window_record};
use super::schema::rfc3339;
use super::schema::*;
use crate::measure::level::LevelResult;
use crate::measure::timeline::Bucket;
use crate::measure::window::WindowStats;
use inferperf_wire::error::RunError;
use inferperf_wire::model::ModelSpec;

/// How a run ended, for the last write.
#[derive(Debug, Default)]
pub struct RunEnd<'a> {
    /// Ctrl-C cut it short.
    pub interrupted: bool,
    /// The error that ended it, if any.
    pub error: Option<&'a RunError>,
    /// A timeline's buckets merged.
    pub timeline_total: Option<&'a WindowStats>,
}

/// Where and when a merged run (`inferperf merge`) happened: its shards' files, its
/// settings (the shards' but for the shard itself and the outputs), the first shard's host,
/// the earliest start and the latest end on the reference clock, and that start on this
/// process's clock (the merged windows' bounds count from it).
pub struct MergedOrigin {
    pub merged_from: Vec<String>,
    pub settings: Settings,
    pub host: Host,
    pub started_at: SystemTime,
    pub ended_at: Option<SystemTime>,
    pub start: Instant,
}

/// The record of a run being measured (or merged).
pub struct Recorder {
    /// The run's start: offsets are taken from here.
    start: Instant,
    percentiles: Vec<f64>,
    file: ResultsFile,
    /// Whether levels and buckets are kept (the run writes a results file).
    keeps: bool,
    /// A merged run's end, kept by [`Recorder::finish`] (it is not the merge's).
    merged_end: Option<(Option<String>, Option<f64>)>,
}

impl Recorder {
    /// Starts the run's clock and its record.
    pub fn new(settings: Settings) -> Recorder {
        let started_wall = SystemTime::now();
        let timeline = match &settings.load {
            LoadSettings::Timeline { kind, .. } => Some(TimelineRecord {
                kind: kind.clone(),
                buckets: Vec::new(),
                total: None,
            }),
            _ => None,
        };
        let file = ResultsFile {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "inferperf".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
            },
            started_at: rfc3339(started_wall),
            ended_at: None,
            duration_s: None,
            finished: false,
            interrupted: false,
            error: None,
            host: Host {
                cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
                os: std::env::consts::OS.to_string(),
            },
            model: None,
            levels: Vec::new(),
            knee: None,
            merged_from: Vec::new(),
            timeline,
            clock_offset_s: None,
            repetitions: None,
            settings,
        };
        Recorder {
            start: Instant::now(),
            percentiles: file_percentiles(&file.settings),
            keeps: file.settings.results_path().is_some(),
            file,
            merged_end: None,
        }
    }

    /// The record of a merged run: as [`Recorder::new`], with the shards' times, host and
    /// files in place of this process's.
    pub fn merged(origin: MergedOrigin) -> Recorder {
        let mut recorder = Recorder::new(origin.settings);
        let file = &mut recorder.file;
        file.started_at = rfc3339(origin.started_at);
        file.host = origin.host;
        file.merged_from = origin.merged_from;
        let duration = origin.ended_at.map(|end| {
            end.duration_since(origin.started_at)
                .unwrap_or_default()
                .as_secs_f64()
        });
        recorder.merged_end = Some((origin.ended_at.map(rfc3339), duration));
        recorder.start = origin.start;
        recorder
    }

    /// The record as it stands.
    pub fn file(&self) -> &ResultsFile {
        &self.file
    }

    /// Records this host's clock offset from the run's reference shard.
    pub fn set_clock_offset(&mut self, offset_s: Option<f64>) {
        self.file.clock_offset_s = offset_s;
    }

    /// Records the model.
    pub fn set_model(&mut self, model: &ModelSpec) {
        if self.keeps {
            self.file.model = Some(model_record(model));
        }
    }

    /// Adds a level just measured (its windows still whole).
    pub fn add_level(&mut self, result: &LevelResult) {
        if !self.keeps {
            return;
        }
        let file = &mut self.file;
        file.levels
            .push(level_record(&file.settings, result, self.start));
        file.knee = knee(&file.settings, &file.levels);
    }

    /// Adds a timeline bucket just closed.
    pub fn add_bucket(&mut self, bucket: &Bucket) {
        if !self.keeps {
            return;
        }
        let urls = self.file.settings.servers();
        let record = bucket_record(bucket, urls, self.start, &self.percentiles);
        if let Some(timeline) = &mut self.file.timeline {
            timeline.buckets.push(record);
        }
    }

    /// Completes the record with how the run ended.
    pub fn finish(&mut self, end: RunEnd<'_>) {
        if !self.keeps {
            return;
        }
        let file = &mut self.file;
        (file.ended_at, file.duration_s) = match self.merged_end.take() {
            Some(end) => end,
            None => (
                Some(rfc3339(SystemTime::now())),
                Some(self.start.elapsed().as_secs_f64()),
            ),
        };
        // Finished is a run that ended as asked: one ended by an error or Ctrl-C is not.
        file.finished = end.error.is_none() && !end.interrupted;
        file.interrupted = end.interrupted;
        file.error = end.error.map(ToString::to_string);
        if let (Some(timeline), Some(total)) = (&mut file.timeline, end.timeline_total) {
            timeline.total = Some(window_record(total, self.start, &self.percentiles));
        }
    }
}

/// The knee of a search: the stable level of highest throughput (only when the run
/// searched, with `--slo` or `--binary-search`).
fn knee(settings: &Settings, levels: &[LevelRecord]) -> Option<usize> {
    if settings.slo.is_empty() && !settings.binary_search {
        return None;
    }
    levels
        .iter()
        .enumerate()
        .filter(|(_, l)| l.stable)
        .max_by(|a, b| a.1.merged.throughput.total_cmp(&b.1.merged.throughput))
        .map(|(i, _)| i)
}
