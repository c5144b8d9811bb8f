//! The `profile` command end to end: resolve the target, read the model, build the dataset,
//! sweep the levels (or follow a load plan over time), and write every report — also when
//! the run is cut short — through [`Reports`], the one list of reports. `merge` writes the
//! same reports for a run merged from its shards' results files; `sweep` and `demo` run
//! this command's [`profile`] for each of their settings.

mod convergence;
mod open_files;
mod repeats;
mod sent;
mod token_counter;
pub mod variations;

pub use repeats::profile_runs;

use std::sync::Arc;

use crate::backend::api::kserve::trace::TraceChange;
use crate::backend::replicas::{self, Replicas};
use crate::backend::{Request, RequestShape, Target};
use crate::cli::ProfileArgs;
use crate::config::{Config, LoadMode};
use crate::data::{Dataset, PromptSettings};
use crate::load::plan::Plan;
use crate::load::profiler::{Interrupt, Profiler};
use crate::load::sequences::SequencePlan;
use crate::load::sessions::SessionPlan;
use crate::load::timeline::run_timeline;
use crate::measure::level::LevelResult;
use crate::measure::monitors::Monitors;
use crate::report::{Measured, Origin, Reports, Sent};
use crate::results::{self, Recorder, RunEnd, Settings};
use crate::scale_out::shards::Coordinator;
use crate::ui::progress::Live;
use inferperf_wire::error::{RunError, RunResult, EXIT_OK, EXIT_UNSTABLE};
use inferperf_wire::model::ModelSpec;

/// `inferperf profile`: the run these flags ask for (`given`: the command line as the
/// results file records it, header values hidden), with Ctrl-C watched; its exit code.
pub async fn run(args: &ProfileArgs, given: Vec<String>) -> RunResult<i32> {
    let mut cfg = Config::from_args(args)?;
    cfg.arguments = given;
    let interrupt = Arc::new(Interrupt::default());
    super::watch_ctrl_c(interrupt.clone());
    let result = profile_runs(&cfg, interrupt.clone()).await;
    super::interrupted(&interrupt, result.map(|outcome| outcome.exit_code))
}

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
    /// The servers with the warm-up's own requests, when they differ from the measured ones.
    pub warm_up_replicas: Option<Arc<Replicas>>,
}

impl Prepared {
    /// The profiler for this run, with its monitors (CPU, server statistics, metrics);
    /// also the sentences of the monitors that could not start.
    pub async fn profiler<'a>(
        &self,
        cfg: &'a Config,
        interrupt: Arc<Interrupt>,
    ) -> (Profiler<'a>, Vec<String>) {
        let started = Monitors::start(&cfg.measure, &self.target, &self.model).await;
        let profiler = Profiler::new(
            plan(cfg),
            self.replicas.clone(),
            self.dataset.clone(),
            interrupt,
        )
        .with_monitors(started.monitors)
        .with_sequences(self.sequences.clone())
        .with_warm_up_replicas(self.warm_up_replicas.clone());
        (profiler, started.notes)
    }
}

/// Resolves the servers, reads the model (the same from each) and encodes the requests.
pub async fn prepare(cfg: &Config) -> RunResult<Prepared> {
    // The whole input file is read and checked before anything is sent.
    let file = crate::data::load_dataset_file(&cfg.data.workload, cfg.load.seed)?;
    let targets = replicas::resolve_all(&cfg.target, RequestShape::of(&cfg.data)).await?;
    let model = match cfg.target.hooks.readiness {
        Some(readiness) => discover_when_ready(&targets, readiness).await?,
        None => replicas::discover_all(&targets).await?,
    };
    let model =
        (model.with_bls_calls(cfg.target.bls_composing_models())).map_err(RunError::bad_option)?;
    let prompts = match cfg.target.llm() {
        Some(llm) => Some(PromptSettings {
            llm,
            seed: cfg.load.seed,
            counter: Some(token_counter::for_run(llm, &targets[0]).await?),
            file,
        }),
        None => None,
    };
    let fixed_schedule = matches!(cfg.load.mode, LoadMode::FixedSchedule);
    let dataset = Dataset::build_with(&cfg.data, &model, prompts)?
        .for_shard(cfg.load.shard.as_ref(), fixed_schedule)?;
    let dataset = Arc::new(dataset);
    let replicas = Replicas::encode(&targets, &model, &dataset)?;
    let warm_up_replicas = match cfg.load.warm_up {
        Some(_) => replicas.for_warm_up(&model, &dataset)?.map(Arc::new),
        None => None,
    };
    let first = replicas.first().clone();
    let sequences = SequencePlan::for_run(&cfg.load.sequence, &model, &dataset).map(Arc::new);
    SessionPlan::for_run(&cfg.load, &dataset)?;
    let follows_plan = cfg.load.mode.timeline().is_some();
    if sequences.is_some() && (follows_plan || matches!(cfg.load.mode, LoadMode::Periodic(_))) {
        return Err(RunError::bad_option(format!(
            "Model '{}' is a sequence model, which --ramp, --load-steps and --periodic-concurrency-range do not play: use --concurrency-range, --request-rate-range or --request-intervals.",
            model.name
        )));
    }
    if let Some(shm) = first.target.shm() {
        shm.register(&first.target).await?;
    }
    if sequences.is_none() && cfg.load.sequence.flags_given {
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
        warm_up_replicas,
    })
}

