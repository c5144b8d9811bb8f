//! Which part of a run this process is: `--shard i/N` makes it one of N processes (on one
//! machine or many) that together apply the asked load, each writing its own results file
//! for `inferperf merge`. The shard comes from the flag, else from the engine that started
//! the process — MPI (`OMPI_COMM_WORLD_RANK/SIZE`, `PMI_RANK/SIZE`) or a Kubernetes Indexed
//! Job (`JOB_COMPLETION_INDEX` with `--shards N`). Only the rules live here; the load, the
//! data and the schedule split themselves by asking [`ShardPlan`] for their part.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{Config, LoadLevel, LoadMode, MeasurementMode};
use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

/// The most processes a run may be split over.
pub const MAX_SHARDS: u32 = 100_000;

/// Where the shard came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardSource {
    /// `--shard i/N`.
    Flag,
    /// An MPI launcher's environment (`mpirun`, `srun`, `mpiexec`).
    Mpi,
    /// A Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`.
    Kubernetes,
}

impl ShardSource {
    pub fn label(self) -> &'static str {
        match self {
            ShardSource::Flag => "flag",
            ShardSource::Mpi => "mpi",
            ShardSource::Kubernetes => "kubernetes",
        }
    }
}

/// This process's part of a sharded run.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardPlan {
    /// From 0 to `count - 1`.
    pub index: u32,
    pub count: u32,
    pub source: ShardSource,
    /// `--start-at`: when every shard's first window starts.
    pub start_at: Option<SystemTime>,
}

impl ShardPlan {
    /// The in-flight requests this shard keeps at a concurrency of `total`: as even as
    /// integers allow, the first `total % count` shards taking one more.
    pub fn concurrency_share(&self, total: u32) -> u32 {
        total / self.count + u32::from(self.index < total % self.count)
    }

    /// This shard's part of a request budget (`--request-count`), split as a concurrency.
    pub fn count_share(&self, total: u64) -> u64 {
        let count = self.count as u64;
        total / count + u64::from((self.index as u64) < total % count)
    }

    /// This shard's part of a load level: its slots of a concurrency; a rate stays the
    /// whole stream's (the schedule keeps every N-th send of it, see [`Self::takes`]).
    pub fn level_share(&self, level: LoadLevel) -> LoadLevel {
        match level {
            LoadLevel::Concurrency(c) => LoadLevel::Concurrency(self.concurrency_share(c)),
            rate => rate,
        }
    }

    /// Whether the `n`-th item (a send of the schedule, an entry of the data) is this
    /// shard's: every `count`-th one from `index`.
    pub fn takes(&self, n: u64) -> bool {
        n % self.count as u64 == self.index as u64
    }

    /// "shard 2/4" as reports say it.
    pub fn label(&self) -> String {
        format!("shard {}/{}", self.index, self.count)
    }

    /// How a shard's note on its part of a level begins: what `merge` recognises it by.
    pub fn part_note_prefix(index: u32, count: u32) -> String {
        format!("This is shard {index}/{count}:")
    }
}

/// Reads the shard from the flags, else from the engine's environment; `None` for an
/// unsharded run (no shard anywhere, or a shard count of 1 with no `--start-at`).
pub(super) fn parse_shard(args: &ProfileArgs) -> RunResult<Option<ShardPlan>> {
    parse_shard_from(args, |name| std::env::var(name).ok())
}

fn parse_shard_from(
    args: &ProfileArgs,
    env: impl Fn(&str) -> Option<String>,
) -> RunResult<Option<ShardPlan>> {
    let start_at = args.start_at.as_deref().map(parse_start_at).transpose()?;
    let found = match &args.shard {
        Some(text) => Some((parse_flag(text)?, ShardSource::Flag)),
        None => from_environment(args, &env)?,
    };
    if args.enable_mpi && found.as_ref().is_none_or(|f| f.1 != ShardSource::Mpi) {
        return Err(RunError::bad_option(
            "--enable-mpi needs an MPI launcher: start inferperf with mpirun -n N (or use --shard i/N without MPI).",
        ));
    }
    let Some(((index, count), source)) = found else {
        if start_at.is_some() {
            return Ok(Some(ShardPlan {
                index: 0,
                count: 1,
                source: ShardSource::Flag,
                start_at,
            }));
        }
        return Ok(None);
    };
    if count == 1 && start_at.is_none() && source != ShardSource::Mpi {
        return Ok(None);
    }
    Ok(Some(ShardPlan {
        index,
        count,
        source,
        start_at,
    }))
}

