//! Writing the results file as the run goes. The path is checked before anything is measured
//! (an unusable one stops the run at once, exit 3); the file is first written when the model
//! is known, then rewritten whole after every level (every few seconds of a timeline) and
//! once more when the run ends — normally, on an error, or on Ctrl-C — so that what is on
//! disk is always a complete, valid file: each write goes to a temporary file beside it that
//! is then renamed over it (no fsync: the point is a file that a crash of inferperf, or a
//! reader in the middle of a write, never sees half-written). A write that fails later does not stop the measurement: the
//! error is kept and returned by [`ResultsWriter::finish`] (exit 99).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::record::{bucket_record, file_percentiles, level_record, model_record, window_record};
use super::schema::*;
use super::settings::{settings, timeline_kind};
use crate::config::Config;
use crate::error::{RunError, RunResult};
use crate::measure::level::LevelResult;
use crate::measure::timeline::Bucket;
use crate::measure::window::WindowStats;
use crate::model::ModelSpec;

/// A timeline's file is rewritten at most this often, and then only when the last write
/// took under a twentieth of the time since (its buckets grow with the run).
const TIMELINE_WRITE_EVERY: Duration = Duration::from_secs(1);

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

/// The results file of a run being written; does nothing when no `--report-dir` or
/// `--results-file` was given.
pub struct ResultsWriter<'a> {
    cfg: &'a Config,
    path: Option<PathBuf>,
    /// The run's start: offsets are taken from here.
    start: Instant,
    percentiles: Vec<f64>,
    file: ResultsFile,
    /// The first write that failed; nothing is written after it.
    error: Option<RunError>,
    last_write: Option<(Instant, Duration)>,
    /// A merged run's end, kept by [`ResultsWriter::finish`] (it is not the merge's).
    merged_end: Option<(Option<String>, Option<f64>)>,
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

impl<'a> ResultsWriter<'a> {
    /// Starts the run's clock and checks that the results file can be written, creating
    /// `--report-dir` (or the folder of `--results-file`); an unusable path is a bad option.
    pub fn start(cfg: &'a Config) -> RunResult<ResultsWriter<'a>> {
        let path = cfg.results_path();
        if let Some(path) = &path {
            check_writable(cfg, path)?;
        }
        let started_wall = SystemTime::now();
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
            settings: settings(cfg),
            model: None,
            levels: Vec::new(),
            knee: None,
            merged_from: Vec::new(),
            timeline: cfg.load.timeline().map(|plan| TimelineRecord {
                kind: timeline_kind(plan.kind).to_string(),
                buckets: Vec::new(),
                total: None,
            }),
            clock_offset_s: None,
        };
        Ok(ResultsWriter {
            cfg,
            path,
            start: Instant::now(),
            percentiles: file_percentiles(cfg),
            file,
            error: None,
            last_write: None,
            merged_end: None,
        })
    }

