//! AIPerf's repeated runs (`--num-profile-runs N`): the whole profile N times, one run after
//! the other as AIPerf runs them (each with its warm-up or not, its seed, and its reports in
//! `profile_runs/run_NNNN`), a pause between runs; then each figure of each level over the
//! runs — its mean, spread and confidence interval — on the console, in AIPerf's aggregate
//! files and in the `repetitions` of the results file, which also holds every run's levels.
//! With `--convergence-metric` the runs stop once its figure has settled.

use std::path::Path;
use std::sync::Arc;

use super::convergence::{self, RequestValues};
use super::{profile, recorded_settings, ProfileOutcome};
use crate::config::convergence::Convergence;
use crate::config::{repetition_label, Config};
use crate::load::profiler::Interrupt;
use crate::measure::confidence;
use crate::measure::level::{LevelResult, LoadLevel};
use crate::report::compare::model::load_text;
use crate::report::llm::artifacts::level_folder_name;
use crate::report::repeats::{self, run_figures};
use crate::results::{
    self, ConvergenceRecord, RepeatedFigure, RepeatedLevel, RepetitionRun, Repetitions, Settings,
};
use inferperf_wire::error::{RunError, RunResult, EXIT_OK};

/// One profile run: its label, configuration and how it ended.
struct Ran {
    label: String,
    cfg: Config,
    outcome: RunResult<ProfileOutcome>,
    /// The per-request values the adaptive stop's distribution test compares.
    requests: Vec<RequestValues>,
}

/// The profile `cfg` asks for, run `--num-profile-runs` times (once: the plain profile).
pub async fn profile_runs(cfg: &Config, interrupt: Arc<Interrupt>) -> RunResult<ProfileOutcome> {
    let repeats = &cfg.measure.repeats;
    if !repeats.repeated() {
        return profile(cfg, interrupt).await;
    }
    let settings = recorded_settings(cfg);
    let mut ran: Vec<Ran> = Vec::new();
    let mut judged = None;
    for index in 0..repeats.runs {
        let mut run_cfg = cfg.clone();
        run_cfg.for_repetition(index);
        let label = repetition_label(index);
        println!(
            "=== Profile run {} of {} ({label}) ===",
            index + 1,
            repeats.runs
        );
        let mut outcome = profile(&run_cfg, interrupt.clone()).await;
        if let Err(error) = &outcome {
            eprintln!("error: {label}: {error}");
        }
        let requests = match (&repeats.convergence, &mut outcome) {
            (Some(c), Ok(o)) => convergence::take_requests(c, &settings, &mut o.results),
            _ => Vec::new(),
        };
        ran.push(Ran {
            label,
            cfg: run_cfg,
            outcome,
            requests,
        });
        if interrupt.is_raised() {
            break;
        }
        if let Some(c) = &repeats.convergence {
            let j = judge_runs(c, &settings, repeats.confidence, &ran);
            let record = convergence::record(c, ran.len(), &j);
            // A figure no run measured is said once.
            let said_before = (judged.as_ref())
                .is_some_and(|r: &ConvergenceRecord| r.note.is_some() && r.note == record.note);
            if !said_before {
                println!("{}", repeats::convergence_sentence(&record));
            }
            judged = Some(record);
            if j.converged {
                break;
            }
        }
        if index + 1 < repeats.runs && !repeats.cooldown.is_zero() {
            interrupt.sleep(repeats.cooldown).await;
        }
    }
    let mut repetitions = summarise(cfg, &settings, &ran);
    repetitions.convergence = judged;
    println!();
    print!("{}", repeats::block(&repetitions, |l| load_text(&l.load)));
    write_aggregates(cfg, &settings, &repetitions)?;
    if let Some(path) = cfg.output.results_path() {
        write_results(&path, cfg.output.report_dir.as_deref(), &ran, repetitions)?;
    }
    outcome_of(ran)
}

/// The adaptive stop's test over the runs that finished.
fn judge_runs(
    c: &Convergence,
    settings: &Settings,
    confidence_level: f64,
    ran: &[Ran],
) -> convergence::Judgement {
    let finished: Vec<convergence::Finished<'_>> = (ran.iter())
        .filter(|run| run.outcome.is_ok())
        .map(|run| convergence::Finished {
            levels: measured(run),
            requests: &run.requests,
        })
        .collect();
    convergence::judge(c, settings, confidence_level, &finished)
}

/// The levels a run measured (none when it failed).
fn measured(run: &Ran) -> &[LevelResult] {
    run.outcome.as_ref().map_or(&[], |o| &o.results)
}

/// The exit of the repeated profile: the first failed run's error, else the last run's
/// levels with the highest exit code (2 when a level of any run was unstable).
fn outcome_of(ran: Vec<Ran>) -> RunResult<ProfileOutcome> {
    let mut exit_code = EXIT_OK;
    let mut last = None;
    for run in ran {
        let outcome = run.outcome?;
        exit_code = exit_code.max(outcome.exit_code);
        last = Some(outcome.results);
    }
    let results = last.ok_or_else(|| RunError::failed("No profile run was measured."))?;
    Ok(ProfileOutcome { results, exit_code })
}

