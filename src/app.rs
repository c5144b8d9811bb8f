//! The `profile` command end to end: resolve the target, read the model, build the dataset,
//! sweep the levels (or follow a load plan over time), and write every report — also when
//! the run is cut short. `merge` (in [`merge`]) writes the same reports for a run merged
//! from its shards' results files.

pub mod merge;
mod token_counter;

use std::sync::Arc;

use crate::backend::api::kserve::trace::TraceChange;
use crate::backend::replicas::{self, Replicas};
use crate::backend::{Request, Target};
use crate::config::{Config, LoadMode};
use crate::data::Dataset;
use crate::error::{RunError, RunResult, EXIT_OK, EXIT_UNSTABLE};
use crate::load::profiler::{Interrupt, Profiler};
use crate::load::sequences::SequencePlan;
use crate::load::shards::Coordinator;
use crate::load::timeline::run_timeline;
use crate::measure::level::LevelResult;
use crate::measure::monitors::Monitors;
use crate::measure::timeline::Bucket;
use crate::measure::window::WindowStats;
use crate::model::ModelSpec;
use crate::report;
use crate::report::profile_export::ProfileExportFile;
use crate::report::progress::Live;
use crate::results::{ResultsWriter, RunEnd};

/// The target, model, dataset and encoded requests of a run, ready to drive.
pub struct Prepared {
    /// The first (usually only) server: the one statistics and metrics are read from.
    pub target: Arc<Target>,
    pub model: ModelSpec,
    pub dataset: Arc<Dataset>,
    /// The dataset's entries as the first server's API sends them, encoded once.
    pub requests: Arc<Vec<Request>>,
    /// Every `-u` server with the requests encoded for it (the first one is the above).
    pub replicas: Arc<Replicas>,
    /// How sequences are played, when the model is a sequence model.
    pub sequences: Option<Arc<SequencePlan>>,
}

impl Prepared {
    /// The profiler for this run, with its monitors (CPU, server statistics, metrics);
    /// also the sentences of the monitors that could not start.
    pub async fn profiler<'a>(
        &self,
        cfg: &'a Config,
        interrupt: Arc<Interrupt>,
    ) -> (Profiler<'a>, Vec<String>) {
        let started = Monitors::start(cfg, &self.target, &self.model).await;
        let profiler = Profiler::new(cfg, self.replicas.clone(), self.dataset.clone(), interrupt)
            .with_monitors(started.monitors)
            .with_sequences(self.sequences.clone());
        (profiler, started.notes)
    }
}

/// Resolves the servers, reads the model (the same from each) and encodes the requests.
pub async fn prepare(cfg: &Config) -> RunResult<Prepared> {
    let targets = replicas::resolve_all(cfg).await?;
    let model = replicas::discover_all(&targets).await?;
    let model = (model.with_bls_calls(cfg.bls_composing_models())).map_err(RunError::bad_option)?;
    let counter = match cfg.llm() {
        Some(llm) => Some(token_counter::for_run(llm, &targets[0]).await?),
        None => None,
    };
    let dataset = Arc::new(Dataset::build_with(cfg, &model, counter)?);
    let replicas = Replicas::encode(&targets, &model, &dataset)?;
    let first = replicas.first().clone();
    let sequences = SequencePlan::for_run(&cfg.sequence, &model, &dataset).map(Arc::new);
    let follows_plan = cfg.load.timeline().is_some();
    if sequences.is_some() && (follows_plan || matches!(cfg.load, LoadMode::Periodic(_))) {
        return Err(RunError::bad_option(format!(
            "Model '{}' is a sequence model, which --ramp, --load-steps and --periodic-concurrency-range do not play: use --concurrency-range, --request-rate-range or --request-intervals.",
            model.name
        )));
    }
    if let Some(shm) = first.target.shm() {
        shm.register(&first.target).await?;
    }
    if sequences.is_none() && cfg.sequence.flags_given {
        println!(
            "Note: model '{}' is not a sequence model (no sequence_batching in its configuration); the sequence flags are ignored, as perf_analyzer ignores them.",
            model.name
        );
    }
    Ok(Prepared {
        target: first.target,
        model,
        dataset,
        requests: first.requests,
        replicas: Arc::new(replicas),
        sequences,
    })
}

/// Runs `step` (resolving, discovery) unless Ctrl-C comes first: a stalled server must not
/// hold the run for a whole request timeout.
pub async fn until_interrupted<T>(
    step: impl std::future::Future<Output = RunResult<T>>,
    interrupt: &Interrupt,
) -> RunResult<T> {
    tokio::select! {
        done = step => done,
        _ = interrupt.raised() => Err(RunError::failed(
            "Interrupted before the first level: nothing was measured.",
        )),
    }
}

/// What a finished profile measured, and the exit code it earns (0, or 2 when a level was
/// unstable).
pub struct ProfileOutcome {
    pub results: Vec<LevelResult>,
    pub exit_code: i32,
}