    /// The results file of a merged run: as [`ResultsWriter::start`], with the shards' times,
    /// host and files in place of this process's.
    pub fn start_merged(cfg: &'a Config, origin: MergedOrigin) -> RunResult<ResultsWriter<'a>> {
        let mut writer = ResultsWriter::start(cfg)?;
        let file = &mut writer.file;
        file.started_at = rfc3339(origin.started_at);
        file.settings = origin.settings;
        file.host = origin.host;
        file.merged_from = origin.merged_from;
        let duration = origin.ended_at.map(|end| {
            end.duration_since(origin.started_at)
                .unwrap_or_default()
                .as_secs_f64()
        });
        writer.merged_end = Some((origin.ended_at.map(rfc3339), duration));
        writer.start = origin.start;
        Ok(writer)
    }

    /// Records this host's clock offset from the run's reference shard.
    pub fn set_clock_offset(&mut self, offset_s: Option<f64>) {
        self.file.clock_offset_s = offset_s;
    }

    /// Whether a results file is being written.
    pub fn is_on(&self) -> bool {
        self.path.is_some()
    }

    /// The file as written last (everything up to now, for a reporter that renders it).
    pub fn file(&self) -> &ResultsFile {
        &self.file
    }

    /// Records the model and writes the file for the first time.
    pub fn set_model(&mut self, model: &ModelSpec) {
        if self.is_on() {
            self.file.model = Some(model_record(model));
            self.write();
        }
    }

    /// Adds a level just measured (its windows still whole) and rewrites the file.
    pub fn add_level(&mut self, result: &LevelResult) {
        if !self.is_on() {
            return;
        }
        self.file
            .levels
            .push(level_record(self.cfg, result, self.start));
        self.file.knee = knee(self.cfg, &self.file.levels);
        self.write();
    }

    /// Adds a timeline bucket just closed; rewrites the file when one is due.
    pub fn add_bucket(&mut self, bucket: &Bucket) {
        if !self.is_on() {
            return;
        }
        let record = bucket_record(bucket, &self.cfg.urls, self.start, &self.percentiles);
        if let Some(timeline) = &mut self.file.timeline {
            timeline.buckets.push(record);
        }
        let due = self
            .last_write
            .is_none_or(|(at, took)| at.elapsed() >= TIMELINE_WRITE_EVERY.max(took * 20));
        if due {
            self.write();
        }
    }

    /// Completes the file with how the run ended and writes it a last time; returns the
    /// first write error of the run, if any.
    pub fn finish(&mut self, end: RunEnd<'_>) -> RunResult<()> {
        if !self.is_on() {
            return Ok(());
        }
        (self.file.ended_at, self.file.duration_s) = match self.merged_end.take() {
            Some(end) => end,
            None => (
                Some(rfc3339(SystemTime::now())),
                Some(self.start.elapsed().as_secs_f64()),
            ),
        };
        self.file.finished = true;
        self.file.interrupted = end.interrupted;
        self.file.error = end.error.map(ToString::to_string);
        if let (Some(timeline), Some(total)) = (&mut self.file.timeline, end.timeline_total) {
            timeline.total = Some(window_record(total, self.start, &self.percentiles));
        }
        self.write();
        self.error.take().map_or(Ok(()), Err)
    }

    /// Writes the whole file through a temporary file renamed over it.
    fn write(&mut self) {
        let (Some(path), None) = (&self.path, &self.error) else {
            return;
        };
        let began = Instant::now();
        match write_atomically(path, &self.file) {
            Ok(()) => self.last_write = Some((Instant::now(), began.elapsed())),
            Err(e) => {
                self.error = Some(RunError::failed(format!(
                    "Cannot write the results file {}: {e}.",
                    path.display()
                )))
            }
        }
    }
}

/// The knee of a search: the stable level of highest throughput (only when the run
/// searched, with `--slo` or `--binary-search`).
fn knee(cfg: &Config, levels: &[LevelRecord]) -> Option<usize> {
    if cfg.slo.is_empty() && !cfg.binary_search {
        return None;
    }
    levels
        .iter()
        .enumerate()
        .filter(|(_, l)| l.stable)
        .max_by(|a, b| a.1.merged.throughput.total_cmp(&b.1.merged.throughput))
        .map(|(i, _)| i)
}

/// Creates the folder the file goes in and tries writing a file there.
fn check_writable(cfg: &Config, path: &Path) -> RunResult<()> {
    let (flag, named) = match &cfg.report_dir {
        Some(dir) => ("--report-dir", dir.as_path()),
        None => ("--results-file", path),
    };
    let refuse =
        |what: String| RunError::bad_option(format!("{flag} {}: {what}.", named.display()));
    if path.is_dir() {
        return Err(refuse(format!(
            "{} is a folder; name a file, e.g. {}",
            path.display(),
            path.join("results.json").display()
        )));
    }
    let folder = parent(path);
    std::fs::create_dir_all(folder).map_err(|e| {
        refuse(format!(
            "cannot create the folder {}: {e}",
            folder.display()
        ))
    })?;
    let probe = temporary_path(path);
    File::create(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| refuse(format!("cannot write in {}: {e}", folder.display())))
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `.results.json.tmp-<pid>` beside the file.
fn temporary_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or("results.json".into(), |n| n.to_string_lossy());
    parent(path).join(format!(".{name}.tmp-{}", std::process::id()))
}

fn write_atomically(path: &Path, file: &ResultsFile) -> std::io::Result<()> {
    replace_file(path, |out| {
        serde_json::to_writer_pretty(&mut *out, file)?;
        out.write_all(b"\n")
    })
}

/// Writes a file whole through a temporary file beside it renamed over it, so that a reader
/// (a browser reloading the HTML page, a second inferperf reading results.json) never sees
/// it half-written; the temporary file is removed when the write fails.
pub fn replace_file(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let temporary = temporary_path(path);
    let written = (|| {
        let mut out = BufWriter::new(File::create(&temporary)?);
        fill(&mut out)?;
        out.flush()
    })();
    match written.and_then(|()| std::fs::rename(&temporary, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&temporary);
            Err(e)
        }
    }
}

/// A time as RFC 3339 in UTC with microseconds: `2026-11-24T00:06:12.567205Z`.
pub fn rfc3339(at: SystemTime) -> String {
    let at = at.max(UNIX_EPOCH);
    humantime::format_rfc3339_micros(at).to_string()
}
