//! Merging the shards of a run (`--shard I/N`: N processes each applying part of the load to
//! one server, each writing its own results file) back into the one run they measured
//! together, without loss: per level, the shards' windows are lined up in time on one clock
//! (each shard's start corrected by its `clock_offset_s`), their histograms added and their
//! counts and errors summed; the run's stability rule is then judged on the merged windows
//! as the profiler judges one process's, and the level reports the merge of its last
//! windows. The result is the [`LevelResult`]s a run hands its reports, so that every report
//! of the merged run is written by the same code as a run's.
//!
//! The server's side (its statistics and metrics) is the server's, not a shard's: every
//! shard saw the same server, so it is taken from the first shard alone, never summed.

mod align;
mod check;

use crate::config::shard::ShardPlan;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use check::check;

use crate::config::MeasureConfig;
use crate::measure::level::{LevelEnd, LevelResult};
use crate::measure::stability::{merge_last, StabilityRule, Verdict};
use crate::measure::tokens::GoodputRule;
use crate::measure::window::WindowStats;
use crate::results::*;
use inferperf_wire::error::{RunError, RunResult};

/// A shard's results file, as given (`path`) and as read.
pub struct Shard {
    pub path: String,
    pub file: ResultsFile,
}

impl Shard {
    /// "shard 1" (its index), or the file when it has no shard record.
    pub fn label(&self) -> String {
        match &self.file.settings.shard {
            Some(s) => format!("shard {}", s.index),
            None => self.path.clone(),
        }
    }

    /// The file's levels end normally, so a level it lacks was never measured.
    fn ended_normally(&self) -> bool {
        self.file.finished && !self.file.interrupted && self.file.error.is_none()
    }
}

/// The run the shards measured together.
pub struct MergedRun {
    pub levels: Vec<LevelResult>,
    /// Notes about the whole run (levels left out).
    pub notes: Vec<String>,
    /// The start of the earliest shard, and the end of the latest, on the reference clock.
    pub started_at: SystemTime,
    pub ended_at: Option<SystemTime>,
    /// The run's start on this process's clock: the windows' bounds count from it.
    pub start: Instant,
}

/// Merges the shards (checked with [`check`], the first one's server side kept) into one run
/// judged by `measure`, the run's own measure section; `batch_size`: inferences per request.
pub fn merge(measure: &MeasureConfig, batch_size: u32, shards: &[Shard]) -> RunResult<MergedRun> {
    let clock = Clock::of(shards)?;
    let (count, notes) = common_levels(shards)?;
    let rule = StabilityRule::for_run(measure);
    let levels = (0..count)
        .map(|l| merge_level(measure, batch_size, &rule, shards, &clock, l))
        .collect::<RunResult<Vec<_>>>()?;
    Ok(MergedRun {
        levels,
        notes,
        started_at: UNIX_EPOCH + inferperf_wire::number::saturating_secs(clock.earliest.max(0.0)),
        ended_at: clock.ended,
        start: clock.base,
    })
}

/// The shards' starts on one clock: each file's `started_at` minus its clock offset.
struct Clock {
    /// Seconds since the epoch, per shard.
    starts: Vec<f64>,
    earliest: f64,
    ended: Option<SystemTime>,
    base: Instant,
}

impl Clock {
    fn of(shards: &[Shard]) -> RunResult<Clock> {
        let mut starts = Vec::with_capacity(shards.len());
        let mut ended: Option<f64> = None;
        for shard in shards {
            let offset = shard.file.clock_offset_s.unwrap_or(0.0);
            starts.push(epoch_seconds(&shard.file.started_at, shard, "started_at")? - offset);
            if let Some(end) = &shard.file.ended_at {
                let end = epoch_seconds(end, shard, "ended_at")? - offset;
                ended = Some(ended.map_or(end, |e| e.max(end)));
            }
        }
        let earliest = starts.iter().copied().fold(f64::INFINITY, f64::min);
        Ok(Clock {
            starts,
            earliest,
            ended: ended.map(|e| {
                UNIX_EPOCH + inferperf_wire::number::saturating_secs(e.max(earliest).max(0.0))
            }),
            base: Instant::now(),
        })
    }

    /// An offset of shard `i`'s run on this process's clock.
    fn place(&self, i: usize, offset_s: f64) -> Instant {
        let from_base = self.starts[i] - self.earliest + offset_s;
        self.base
            + inferperf_wire::number::saturating_secs(if from_base.is_finite() {
                from_base.max(0.0)
            } else {
                0.0
            })
    }
}