/// Runs a profile, printing perf_analyzer's report as it goes and writing the CSV and the
/// results file (`--report-dir`, `--results-file`: first when the model is known, then after
/// every level, and completed however the run ends).
pub async fn profile(cfg: &Config, interrupt: Arc<Interrupt>) -> RunResult<ProfileOutcome> {
    crate::load::open_files::check(cfg)?;
    // An unusable results path stops the run before anything is measured.
    let mut results = ResultsWriter::start(cfg)?;
    probe_csv(cfg)?;
    let coordinator = match Coordinator::join(cfg).await {
        Ok(joined) => Arc::new(joined),
        Err(error) => {
            let _ = results.finish(RunEnd {
                error: Some(&error),
                ..RunEnd::default()
            });
            return Err(error);
        }
    };
    results.set_clock_offset(coordinator.clock_offset_s());
    let prepared = match until_interrupted(prepare(cfg), &interrupt).await {
        Ok(prepared) => prepared,
        Err(error) => {
            let _ = results.finish(RunEnd {
                error: Some(&error),
                ..RunEnd::default()
            });
            return Err(error);
        }
    };
    let trace = match set_trace(cfg, &prepared.target).await {
        Ok(change) => change,
        Err(error) => {
            if let Some(shm) = prepared.target.shm() {
                shm.cleanup(&prepared.target).await;
            }
            let _ = results.finish(RunEnd {
                error: Some(&error),
                ..RunEnd::default()
            });
            return Err(error);
        }
    };
    let outcome = run_prepared(cfg, &prepared, interrupt, &mut results, coordinator).await;
    if let Some(shm) = prepared.target.shm() {
        shm.cleanup(&prepared.target).await;
    }
    let Some(change) = trace else {
        return outcome;
    };
    // Put back what the run changed, however it ended; failing to is the run's error.
    match (change.restore(&prepared.target).await, outcome) {
        (Err(restore), Ok(_)) => Err(restore),
        (Err(restore), Err(error)) => {
            eprintln!("error: {restore}");
            Err(error)
        }
        (Ok(()), outcome) => outcome,
    }
}

/// `--trace-*` / `--log-frequency`: the model's trace settings set for the run.
async fn set_trace(cfg: &Config, target: &Target) -> RunResult<Option<TraceChange>> {
    let Some(settings) = cfg.trace_settings() else {
        return Ok(None);
    };
    crate::backend::api::kserve::trace::apply(target, settings)
        .await
        .map(Some)
}

/// The run of a prepared target: the sweep (or load plan) and every report.
async fn run_prepared(
    cfg: &Config,
    prepared: &Prepared,
    interrupt: Arc<Interrupt>,
    results: &mut ResultsWriter<'_>,
    coordinator: Arc<Coordinator>,
) -> RunResult<ProfileOutcome> {
    results.set_model(&prepared.model);
    print_preamble(cfg, &prepared.model);
    if cfg.load.timeline().is_some() {
        return follow_timeline(cfg, prepared, interrupt, results).await;
    }
    let (profiler, notes) = prepared.profiler(cfg, interrupt.clone()).await;
    let mut profiler = profiler.with_coordinator(coordinator);
    for note in notes {
        println!("{note}");
    }
    let live = Live::for_stderr(cfg);
    if let Some(hook) = live.hook() {
        profiler = profiler.with_progress(hook);
    }
    let mut artifacts = report::llm::Artifacts::start(cfg, &prepared.dataset)?;
    let mut export = ProfileExportFile::start(cfg, &prepared.dataset)?;
    let outcome = profiler
        .sweep(|level| {
            live.suspend(|| print!("{}", report::level_block(cfg, &prepared.model, level)));
            artifacts.write_level(level);
            export.write_level(level);
            results.add_level(level);
            // Cheap beside a level: the page is there while the run goes on.
            let _ = write_html(cfg, results);
        })
        .await;
    live.finish();
    let written = results.finish(RunEnd {
        interrupted: interrupt.is_raised(),
        error: outcome.error.as_ref(),
        timeline_total: None,
    });
    let written = written.and(write_html(cfg, results)).and(export.finish());
    finish(cfg, &prepared.model, &outcome.results)?;
    artifacts.finish()?;
    written?;
    if let Some(error) = outcome.error {
        return Err(error);
    }
    if outcome.results.is_empty() {
        return Err(RunError::failed("No level was measured."));
    }
    let unstable = outcome
        .results
        .iter()
        .any(|r| !r.is_stable() && !is_limit(r));
    Ok(ProfileOutcome {
        exit_code: if unstable { EXIT_UNSTABLE } else { EXIT_OK },
        results: outcome.results,
    })
}

