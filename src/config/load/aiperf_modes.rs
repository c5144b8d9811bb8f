//! AIPerf's shapes of the measured load (`cli::AiperfLoadModeArgs`), checked with AIPerf's
//! rules and the flags the user typed named: ramps of the concurrency, the rate and the
//! prefill concurrency (the measured phase's and the warm-up's, a warm-up ramp falling
//! back to the run's as in AIPerf), `--request-rate-series`, `--user-centric-rate` with
//! `--num-users`, `--slice-duration` and `--failed-request-threshold`. Each shapes one
//! measurement (a request count, a session count or a duration), never perf_analyzer's
//! stable windows. A series or a user-centric rate makes the run a rate run here, after
//! the warm-up was read from the flags, so that the warm-up takes AIPerf's shape (a
//! concurrency: neither is `--request-rate`).

use std::time::Duration;

use super::rate_series::RateSeries;
use crate::cli::{AiperfLoadModeArgs, ProfileArgs};
use crate::config::{ArrivalPattern, ConcurrencyRange, Config, LoadMode, RateRange, WarmUpShape};
use inferperf_wire::error::{RunError, RunResult};

/// The load shapes of a run (all `None`: none asked).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadModes {
    /// The measured phase's ramps and prefill limit.
    pub run: PhaseShape,
    /// The warm-up's (its own flags, else the run's).
    pub warm_up: PhaseShape,
    pub user_centric: Option<UserCentric>,
    pub rate_series: Option<RateSeries>,
    /// `--slice-duration`: the measurement's slices.
    pub slice: Option<Duration>,
    /// `--failed-request-threshold`: the share of failures that stops the run.
    pub failed_threshold: Option<f64>,
    /// Flags accepted that change nothing in this run, as in AIPerf, one sentence each.
    pub notes: Vec<String>,
}

/// The ramps and prefill limit of one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseShape {
    /// The concurrency (or the in-flight cap of a rate) rises from 1 over this long.
    pub concurrency_ramp: Option<Duration>,
    /// The rate rises from rate·0.1/duration over this long, in 0.1-s steps.
    pub rate_ramp: Option<Duration>,
    pub prefill: Option<Prefill>,
}

/// `--prefill-concurrency`: at most `limit` requests waiting for their first token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefill {
    pub limit: u32,
    /// The limit rises from 1 over this long.
    pub ramp: Option<Duration>,
}

/// `--user-centric-rate` with `--num-users`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UserCentric {
    /// Requests per second the users send together.
    pub rate: f64,
    pub users: u32,
}

impl UserCentric {
    /// The wait between two turns of one user: users / rate seconds.
    pub fn turn_gap(&self) -> Duration {
        inferperf_wire::number::saturating_secs(self.users as f64 / self.rate)
    }
}

impl LoadModes {
    /// The shapes of the warm-up's own driver: its ramps and prefill, nothing else.
    pub fn for_warm_up(&self) -> LoadModes {
        LoadModes {
            run: self.warm_up,
            ..LoadModes::default()
        }
    }

    /// Whether the measured phase has anything that changes over time.
    pub fn ramps(&self) -> bool {
        let run = &self.run;
        run.concurrency_ramp.is_some() || run.prefill.is_some_and(|p| p.ramp.is_some())
    }
}

/// What `apply` reads of the run beside the flags.
struct Run<'a> {
    args: &'a ProfileArgs,
    flags: &'a AiperfLoadModeArgs,
    /// The in-flight cap of a rate (`--concurrency` beside a rate, or a series' or a
    /// user-centric rate's `--concurrency`).
    cap: Option<u32>,
}