fn epoch_seconds(text: &str, shard: &Shard, field: &str) -> RunResult<f64> {
    let at = humantime::parse_rfc3339(text).map_err(|e| {
        RunError::bad_option(format!(
            "{}: {field} '{text}' is not an RFC 3339 time ({e}).",
            shard.path
        ))
    })?;
    Ok(at
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64()))
}

/// How many levels every shard measured, the same loads in the same order; a level only
/// some shards have is refused, unless a shard without it stopped early (then it is left
/// out with a note).
fn common_levels(shards: &[Shard]) -> RunResult<(usize, Vec<String>)> {
    let Some((first, rest)) = shards.split_first() else {
        return Ok((0, Vec::new()));
    };
    for shard in rest {
        let pairs = first.file.levels.iter().zip(&shard.file.levels).enumerate();
        for (l, (a, b)) in pairs {
            if !same_load(&a.load, &b.load) {
                return Err(RunError::bad_option(format!(
                    "shard files differ at level {}: {} measured {}, {} measured {}; merge only shards of one run.",
                    l + 1,
                    first.path,
                    load_text(&a.load),
                    shard.path,
                    load_text(&b.load)
                )));
            }
        }
    }
    let count = shards
        .iter()
        .map(|s| s.file.levels.len())
        .min()
        .unwrap_or(0);
    let longest = shards
        .iter()
        .max_by_key(|s| s.file.levels.len())
        .unwrap_or(first);
    let mut notes = Vec::new();
    for shard in shards
        .iter()
        .filter(|s| s.file.levels.len() < longest.file.levels.len())
    {
        let missing = &longest.file.levels[shard.file.levels.len()];
        let level = shard.file.levels.len() + 1;
        if shard.ended_normally() {
            return Err(RunError::bad_option(format!(
                "level {level} ({}) is in {} but not in {}: merge only shards of one run, which measure the same levels.",
                load_text(&missing.load),
                longest.path,
                shard.path
            )));
        }
        notes.push(format!(
            "levels from {level} on ({} …) are left out: {} stopped before measuring them.",
            load_text(&missing.load),
            shard.path
        ));
    }
    if count == 0 {
        return Err(RunError::bad_option(
            "no level was measured by every shard: nothing to merge.",
        ));
    }
    Ok((count, notes))
}