/// Every run's record and, per level of the first run that measured any, each figure over
/// the runs.
fn summarise(cfg: &Config, settings: &Settings, ran: &[Ran]) -> Repetitions {
    let runs = (ran.iter())
        .map(|run| {
            let file = run.cfg.output.results_path();
            let levels = (file.as_ref()).and_then(|p| results::read(p).ok());
            RepetitionRun {
                label: run.label.clone(),
                results_file: file.map(|p| p.display().to_string()),
                error: run.outcome.as_ref().err().map(|e| e.to_string()),
                measured: measured(run).len(),
                levels: levels.map(|f| f.levels).unwrap_or_default(),
            }
        })
        .collect();
    let first = ran.iter().map(measured).find(|levels| !levels.is_empty());
    let levels = (first.unwrap_or_default().iter())
        .map(|level| repeated_level(settings, level.level, ran, cfg))
        .collect();
    Repetitions {
        confidence_level: cfg.measure.repeats.confidence,
        asked: cfg.measure.repeats.runs,
        cooldown_s: cfg.measure.repeats.cooldown.as_secs_f64(),
        runs,
        levels,
        convergence: None,
    }
}

/// A level's figures over the runs that measured it.
fn repeated_level(
    settings: &Settings,
    level: LoadLevel,
    ran: &[Ran],
    cfg: &Config,
) -> RepeatedLevel {
    let per_run: Vec<Vec<repeats::RunFigure>> = (ran.iter())
        .map(|run| {
            (measured(run).iter())
                .find(|r| r.level == level)
                .map(|r| run_figures(settings, r))
                .unwrap_or_default()
        })
        .collect();
    let mut figures = std::collections::BTreeMap::new();
    for f in per_run.iter().flatten() {
        if figures.contains_key(&f.name) {
            continue;
        }
        let values: Vec<Option<f64>> = (per_run.iter())
            .map(|run| run.iter().find(|g| g.name == f.name).map(|g| g.value))
            .collect();
        let finite: Vec<f64> = values.iter().flatten().copied().collect();
        if let Some(interval) = confidence::over(&finite, cfg.measure.repeats.confidence) {
            let figure = RepeatedFigure {
                unit: f.unit.clone(),
                values,
                interval,
            };
            figures.insert(f.name.clone(), figure);
        }
    }
    RepeatedLevel {
        load: level.into(),
        figures,
    }
}

/// AIPerf's aggregate files, in `aggregate/` of the artifact folder (an AIPerf command
/// line's one level), or of each level's folder.
fn write_aggregates(cfg: &Config, settings: &Settings, rep: &Repetitions) -> RunResult<()> {
    let Some(dir) = cfg.target.llm().and_then(|l| l.artifact_dir.clone()) else {
        return Ok(());
    };
    let aiperf = (settings.command_line.as_ref()).is_some_and(|c| c.is_aiperf());
    for level in &rep.levels {
        let folder = match (aiperf, level.load) {
            (true, _) => dir.join("aggregate"),
            (false, load) => dir
                .join("aggregate")
                .join(level_folder_name(settings, load.into())),
        };
        let files = [
            (
                "profile_export_aiperf_aggregate.json",
                repeats::aggregate_json(rep, level).pretty(),
            ),
            (
                "profile_export_aiperf_aggregate.csv",
                repeats::aggregate_csv(rep, level),
            ),
        ];
        std::fs::create_dir_all(&folder).map_err(|e| write_error(&folder, &e))?;
        for (name, text) in files {
            let path = folder.join(name);
            std::fs::write(&path, text).map_err(|e| write_error(&path, &e))?;
        }
    }
    Ok(())
}

/// The results file of the repeated profile: the first run's that measured a level, with
/// every run and the intervals in `repetitions`; and with `--report-dir` its page.
fn write_results(
    path: &Path,
    report_dir: Option<&Path>,
    ran: &[Ran],
    rep: Repetitions,
) -> RunResult<()> {
    // The first run that measured a level, else the first file any run left.
    let measured =
        (ran.iter()).filter(|run| run.outcome.as_ref().is_ok_and(|o| !o.results.is_empty()));
    let first = (measured.chain(ran.iter()))
        .find_map(|run| results::read(run.cfg.output.results_path()?).ok());
    let Some(mut file) = first else {
        return Ok(());
    };
    // The repeated profile is finished only when every run asked for ran and finished.
    if let Some(error) = ran.iter().find_map(|run| run.outcome.as_ref().err()) {
        file.finished = false;
        file.error.get_or_insert_with(|| error.to_string());
    }
    let settled = rep.convergence.as_ref().is_some_and(|c| c.converged);
    if (ran.len() as u32) < rep.asked && !settled {
        file.finished = false;
        file.interrupted = true;
    }
    file.repetitions = Some(rep);
    results::write_file(path, &file).map_err(|e| write_error(path, &e))?;
    // A report folder's page shows the runs too.
    if let Some(dir) = report_dir {
        let page = dir.join("report.html");
        crate::report::html::write(&file, &page).map_err(|e| write_error(&page, &e))?;
    }
    Ok(())
}

fn write_error(path: &Path, e: &std::io::Error) -> RunError {
    RunError::failed(format!(
        "Cannot write the repeated runs' figures to {}: {e}.",
        path.display()
    ))
}