/// Reads the load-shape flags into `config.load.modes`, making a series or a user-centric
/// rate the run's load mode.
pub(in crate::config) fn apply(config: &mut Config, args: &ProfileArgs) -> RunResult<()> {
    let flags = &args.aiperf_modes;
    let given = flags.given();
    let Some(&first) = given.first() else {
        return Ok(());
    };
    if config.load.mode.timeline().is_some() || matches!(config.load.mode, LoadMode::Periodic(_)) {
        return Err(RunError::bad_option(format!(
            "{first} shapes AIPerf's one measured phase; --ramp, --load-steps and --periodic-concurrency-range plan their own load: drop one."
        )));
    }
    let mut run = Run {
        args,
        flags,
        cap: config.load.max_concurrency,
    };
    let mut modes = LoadModes {
        user_centric: user_centric(&run, config)?,
        rate_series: series(&run, config)?,
        ..LoadModes::default()
    };
    become_rate(config, &mut run, &modes)?;
    modes.run = run_shape(&run, config, &modes)?;
    modes.warm_up = warm_up_shape(&run, config)?;
    modes.slice = flags
        .slice_duration
        .map(|s| seconds("--slice-duration", s))
        .transpose()?;
    modes.failed_threshold = flags
        .failed_request_threshold
        .map(|x| {
            inferperf_wire::number::within("--failed-request-threshold", x, 0.0, 1.0, "(a share)")
        })
        .transpose()?;
    modes.notes = notes(&run, config, &modes);
    check_one_measurement(config, flags)?;
    if let Some(users) = modes.user_centric {
        user_centric_artifact_dir(config, users);
    }
    config.load.modes = modes;
    Ok(())
}

/// AIPerf's artifact folder of a user-centric run when its line names none:
/// `artifacts/<model>-openai-<type>-user_centric-users<N>-qps<Q>`.
fn user_centric_artifact_dir(config: &mut Config, users: UserCentric) {
    if !config.dialect.is_aiperf() {
        return;
    }
    let model = config.target.model_name.replace('/', "_");
    let Some(llm) = config.target.llm_mut() else {
        return;
    };
    if llm.artifact_dir.is_none() {
        let qps = inferperf_wire::number::python_float(users.rate);
        let name = format!(
            "{model}-openai-{}-user_centric-users{}-qps{qps}",
            llm.endpoint.kind_name(),
            users.users
        );
        llm.artifact_dir = Some(std::path::Path::new("artifacts").join(name));
    }
}

/// Seconds of a ramp or a slice: above 0, at most a day.
fn seconds(flag: &str, value: f64) -> RunResult<Duration> {
    crate::config::bounds::seconds_flag(flag, value, crate::config::bounds::MIN_TIMEOUT_S)
}

/// `--user-centric-rate` with `--num-users`, with AIPerf's rules.
fn user_centric(run: &Run, config: &Config) -> RunResult<Option<UserCentric>> {
    let flags = run.flags;
    let (rate, users) = match (flags.user_centric_rate, flags.num_users) {
        (None, None) => return Ok(None),
        (None, Some(_)) => {
            return Err(RunError::bad_option(
                "--num-users counts the users of --user-centric-rate: add --user-centric-rate QPS, or drop --num-users.",
            ))
        }
        (Some(_), None) => {
            return Err(RunError::bad_option(
                "--user-centric-rate shares its rate among --num-users simulated users: add --num-users N.",
            ))
        }
        (Some(rate), Some(users)) => (rate, users),
    };
    let rate = crate::config::bounds::rate(rate, "--user-centric-rate")?;
    if users == 0 {
        return Err(RunError::bad_option(
            "--num-users 0 simulates no user: give 1 or more.",
        ));
    }
    let args = run.args;
    if args.fixed_schedule || args.request_intervals.is_some() {
        return Err(RunError::bad_option(
            "--user-centric-rate and --fixed-schedule (or --request-intervals) are two load modes: choose one.",
        ));
    }
    let turns = args.sessions.turns_mean.unwrap_or(1);
    if turns < 2 {
        return Err(RunError::bad_option(format!(
            "--user-centric-rate plays multi-turn sessions, and --conversation-turn-mean is {turns}: give --conversation-turn-mean 2 or more (for single requests use --request-rate)."
        )));
    }
    let bounds = [
        ("--request-count", config.load.request_count),
        ("--conversation-num", config.load.session_count),
    ];
    for (flag, count) in bounds {
        if let Some(n) = count.filter(|&n| n < users as u64) {
            return Err(RunError::bad_option(format!(
                "{flag} is {n}, fewer than --num-users {users}: each user needs one at least; raise it or lower --num-users."
            )));
        }
    }
    Ok(Some(UserCentric { rate, users }))
}