/// `i/N` with `0 <= i < N <= MAX_SHARDS`.
fn parse_flag(text: &str) -> RunResult<(u32, u32)> {
    let bad = |why: &str| {
        RunError::bad_option(format!(
            "--shard {text}: {why}; give this process's index and the shard count as i/N, e.g. --shard 0/4 … --shard 3/4."
        ))
    };
    let (i, n) = text.trim().split_once('/').ok_or_else(|| bad("no '/'"))?;
    let index: u32 = i
        .trim()
        .parse()
        .map_err(|_| bad("the index is not a whole number"))?;
    let count: u32 = n
        .trim()
        .parse()
        .map_err(|_| bad("the count is not a whole number"))?;
    check_index(index, count, "--shard")?;
    Ok((index, count))
}

fn check_index(index: u32, count: u32, from: &str) -> RunResult<()> {
    if count == 0 || count > MAX_SHARDS {
        return Err(RunError::bad_option(format!(
            "{from}: a run splits over 1 to {MAX_SHARDS} shards, not {count}."
        )));
    }
    if index >= count {
        return Err(RunError::bad_option(format!(
            "{from}: shard index {index} is not below the shard count {count}: indexes run from 0 to {}.",
            count - 1
        )));
    }
    Ok(())
}

/// The shard an engine gives through the environment: MPI's rank and size, or an Indexed
/// Job's completion index with `--shards`.
fn from_environment(
    args: &ProfileArgs,
    env: &impl Fn(&str) -> Option<String>,
) -> RunResult<Option<((u32, u32), ShardSource)>> {
    for (rank, size) in [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
    ] {
        if let (Some(r), Some(s)) = (env(rank), env(size)) {
            let number = |name: &str, value: &str| {
                value.trim().parse::<u32>().map_err(|_| {
                    RunError::bad_option(format!(
                        "{name}={value} is not a whole number: is the MPI launcher's environment intact?"
                    ))
                })
            };
            let (index, count) = (number(rank, &r)?, number(size, &s)?);
            check_index(index, count, rank)?;
            if args.shards.is_some_and(|n| n != count) {
                return Err(RunError::bad_option(format!(
                    "--shards {} disagrees with {size}={count}: drop --shards under MPI.",
                    args.shards.unwrap_or_default()
                )));
            }
            return Ok(Some(((index, count), ShardSource::Mpi)));
        }
    }
    let Some(index) = env("JOB_COMPLETION_INDEX") else {
        return match args.shards {
            Some(n) => Err(RunError::bad_option(format!(
                "--shards {n} gives the shard count of a Kubernetes Indexed Job, but JOB_COMPLETION_INDEX is not set: outside a job, use --shard i/{n}."
            ))),
            None => Ok(None),
        };
    };
    let index: u32 = index.trim().parse().map_err(|_| {
        RunError::bad_option(format!(
            "JOB_COMPLETION_INDEX={index} is not a whole number: is this pod part of an Indexed Job?"
        ))
    })?;
    let Some(count) = args.shards else {
        return Err(RunError::bad_option(format!(
            "JOB_COMPLETION_INDEX={index} makes this pod shard {index} of a Kubernetes Indexed Job: pass --shards N, the job's completions (or --shard 0/1 to run it unsharded)."
        )));
    };
    check_index(index, count, "JOB_COMPLETION_INDEX")?;
    Ok(Some(((index, count), ShardSource::Kubernetes)))
}