/// AIPerf's `--wait-for-model-timeout`: the pre-flight check (the model listed, one short
/// request answered) tried every interval until it passes or the timeout is spent; then
/// its last sentence, said to be after the wait.
async fn discover_when_ready(
    targets: &[Arc<Target>],
    readiness: crate::config::Readiness,
) -> RunResult<ModelSpec> {
    let started = std::time::Instant::now();
    loop {
        let error = match replicas::discover_all(targets).await {
            Ok(model) => return Ok(model),
            Err(error) => error,
        };
        let left = readiness.timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(RunError::failed(format!(
                "The model was not ready within --wait-for-model-timeout {:.0} s; the last check said: {error}",
                readiness.timeout.as_secs_f64()
            )));
        }
        tokio::time::sleep(readiness.interval.min(left)).await;
    }
}

/// What the load box runs the levels under: the load and measure sections, with what the
/// other sections decide for it.
pub fn plan(cfg: &Config) -> Plan<'_> {
    Plan {
        load: &cfg.load,
        measure: &cfg.measure,
        batch_size: cfg.data.batch_size,
        llm: cfg.target.llm(),
        keep_histograms: cfg.output.results_path().is_some(),
        profile_export: cfg.output.profile_export_file.is_some(),
    }
}

/// The results file's settings of a run: each section of its configuration records its
/// part, with the command line.
pub fn recorded_settings(cfg: &Config) -> Settings {
    let mut settings = results::settings(
        &cfg.target,
        &cfg.data,
        &cfg.load,
        &cfg.measure,
        &cfg.output,
        &cfg.arguments,
    );
    settings.command_line = Some(results::command_line_record(&cfg.dialect));
    settings
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

/// Runs a profile, printing perf_analyzer's report as it goes and writing every report the
/// flags ask for (the results file first when the model is known, then after every level,
/// and completed however the run ends).
pub async fn profile(cfg: &Config, interrupt: Arc<Interrupt>) -> RunResult<ProfileOutcome> {
    open_files::check(&cfg.load, &cfg.target)?;
    // An unusable report path stops the run before anything is measured.
    let record = Recorder::new(recorded_settings(cfg));
    let mut reports = Reports::open(record, Origin::Measured)?;
    let coordinator = match Coordinator::join(&cfg.load).await {
        Ok(joined) => Arc::new(joined),
        Err(error) => return Err(ended_before_measuring(&mut reports, error)),
    };
    reports.set_clock_offset(coordinator.clock_offset_s());
    let prepared = match until_interrupted(prepare(cfg), &interrupt).await {
        Ok(prepared) => prepared,
        Err(error) => return Err(ended_before_measuring(&mut reports, error)),
    };
    let trace = match set_trace(cfg, &prepared.target).await {
        Ok(change) => change,
        Err(error) => {
            if let Some(shm) = prepared.target.shm() {
                shm.cleanup(&prepared.target).await;
            }
            return Err(ended_before_measuring(&mut reports, error));
        }
    };
    let outcome = run_prepared(cfg, &prepared, interrupt, &mut reports, coordinator).await;
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

/// The reports of a run that failed before its first level (the results file records the
/// error); the error itself.
fn ended_before_measuring(reports: &mut Reports, error: RunError) -> RunError {
    let end = RunEnd {
        error: Some(&error),
        ..RunEnd::default()
    };
    let _ = reports.finish(end, Measured::Nothing);
    error
}

/// `--trace-*` / `--log-frequency`: the model's trace settings set for the run.
async fn set_trace(cfg: &Config, target: &Target) -> RunResult<Option<TraceChange>> {
    let Some(settings) = cfg.target.trace_settings() else {
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
    reports: &mut Reports,
    coordinator: Arc<Coordinator>,
) -> RunResult<ProfileOutcome> {
    let bodies = || sent::openai_bodies(cfg, &prepared.dataset);
    let sent = Sent {
        dataset: &prepared.dataset,
        bodies: &bodies,
    };
    reports.start(&prepared.model, Some(&sent))?;
    if cfg.load.mode.timeline().is_some() {
        return follow_timeline(cfg, prepared, interrupt, reports).await;
    }
    if let Some(reset) = &cfg.target.hooks.reset_kv_cache {
        crate::backend::hooks::post(&prepared.target, reset, "--reset-kv-cache").await?;
    }
    let (profiler, notes) = prepared.profiler(cfg, interrupt.clone()).await;
    let mut profiler = profiler
        .with_ties(coordinator)
        .with_server_profiler(cfg.target.hooks.profiler.clone());
    for note in notes {
        println!("{note}");
    }
    let live = Live::for_stderr(&cfg.output, &plan(cfg));
    if let Some(hook) = live.hook() {
        profiler = profiler.with_progress(hook);
    }
    let outcome = profiler
        .measure_levels(|level| live.suspend(|| reports.level(level)))
        .await;
    live.finish();
    let error = outcome
        .error
        .or_else(|| nothing_succeeded(&outcome.results));
    let end = RunEnd {
        interrupted: interrupt.is_raised(),
        error: error.as_ref(),
        timeline_total: None,
    };
    reports.finish(end, Measured::Levels(&outcome.results))?;
    if let Some(error) = error {
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

/// A run whose every request failed measured nothing of the server: it ends in an error
/// (exit 99) that names the failures, its reports written all the same.
fn nothing_succeeded(results: &[LevelResult]) -> Option<RunError> {
    let windows = results.iter().flat_map(|r| r.windows.iter());
    let mut failures = std::collections::BTreeMap::new();
    let mut succeeded = 0;
    for window in windows {
        succeeded += window.ok;
        for (kind, count) in &window.errors {
            *failures.entry(kind.to_string()).or_insert(0u64) += count;
        }
    }
    let failed: u64 = failures.values().sum();
    if succeeded > 0 || failed == 0 {
        return None;
    }
    let kinds: Vec<String> = failures
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    Some(RunError::failed(format!(
        "No request succeeded: all {failed} failed ({}); the reports show them, and the server's answers say why.",
        kinds.join(", ")
    )))
}

pub(super) fn is_limit(result: &LevelResult) -> bool {
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
    reports: &mut Reports,
) -> RunResult<ProfileOutcome> {
    let live = Live::for_stderr(&cfg.output, &plan(cfg));
    if let Some(plan) = cfg.load.mode.timeline() {
        live.timeline_started(plan);
    }
    let outcome = run_timeline(
        plan(cfg),
        prepared.replicas.clone(),
        prepared.dataset.clone(),
        interrupt.clone(),
        |bucket| {
            live.bucket(bucket);
            live.suspend(|| reports.bucket(bucket));
        },
    )
    .await;
    live.finish();
    let end = RunEnd {
        interrupted: interrupt.is_raised(),
        error: outcome.error.as_ref(),
        timeline_total: (!outcome.buckets.is_empty()).then_some(&outcome.total),
    };
    let measured = Measured::Timeline {
        buckets: &outcome.buckets,
        total: &outcome.total,
    };
    reports.finish(end, measured)?;
    if let Some(error) = outcome.error {
        return Err(error);
    }
    Ok(ProfileOutcome {
        results: Vec::new(),
        exit_code: EXIT_OK,
    })
}
