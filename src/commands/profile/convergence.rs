//! AIPerf's adaptive stop of repeated runs: after each run, whether the figure named by
//! `--convergence-metric` has settled over the runs that finished — its interval narrow
//! enough (`ci-width`), its variation small enough (`cv`), or the latest run's requests
//! indistinguishable from the earlier runs' (`distribution`). Every level must have settled.

use crate::config::convergence::{Convergence, ConvergenceMode, MIN_RUNS};
use crate::measure::level::{LevelResult, LoadLevel};
use crate::measure::{confidence, two_sample};
use crate::report::llm::aiperf_records::request_values;
use crate::report::repeats::run_figures;
use crate::results::{ConvergenceRecord, Settings};

/// The test's answer after some runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub converged: bool,
    /// The value at the level furthest from passing; `None` when it could not be asked.
    pub value: Option<f64>,
    /// Why it could not be asked, when the figure was missing.
    pub note: Option<String>,
}

/// A run that finished: its levels and, for the distribution test, each level's
/// per-request values of the figure.
pub struct Finished<'a> {
    pub levels: &'a [LevelResult],
    pub requests: &'a [RequestValues],
}

/// One level's per-request values of the judged figure.
pub struct RequestValues {
    pub level: LoadLevel,
    pub values: Vec<f64>,
}

/// The per-request values the distribution test needs from a run's levels, taken out of
/// their request logs (which are let go: one run's requests are held at a time).
pub fn take_requests(
    c: &Convergence,
    settings: &Settings,
    levels: &mut [LevelResult],
) -> Vec<RequestValues> {
    if c.mode != ConvergenceMode::Distribution {
        return Vec::new();
    }
    (levels.iter_mut())
        .map(|r| {
            let values = request_values(settings, r, &c.metric);
            r.requests = None;
            RequestValues {
                level: r.level,
                values,
            }
        })
        .collect()
}

/// The test over the runs that finished, in run order.
pub fn judge(
    c: &Convergence,
    settings: &Settings,
    confidence_level: f64,
    runs: &[Finished<'_>],
) -> Judgement {
    let Some(first) = runs.iter().find(|run| !run.levels.is_empty()) else {
        return not_asked(None);
    };
    let mut values = Vec::new();
    for level in first.levels {
        let of_level: Vec<&LevelResult> = (runs.iter())
            .filter_map(|run| run.levels.iter().find(|r| r.level == level.level))
            .collect();
        let judged = match c.mode {
            ConvergenceMode::Distribution => distribution_p(c, level.level, runs),
            _ => level_value(c, settings, confidence_level, &of_level),
        };
        match judged {
            Ok(Some(v)) => values.push(v),
            Ok(None) => return not_asked(None),
            Err(note) => return not_asked(Some(note)),
        }
    }
    let worst = match c.mode {
        ConvergenceMode::Distribution => values.iter().copied().fold(f64::INFINITY, f64::min),
        _ => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    };
    let converged = match c.mode {
        ConvergenceMode::Distribution => worst > c.threshold,
        _ => worst < c.threshold,
    };
    Judgement {
        converged,
        value: worst.is_finite().then_some(worst),
        note: None,
    }
}

fn not_asked(note: Option<String>) -> Judgement {
    Judgement {
        converged: false,
        value: None,
        note,
    }
}

/// The test's value at one level: `Ok(None)` while too few runs have it (or its mean is 0),
/// `Err` when no run measured the figure at all.
fn level_value(
    c: &Convergence,
    settings: &Settings,
    confidence_level: f64,
    runs: &[&LevelResult],
) -> Result<Option<f64>, String> {
    let name = format!("{}_{}", c.metric, c.stat);
    let values: Vec<f64> = (runs.iter())
        .filter_map(|r| {
            let figures = run_figures(settings, r);
            figures
                .into_iter()
                .find(|f| f.name == name)
                .map(|f| f.value)
        })
        .collect();
    if values.is_empty() {
        let known: Vec<String> = (runs.iter().take(1))
            .flat_map(|r| run_figures(settings, r))
            .filter_map(|f| f.name.strip_suffix("_avg").map(str::to_string))
            .collect();
        return Err(format!(
            "{name} is not among the figures this run measured, so the runs go on to --num-profile-runs; its figures: {}",
            known.join(", ")
        ));
    }
    if values.len() < MIN_RUNS as usize {
        return Ok(None);
    }
    let Some(interval) = confidence::over(&values, confidence_level) else {
        return Ok(None);
    };
    if interval.mean == 0.0 {
        return Ok(None);
    }
    Ok(Some(match c.mode {
        ConvergenceMode::CiWidth => (interval.ci_high - interval.ci_low) / interval.mean.abs(),
        _ => interval.std / interval.mean.abs(),
    }))
}

/// The p-value of the latest run's requests at a level against the earlier runs' together.
fn distribution_p(
    c: &Convergence,
    level: LoadLevel,
    runs: &[Finished<'_>],
) -> Result<Option<f64>, String> {
    let per_run: Vec<&[f64]> = (runs.iter())
        .filter_map(|run| run.requests.iter().find(|r| r.level == level))
        .map(|r| r.values.as_slice())
        .collect();
    if per_run.iter().all(|v| v.is_empty()) {
        return Err(format!(
            "no request has a {} value, so the runs go on to --num-profile-runs",
            c.metric
        ));
    }
    let Some((latest, earlier)) = per_run.split_last() else {
        return Ok(None);
    };
    if per_run.len() < MIN_RUNS as usize {
        return Ok(None);
    }
    let earlier: Vec<f64> = earlier.concat();
    Ok(two_sample::ks_test(&earlier, latest).map(|t| t.p_value))
}

/// The record of the test for the results file.
pub fn record(c: &Convergence, runs: usize, j: &Judgement) -> ConvergenceRecord {
    ConvergenceRecord {
        metric: c.metric.clone(),
        stat: c.stat.clone(),
        mode: c.mode.name().to_string(),
        threshold: c.threshold,
        converged: j.converged,
        after_runs: runs,
        value: j.value,
        note: j.note.clone(),
    }
}