/// `--request-rate-series FILE`, with AIPerf's rules.
fn series(run: &Run, _config: &Config) -> RunResult<Option<RateSeries>> {
    let Some(path) = &run.flags.request_rate_series else {
        return Ok(None);
    };
    let args = run.args;
    let conflict = [
        ("--request-rate", args.aiperf.request_rate.is_some()),
        ("--request-rate-range", args.request_rate_range.is_some()),
        ("--user-centric-rate", run.flags.user_centric_rate.is_some()),
        ("--fixed-schedule", args.fixed_schedule),
        ("--request-intervals", args.request_intervals.is_some()),
    ];
    if let Some((flag, _)) = conflict.iter().find(|c| c.1) {
        return Err(RunError::bad_option(format!(
            "--request-rate-series and {flag} both set when requests go: give one."
        )));
    }
    RateSeries::read(path).map(Some)
}

/// A series or a user-centric rate as the run's load mode: a rate (the series' first, or
/// the users' together), with the concurrency given as its in-flight cap.
fn become_rate(config: &mut Config, run: &mut Run, modes: &LoadModes) -> RunResult<()> {
    let (rate, distribution) = match (&modes.user_centric, &modes.rate_series) {
        (Some(users), _) => (users.rate, ArrivalPattern::Constant),
        (None, Some(series)) => (series.initial_qps(), series_distribution(run.args)?),
        (None, None) => return Ok(()),
    };
    let load = &mut config.load;
    if load.mode == LoadMode::Concurrency {
        let typed = run.args.concurrency_range.is_some() || load.session_concurrency.is_some();
        run.cap = typed.then_some(load.concurrency.start);
        if load.concurrency.end != load.concurrency.start {
            return Err(RunError::bad_option(
                "--concurrency beside a series or a user-centric rate caps the requests in flight: give one value.",
            ));
        }
    }
    load.mode = LoadMode::RequestRate {
        range: RateRange {
            start: rate,
            end: rate,
            step: 1.0,
        },
        distribution,
    };
    load.max_concurrency = run.cap;
    load.concurrency = ConcurrencyRange {
        start: 1,
        end: 1,
        step: 1,
    };
    load.session_concurrency = None;
    Ok(())
}

/// A series' gaps: `--arrival-pattern` (or `--request-distribution`), Poisson by default
/// as AIPerf's.
fn series_distribution(args: &ProfileArgs) -> RunResult<ArrivalPattern> {
    let named = args.request_distribution.is_some()
        || args.aiperf.arrival_pattern.is_some()
        || args.aiperf.arrival_smoothness.is_some();
    match named {
        true => super::arrival::parse_distribution(args),
        false => Ok(ArrivalPattern::Poisson),
    }
}

/// The measured phase's ramps and prefill limit.
fn run_shape(run: &Run, config: &Config, modes: &LoadModes) -> RunResult<PhaseShape> {
    let flags = run.flags;
    let concurrency_ramp = flags
        .concurrency_ramp_duration
        .map(|s| seconds("--concurrency-ramp-duration", s))
        .transpose()?;
    let rate_ramp = flags
        .request_rate_ramp_duration
        .map(|s| seconds("--request-rate-ramp-duration", s))
        .transpose()?;
    if rate_ramp.is_some() && !matches!(config.load.mode, LoadMode::RequestRate { .. }) {
        return Err(RunError::bad_option(
            "--request-rate-ramp-duration ramps a request rate: add --request-rate R (or --user-centric-rate), or drop it.",
        ));
    }
    // A user-centric rate does not move (AIPerf's users keep their gap); noted instead.
    let rate_ramp = rate_ramp.filter(|_| modes.user_centric.is_none());
    let prefill = prefill(
        ("--prefill-concurrency", flags.prefill_concurrency),
        (
            "--prefill-concurrency-ramp-duration",
            flags.prefill_concurrency_ramp_duration,
        ),
        phase_concurrency(run, config),
        config.target.streaming,
    )?;
    Ok(PhaseShape {
        concurrency_ramp,
        rate_ramp,
        prefill,
    })
}