/// `--start-at`: an RFC 3339 time (`2026-11-24T10:00:00Z`) or `@UNIX_SECONDS`.
fn parse_start_at(text: &str) -> RunResult<SystemTime> {
    let text = text.trim();
    let parsed = match text.strip_prefix('@') {
        Some(secs) => secs
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e11)
            .map(|s| UNIX_EPOCH + inferperf_wire::number::saturating_secs(s)),
        None => humantime::parse_rfc3339_weak(text).ok(),
    };
    parsed.ok_or_else(|| {
        RunError::bad_option(format!(
            "--start-at {text} is not a time: give an RFC 3339 time such as 2026-11-24T10:00:00Z (UTC) or @UNIX_SECONDS."
        ))
    })
}

impl Config {
    /// Gives each shard its own outputs, so that shards started with one command line
    /// (`mpirun -n 4 inferperf … --report-dir runs/x`) never write over each other:
    /// `--report-dir DIR` becomes `DIR/shard-I`, a file `F.ext` becomes `F.shard-I.ext`.
    pub(super) fn shard_outputs(&mut self) {
        let Some(shard) = self.load.shard.as_ref().filter(|s| s.count > 1) else {
            return;
        };
        let tag = format!("shard-{}", shard.index);
        if let Some(dir) = &mut self.output.report_dir {
            dir.push(&tag);
        }
        for file in [
            &mut self.output.results_file,
            &mut self.output.csv_file,
            &mut self.output.profile_export_file,
        ]
        .into_iter()
        .flatten()
        {
            *file = tagged(file, &tag);
        }
    }

    /// Refuses what a sharded run cannot do: loads that each process would decide alone.
    pub(super) fn check_shard(&self) -> RunResult<()> {
        let Some(shard) = &self.load.shard else {
            return Ok(());
        };
        let refuse = |what: &str, why: &str| {
            Err(RunError::bad_option(format!(
                "{what} cannot be sharded ({}): {why}.",
                shard.label()
            )))
        };
        match &self.load.mode {
            LoadMode::Timeline { .. } => {
                return refuse("--ramp and --load-steps", "run the plan from one process")
            }
            LoadMode::Periodic(_) => {
                return refuse("--periodic-concurrency-range", "run it from one process")
            }
            _ => {}
        }
        if self.load.binary_search
            || self.measure.latency_threshold_ms.is_some()
            || !self.measure.slo.is_empty()
        {
            return refuse(
                "A search (-l, --slo, --binary-search)",
                "each shard would stop on its own figures; sweep a fixed range and read the merged report",
            );
        }
        if self.measure.measurement_mode == MeasurementMode::CountWindows {
            return refuse(
                "--measurement-mode count_windows",
                "shards' windows must line up in time; use time windows (-p)",
            );
        }
        if matches!(self.load.mode, LoadMode::Concurrency) {
            let smallest = self.load.concurrency.start;
            if smallest < shard.count {
                return Err(RunError::bad_option(format!(
                    "--concurrency-range starts at {smallest}, fewer than the {} shards: every shard needs at least one request in flight; start at {} or more.",
                    shard.count, shard.count
                )));
            }
        }
        if let Some(count) = self.load.request_count {
            if count < shard.count as u64 {
                return refuse(
                    "--request-count below the shard count",
                    "ask for at least one request per shard",
                );
            }
        }
        Ok(())
    }
}

/// `F.ext` → `F.TAG.ext` (`F` → `F.TAG`).
fn tagged(file: &std::path::Path, tag: &str) -> std::path::PathBuf {
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = match (stem, file.extension()) {
        (Some(stem), Some(ext)) => format!("{stem}.{tag}.{}", ext.to_string_lossy()),
        (Some(stem), None) => format!("{stem}.{tag}"),
        (None, _) => tag.to_string(),
    };
    file.with_file_name(name)
}

#[cfg(test)]
#[path = "shard_tests.rs"]
mod tests;