fn same_load(a: &LevelLoad, b: &LevelLoad) -> bool {
    match (a, b) {
        (LevelLoad::Concurrency(x), LevelLoad::Concurrency(y)) => x == y,
        (LevelLoad::RequestRate(x), LevelLoad::RequestRate(y)) => {
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        _ => false,
    }
}

fn load_text(load: &LevelLoad) -> String {
    match load {
        LevelLoad::Concurrency(c) => format!("concurrency {c}"),
        LevelLoad::RequestRate(r) => format!("request rate {r}"),
    }
}

/// One level of the merged run.
fn merge_level(
    measure: &MeasureConfig,
    batch_size: u32,
    rule: &StabilityRule,
    shards: &[Shard],
    clock: &Clock,
    l: usize,
) -> RunResult<LevelResult> {
    let records: Vec<&LevelRecord> = shards.iter().map(|s| &s.file.levels[l]).collect();
    let windows = shards
        .iter()
        .enumerate()
        .map(|(i, shard)| restore_level(measure, shard, i, l, clock))
        .collect::<RunResult<Vec<_>>>()?;
    let labels: Vec<String> = shards.iter().map(Shard::label).collect();
    let single = records
        .iter()
        .all(|r| r.end == LevelEndRecord::SingleWindow);
    let aligned = align::align(l + 1, &labels, &windows, single);
    if aligned.windows.is_empty() {
        return Err(RunError::bad_option(format!(
            "level {} ({}): no window of one shard met a window of every other shard in time (within half a window), so the shards did not measure it together; start them at one time (--start-at) and merge again.",
            l + 1,
            load_text(&records[0].load)
        )));
    }
    let interrupted = records.iter().any(|r| r.end == LevelEndRecord::Interrupted);
    let judged = judge(rule, aligned.windows, single, interrupted);
    let mut notes = shard_notes(shards, &records);
    notes.extend(aligned.notes);
    notes.extend(judged.note);
    notes.extend(server_note(&shards[0], &judged.windows));
    Ok(LevelResult {
        level: records[0].load.into(),
        merged: merge_last(&judged.windows, batch_size),
        windows: judged.windows,
        end: judged.end,
        notes,
        requests: None,
        slices: Default::default(),
    })
}

/// Shard `i`'s windows of level `l` on the merged run's clock; the server's side is kept
/// for the first shard only.
fn restore_level(
    measure: &MeasureConfig,
    shard: &Shard,
    i: usize,
    l: usize,
    clock: &Clock,
) -> RunResult<Vec<WindowStats>> {
    let goodput = GoodputRule::for_run(measure);
    let records = &shard.file.levels[l].windows;
    let mut windows = Vec::with_capacity(records.len());
    for (k, record) in records.iter().enumerate() {
        let bounds = match (record.start_s, record.end_s) {
            (Some(start), Some(end)) => Some((clock.place(i, start), clock.place(i, end))),
            _ => None,
        };
        let mut w = window_stats(record, bounds, goodput).map_err(|why| {
            RunError::bad_option(format!(
                "{}: level {}, window {}: {why}.",
                shard.path,
                l + 1,
                k + 1
            ))
        })?;
        if i > 0 {
            w.server = None;
            w.metrics = None;
        }
        windows.push(w);
    }
    Ok(windows)
}

/// The merged windows judged: those up to where the rule ended the level, how it ended,
/// and a note when later windows were left out.
struct Judged {
    windows: Vec<WindowStats>,
    end: LevelEnd,
    note: Option<String>,
}

/// The run's rule on the merged windows, window by window as the profiler applies it to
/// one process's: the level ends at the first window that makes it stable (or over `-l`,
/// or past `--slo`); if none does, it is unstable (or interrupted, or missed its `--slo`).
fn judge(
    rule: &StabilityRule,
    mut windows: Vec<WindowStats>,
    single: bool,
    interrupted: bool,
) -> Judged {
    if single {
        let end = if interrupted {
            LevelEnd::Interrupted
        } else {
            LevelEnd::SingleWindow
        };
        return Judged {
            windows,
            end,
            note: None,
        };
    }
    let total = windows.len();
    let ended = (1..=total).find_map(|n| match rule.judge(&windows[..n]) {
        Verdict::Measuring => None,
        Verdict::Stable => Some((n, LevelEnd::Stable)),
        Verdict::OverLatencyLimit => Some((n, LevelEnd::OverLatencyLimit)),
        Verdict::MissedSlo => Some((n, LevelEnd::MissedSlo)),
    });
    let Some((n, end)) = ended else {
        let end = if interrupted {
            LevelEnd::Interrupted
        } else if rule.misses_slo(&merge_last(&windows, 1)) {
            LevelEnd::MissedSlo
        } else {
            LevelEnd::Unstable
        };
        return Judged {
            windows,
            end,
            note: None,
        };
    };
    windows.truncate(n);
    let note = (n < total).then(|| {
        format!(
            "the merged windows ended the level after {n} of the {total} measured together; the later {} left out, as one process would have stopped there.",
            if total - n == 1 { "one is" } else { "ones are" }
        )
    });
    Judged { windows, end, note }
}

/// The shards' own notes on the level, each once, named by shard; not the note that says
/// which part of the level a shard ran (the profiler's "This is shard I/N: …"), which the
/// merged level no longer is.
fn shard_notes(shards: &[Shard], records: &[&LevelRecord]) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for (shard, record) in shards.iter().zip(records) {
        let own = shard
            .file
            .settings
            .shard
            .as_ref()
            .map(|s| ShardPlan::part_note_prefix(s.index, s.count));
        let about_shard = |note: &String| own.as_ref().is_some_and(|own| note.starts_with(own));
        for note in record.notes.iter().filter(|n| !about_shard(n)) {
            let note = format!("{}: {note}", shard.label());
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    }
    notes
}

/// Says whose server statistics and metrics the level shows, when it has any.
fn server_note(first: &Shard, windows: &[WindowStats]) -> Option<String> {
    let has_server = windows
        .iter()
        .any(|w| w.server.is_some() || w.metrics.is_some());
    has_server.then(|| {
        format!(
            "the server's statistics and metrics are {}'s alone: every shard measured the same server, so they are not summed.",
            first.label()
        )
    })
}