/// The concurrency the prefill limit may not exceed: the run's requests (or sessions) in
/// flight, or the cap of a rate (`None`: no cap).
fn phase_concurrency(run: &Run, config: &Config) -> Option<u32> {
    match config.load.mode {
        LoadMode::Concurrency => Some(config.load.concurrency.start),
        _ => run.cap,
    }
}

/// A prefill limit and its ramp: needs streaming, at most `concurrency`.
fn prefill(
    (flag, limit): (&str, Option<u32>),
    (ramp_flag, ramp): (&str, Option<f64>),
    concurrency: Option<u32>,
    streaming: bool,
) -> RunResult<Option<Prefill>> {
    let ramp = ramp.map(|s| seconds(ramp_flag, s)).transpose()?;
    let Some(limit) = limit else {
        return Ok(None);
    };
    if limit == 0 {
        return Err(RunError::bad_option(format!(
            "{flag} 0 would let no request start: give 1 or more."
        )));
    }
    if !streaming {
        return Err(RunError::bad_option(format!(
            "{flag} limits the requests waiting for their first token, which only a streamed answer tells: add --streaming."
        )));
    }
    if let Some(n) = concurrency.filter(|&n| limit > n) {
        return Err(RunError::bad_option(format!(
            "{flag} {limit} is above the concurrency {n}: give at most {n} (or raise --concurrency)."
        )));
    }
    Ok(Some(Prefill { limit, ramp }))
}

/// The warm-up's ramps and prefill limit, each falling back to the run's as in AIPerf.
fn warm_up_shape(run: &Run, config: &Config) -> RunResult<PhaseShape> {
    let flags = run.flags;
    let own = [
        (
            "--warmup-concurrency-ramp-duration",
            flags.warmup_concurrency_ramp_duration.is_some(),
        ),
        (
            "--warmup-request-rate-ramp-duration",
            flags.warmup_request_rate_ramp_duration.is_some(),
        ),
        (
            "--warmup-prefill-concurrency",
            flags.warmup_prefill_concurrency.is_some(),
        ),
        (
            "--warmup-prefill-concurrency-ramp-duration",
            flags.warmup_prefill_concurrency_ramp_duration.is_some(),
        ),
    ];
    let Some(warm_up) = &config.load.warm_up else {
        return match own.iter().find(|f| f.1) {
            Some((flag, _)) => Err(RunError::bad_option(format!(
                "{flag} shapes a warm-up, and none is asked: add --warmup-request-count N, --warmup-duration SECONDS or --num-warmup-sessions N."
            ))),
            None => Ok(PhaseShape::default()),
        };
    };
    let (rate, concurrency) = match warm_up.shape {
        WarmUpShape::Concurrency(n) => (false, Some(n)),
        WarmUpShape::Rate { cap, .. } => (true, cap),
    };
    let own_rate_ramp = flags.warmup_request_rate_ramp_duration;
    if own_rate_ramp.is_some() && !rate {
        return Err(RunError::bad_option(
            "--warmup-request-rate-ramp-duration ramps a warm-up rate: add --warmup-request-rate R, or drop it.",
        ));
    }
    let rate_ramp = match own_rate_ramp {
        Some(s) => Some(seconds("--warmup-request-rate-ramp-duration", s)?),
        // The run's ramp only where the warm-up has a rate (AIPerf drops it silently).
        None => run_rate_ramp(flags)?.filter(|_| rate),
    };
    let concurrency_ramp = match flags.warmup_concurrency_ramp_duration {
        Some(s) => Some(seconds("--warmup-concurrency-ramp-duration", s)?),
        None => flags
            .concurrency_ramp_duration
            .map(|s| seconds("--concurrency-ramp-duration", s))
            .transpose()?,
    };
    let (flag, limit) = match flags.warmup_prefill_concurrency {
        Some(n) => ("--warmup-prefill-concurrency", Some(n)),
        None => ("--prefill-concurrency", flags.prefill_concurrency),
    };
    let ramp = match flags.warmup_prefill_concurrency_ramp_duration {
        Some(s) => ("--warmup-prefill-concurrency-ramp-duration", Some(s)),
        None => (
            "--prefill-concurrency-ramp-duration",
            flags.prefill_concurrency_ramp_duration,
        ),
    };
    let prefill = prefill((flag, limit), ramp, concurrency, config.target.streaming)?;
    Ok(PhaseShape {
        concurrency_ramp,
        rate_ramp,
        prefill,
    })
}