/// Every CSV the run writes can be written (checked before anything is measured).
fn probe_csv(cfg: &Config) -> RunResult<()> {
    for path in cfg.csv_paths() {
        report::csv::probe(&path).map_err(|e| {
            RunError::bad_option(format!(
                "-f {} cannot be written: {e}. Choose a file in a folder that exists and can be written.",
                path.display()
            ))
        })?;
    }
    if let Some(path) = &cfg.per_url_csv {
        report::csv::probe(path).map_err(|e| {
            RunError::bad_option(format!(
                "--per-url-csv {} cannot be written: {e}. Choose a file in a folder that exists and can be written.",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// `--report-dir DIR`: writes `DIR/report.html` from the results file as it stands.
fn write_html(cfg: &Config, results: &ResultsWriter<'_>) -> RunResult<()> {
    let Some(dir) = &cfg.report_dir else {
        return Ok(());
    };
    let path = dir.join("report.html");
    report::html::write(results.file(), &path).map_err(|e| {
        RunError::failed(format!(
            "Cannot write the HTML report {}: {e}.",
            path.display()
        ))
    })
}

fn is_limit(result: &LevelResult) -> bool {
    use crate::measure::level::LevelEnd;
    matches!(
        result.end,
        LevelEnd::OverLatencyLimit | LevelEnd::MissedSlo | LevelEnd::Interrupted
    )
}

/// Runs a `--ramp` / `--load-steps` plan, printing a line per second, then the totals and
/// the time-series CSV. There are no levels, so no stability exit code.
async fn follow_timeline(
    cfg: &Config,
    prepared: &Prepared,
    interrupt: Arc<Interrupt>,
    results: &mut ResultsWriter<'_>,
) -> RunResult<ProfileOutcome> {
    print!("{}", report::timeline_header(cfg));
    let live = Live::for_stderr(cfg);
    if let Some(plan) = cfg.load.timeline() {
        live.timeline_started(plan);
    }
    let outcome = run_timeline(
        cfg,
        prepared.replicas.clone(),
        prepared.dataset.clone(),
        interrupt.clone(),
        |bucket| {
            live.bucket(bucket);
            live.suspend(|| print!("{}", report::bucket_line(cfg, bucket)));
            results.add_bucket(bucket);
        },
    )
    .await;
    live.finish();
    let written = results.finish(RunEnd {
        interrupted: interrupt.is_raised(),
        error: outcome.error.as_ref(),
        timeline_total: (!outcome.buckets.is_empty()).then_some(&outcome.total),
    });
    let written = written.and(write_html(cfg, results));
    finish_timeline(cfg, &outcome.buckets, &outcome.total)?;
    written?;
    if let Some(error) = outcome.error {
        return Err(error);
    }
    Ok(ProfileOutcome {
        results: Vec::new(),
        exit_code: EXIT_OK,
    })
}

fn finish_timeline(cfg: &Config, buckets: &[Bucket], total: &WindowStats) -> RunResult<()> {
    if buckets.is_empty() {
        return Ok(());
    }
    println!();
    print!("{}", report::timeline_summary(cfg, buckets, total));
    for path in cfg.csv_paths() {
        report::write_timeline_csv(cfg, buckets, &path).map_err(|e| csv_error(&path, e))?;
    }
    if let Some(path) = &cfg.per_url_csv {
        report::replicas::write_per_url_timeline_csv(cfg, buckets)
            .map_err(|e| csv_error(path, e))?;
    }
    Ok(())
}

fn csv_error(path: &std::path::Path, e: std::io::Error) -> RunError {
    RunError::failed(format!(
        "Cannot write the CSV report to {}: {e}.",
        path.display()
    ))
}

fn print_preamble(cfg: &Config, model: &ModelSpec) {
    print!(
        "{}",
        report::settings_block(cfg, cfg.service_kind().label())
    );
    if cfg.verbose > 0 {
        println!("Model '{}' ({}):", model.name, model.platform);
        for input in &model.inputs {
            println!(
                "  input {} {} {:?}",
                input.name, input.datatype, input.shape
            );
        }
        for output in &model.outputs {
            println!(
                "  output {} {} {:?}",
                output.name, output.datatype, output.shape
            );
        }
        println!("  max_batch_size: {}", batch_text(model));
        println!();
    }
}

fn batch_text(model: &ModelSpec) -> String {
    match model.max_batch_size {
        u32::MAX => "unknown (no model configuration; batch dimension assumed)".into(),
        n => n.to_string(),
    }
}

/// Prints the summary and writes the CSV; the results are never lost to a later error.
fn finish(cfg: &Config, model: &ModelSpec, results: &[LevelResult]) -> RunResult<()> {
    if results.is_empty() {
        return Ok(());
    }
    print!("{}", report::summary_block(cfg, results));
    if let Some(block) = report::search_block(cfg, results) {
        println!();
        print!("{block}");
    }
    for path in cfg.csv_paths() {
        report::write_csv(cfg, model, results, &path).map_err(|e| csv_error(&path, e))?;
    }
    if let Some(path) = &cfg.per_url_csv {
        report::replicas::write_per_url_csv(cfg, results).map_err(|e| csv_error(path, e))?;
    }
    Ok(())
}