/// The run's `--request-rate-ramp-duration`, read again for the warm-up.
fn run_rate_ramp(flags: &AiperfLoadModeArgs) -> RunResult<Option<Duration>> {
    flags
        .request_rate_ramp_duration
        .map(|s| seconds("--request-rate-ramp-duration", s))
        .transpose()
}

/// The flags that change nothing in this run, as AIPerf accepts them, one sentence each.
fn notes(run: &Run, config: &Config, modes: &LoadModes) -> Vec<String> {
    let flags = run.flags;
    let mut notes = Vec::new();
    let rate_without_cap = !matches!(config.load.mode, LoadMode::Concurrency) && run.cap.is_none();
    if flags.concurrency_ramp_duration.is_some() && rate_without_cap {
        notes.push("--concurrency-ramp-duration changed nothing: a rate without --concurrency has no concurrency to ramp (as in AIPerf).".to_string());
    }
    if flags.request_rate_ramp_duration.is_some() && modes.user_centric.is_some() {
        notes.push("--request-rate-ramp-duration changed nothing: a user-centric rate keeps each user's gap from the start (as in AIPerf).".to_string());
    }
    if flags.prefill_concurrency_ramp_duration.is_some() && flags.prefill_concurrency.is_none() {
        notes.push("--prefill-concurrency-ramp-duration changed nothing: there is no --prefill-concurrency to ramp (as in AIPerf).".to_string());
    }
    if modes.user_centric.is_some() && run.args.aiperf.request_rate.is_some() {
        notes.push(
            "--request-rate was not used: --user-centric-rate sets the rate (as in AIPerf)."
                .to_string(),
        );
    }
    notes
}

/// The measured-phase shapes act on one measurement (a count, sessions, a duration or a
/// fixed schedule), as AIPerf's phase: never on perf_analyzer's stable windows.
fn check_one_measurement(config: &Config, flags: &AiperfLoadModeArgs) -> RunResult<()> {
    let load = &config.load;
    let one = load.request_count.is_some()
        || load.session_count.is_some()
        || config.measure.benchmark_duration.is_some()
        || load.mode == LoadMode::FixedSchedule;
    let needs_one = [
        (
            "--concurrency-ramp-duration",
            flags.concurrency_ramp_duration.is_some(),
        ),
        (
            "--request-rate-ramp-duration",
            flags.request_rate_ramp_duration.is_some(),
        ),
        (
            "--prefill-concurrency-ramp-duration",
            flags.prefill_concurrency_ramp_duration.is_some(),
        ),
        ("--user-centric-rate", flags.user_centric_rate.is_some()),
        ("--request-rate-series", flags.request_rate_series.is_some()),
        ("--slice-duration", flags.slice_duration.is_some()),
        (
            "--failed-request-threshold",
            flags.failed_request_threshold.is_some(),
        ),
    ];
    match needs_one.iter().find(|f| f.1) {
        Some((flag, _)) if !one => Err(RunError::bad_option(format!(
            "{flag} shapes one measurement of a request count or a duration, as AIPerf's: add --request-count N or --benchmark-duration SECONDS."
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "aiperf_modes_tests.rs"]
mod tests;
