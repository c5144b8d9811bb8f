//! The load-mode flags: which of concurrency, request rate, intervals file, fixed schedule,
//! periodic concurrency or load over time (`--ramp`, `--load-steps`) a run uses, with perf_analyzer's rule that only
//! one may be given, and the levels each sweeps (linearly, or by `--binary-search`).

use std::path::Path;
use std::time::Duration;

pub use super::arrival::ArrivalPattern;
use super::timeline::{parse_load_steps, parse_ramp};
use super::timeline::{Timeline, TimelineKind};
use crate::cli::ProfileArgs;
use crate::config::{parse_concurrency_range, ConcurrencyRange, Config};
use inferperf_wire::error::{RunError, RunResult};

/// The load a level applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadLevel {
    /// Closed loop: this many requests in flight.
    Concurrency(u32),
    /// Open loop: this many requests per second.
    Rate(f64),
}

impl LoadLevel {
    /// The value as perf_analyzer prints it in the CSV's first column.
    pub fn csv_value(&self) -> String {
        match self {
            LoadLevel::Concurrency(c) => c.to_string(),
            LoadLevel::Rate(r) => format_rate(*r),
        }
    }
}

/// Prints a rate without a trailing ".0" for whole numbers (`100`, `12.5`).
pub fn format_rate(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("{}", rate as u64)
    } else {
        format!("{rate}")
    }
}

/// An inclusive `start:end:step` sweep of request rates (requests per second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateRange {
    pub start: f64,
    /// 0 means "keep increasing until the latency limit is hit".
    pub end: f64,
    pub step: f64,
}

/// `--periodic-concurrency-range START:END:STEP` with `--request-period N`: START requests,
/// then STEP more whenever every request of the latest set has had N answers, until END
/// requests were started in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodicRange {
    pub start: u32,
    pub end: u32,
    pub step: u32,
    pub period: u32,
}

/// Default of `--request-period`, as perf_analyzer's.
pub const DEFAULT_REQUEST_PERIOD: u32 = 10;
/// Most requests a periodic run may start (each holds a stream open).
const MAX_PERIODIC: u32 = 100_000;

/// How load is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadMode {
    /// Closed loop over `Config::concurrency`.
    Concurrency,
    /// Open loop at each rate of the range.
    RequestRate {
        range: RateRange,
        distribution: ArrivalPattern,
    },
    /// Open loop with gaps from a file, looped; one level.
    Intervals { gaps: Vec<Duration> },
    /// Open loop replaying the input data's timestamps once; one level.
    FixedSchedule,
    /// Load that changes over time, reported per second rather than as levels.
    Timeline {
        plan: Timeline,
        distribution: ArrivalPattern,
    },
    /// Sets of streamed requests started as the previous set's answers come; one level.
    Periodic(PeriodicRange),
}

impl LoadMode {
    pub fn is_open_loop(&self) -> bool {
        match self {
            LoadMode::Concurrency | LoadMode::Periodic(_) => false,
            LoadMode::Timeline { plan, .. } => plan.kind == TimelineKind::Rate,
            _ => true,
        }
    }

    /// The plan of `--ramp` or `--load-steps`, if this run follows one.
    pub fn timeline(&self) -> Option<&Timeline> {
        match self {
            LoadMode::Timeline { plan, .. } => Some(plan),
            _ => None,
        }
    }
}

impl Config {
    /// The rules on `--binary-search` and `--slo`: they search a concurrency or rate range.
    /// A range without an end (`1:0`) sweeps until the latency limit stops it; with no limit
    /// it would never stop, which perf_analyzer refuses too.
    fn check_endless(&self) -> RunResult<()> {
        let open_end = match &self.load.mode {
            LoadMode::Concurrency if self.load.concurrency.end == 0 => {
                Some("--concurrency-range 1:64")
            }
            LoadMode::RequestRate { range, .. } if range.end == 0.0 => {
                Some("--request-rate-range 100:1000:100")
            }
            _ => None,
        };
        if let Some(example) = open_end {
            if self.measure.latency_threshold_ms.is_none() && self.measure.slo.is_empty() {
                let flag = example.split(' ').next().unwrap_or(example);
                return Err(RunError::bad_option(format!(
                    "{flag}: the range's end is 0 (no end) and there is no latency limit, so the sweep would never stop: give an end (e.g. {example}) or a limit (-l MS or --slo 'p99<=50ms')."
                )));
            }
        }
        Ok(())
    }

    pub(in crate::config) fn check_search(&self) -> RunResult<()> {
        let searchable = matches!(
            self.load.mode,
            LoadMode::Concurrency | LoadMode::RequestRate { .. }
        );
        if !self.measure.slo.is_empty() && !searchable {
            return Err(RunError::bad_option(
                "--slo judges the levels of --concurrency-range or --request-rate-range; it does not apply to this load mode.",
            ));
        }
        self.check_endless()?;
        if !self.load.binary_search {
            return Ok(());
        }
        if !searchable {
            return Err(RunError::bad_option(
                "--binary-search bisects --concurrency-range or --request-rate-range: give one of them as START:END[:STEP].",
            ));
        }
        let (start, end) = match &self.load.mode {
            LoadMode::RequestRate { range, .. } => (range.start, range.end),
            _ => (
                self.load.concurrency.start as f64,
                self.load.concurrency.end as f64,
            ),
        };
        if end <= start {
            return Err(RunError::bad_option(
                "--binary-search needs a range with an end above its start (e.g. --concurrency-range 1:64 or --request-rate-range 100:2000:50).",
            ));
        }
        if self.measure.latency_threshold_ms.is_none() && self.measure.slo.is_empty() {
            return Err(RunError::bad_option(
                "--binary-search needs a criterion to search for: add -l MS (latency threshold) or --slo 'p99<=50ms'.",
            ));
        }
        Ok(())
    }

    /// Periodic concurrency measures the answers of streams: it needs `--streaming`, and
    /// takes neither a request count nor a warm-up.
    pub(in crate::config) fn check_periodic(&self) -> RunResult<()> {
        if !matches!(self.load.mode, LoadMode::Periodic(_)) {
            return Ok(());
        }
        if !self.target.streaming {
            return Err(RunError::bad_option(
                "--periodic-concurrency-range counts the answers of streamed requests: add -i grpc --streaming.",
            ));
        }
        if self.load.request_count.is_some() || self.load.warm_up.is_some() {
            return Err(RunError::bad_option(
                "--periodic-concurrency-range starts its own requests and measures them all in one window: drop --request-count and the warm-up flags.",
            ));
        }
        Ok(())
    }

    /// Load over time is reported per second: the options of stable levels do not apply.
    pub(in crate::config) fn check_timeline(&self) -> RunResult<()> {
        if self.load.mode.timeline().is_none() {
            return Ok(());
        }
        let conflicts = [
            ("-l", self.measure.latency_threshold_ms.is_some()),
            ("--request-count", self.load.request_count.is_some()),
            ("--warmup-request-count", self.load.warmup_request_count > 0),
            ("--warmup-duration", self.load.warm_up.is_some()),
        ];
        if let Some((flag, _)) = conflicts.iter().find(|c| c.1) {
            return Err(RunError::bad_option(format!(
                "{flag} applies to stable levels; --ramp and --load-steps report every second instead: drop {flag}."
            )));
        }
        Ok(())
    }
}

/// Reads the load-mode flags; more than one mode is a bad option, as in perf_analyzer.
pub(in crate::config) fn parse_load(args: &ProfileArgs) -> RunResult<(LoadMode, ConcurrencyRange)> {
    let concurrency_text = concurrency_flags(args)?;
    let modes = [
        ("--concurrency-range", concurrency_text.is_some()),
        ("--request-rate-range", args.request_rate_range.is_some()),
        ("--request-intervals", args.request_intervals.is_some()),
        ("--fixed-schedule", args.fixed_schedule),
        ("--load-steps", args.load_steps.is_some()),
        (
            "--periodic-concurrency-range",
            args.periodic_concurrency_range.is_some(),
        ),
    ];
    let given: Vec<&str> = modes.iter().filter(|m| m.1).map(|m| m.0).collect();
    if given.len() > 1 {
        return Err(RunError::bad_option(format!(
            "Cannot use both {} and {} inference load modes: choose one.",
            given[0], given[1]
        )));
    }
    let concurrency = match &concurrency_text {
        Some(_) if args.ramp.is_some() => ConcurrencyRange {
            start: 1,
            end: 1,
            step: 1,
        },
        Some(text) => parse_concurrency_range(text)?,
        None => ConcurrencyRange {
            start: 1,
            end: 1,
            step: 1,
        },
    };
    let distribution = super::arrival::parse_distribution(args)?;
    let mode = if let Some(plan) = timeline_flags(args, concurrency_text.as_deref())? {
        LoadMode::Timeline { plan, distribution }
    } else if let Some(text) = &args.request_rate_range {
        LoadMode::RequestRate {
            range: parse_rate_range(text)?,
            distribution,
        }
    } else if let Some(path) = &args.request_intervals {
        LoadMode::Intervals {
            gaps: read_intervals(path)?,
        }
    } else if args.fixed_schedule {
        LoadMode::FixedSchedule
    } else if let Some(text) = &args.periodic_concurrency_range {
        LoadMode::Periodic(parse_periodic(text, args.request_period)?)
    } else {
        LoadMode::Concurrency
    };
    if args.request_period.is_some() && !matches!(mode, LoadMode::Periodic(_)) {
        return Err(RunError::bad_option(
            "--request-period paces --periodic-concurrency-range: add --periodic-concurrency-range START:END:STEP, or drop --request-period.",
        ));
    }
    if args.max_concurrency.is_some() && !mode.is_open_loop() {
        return Err(RunError::bad_option(
            "--max-concurrency caps an open loop: use it with --request-rate-range, --request-intervals or --fixed-schedule (for a closed loop use --concurrency-range).",
        ));
    }
    Ok((mode, concurrency))
}

/// The plan of `--ramp` (over the concurrency or rate range) or `--load-steps`, if given.
fn timeline_flags(args: &ProfileArgs, concurrency: Option<&str>) -> RunResult<Option<Timeline>> {
    match (&args.ramp, &args.load_steps) {
        (Some(_), Some(_)) => Err(RunError::bad_option(
            "--ramp and --load-steps both plan load over time: choose one (a ramp is also a step, e.g. rate=100..1000:30s).",
        )),
        (Some(duration), None) => {
            parse_ramp(duration, concurrency, args.request_rate_range.as_deref()).map(Some)
        }
        (None, Some(steps)) => parse_load_steps(steps).map(Some),
        (None, None) => Ok(None),
    }
}

/// `--concurrency-range`, or its perf_analyzer predecessors: `-t S` the start, `-c E` the
/// end (from 1 when -t is absent), `-d` concurrency mode with an open end unless -c gives one.
fn concurrency_flags(args: &ProfileArgs) -> RunResult<Option<String>> {
    let (start, dynamic, end) = (
        args.old_concurrency,
        args.old_dynamic_concurrency,
        args.old_max_concurrency,
    );
    let old = match (start, dynamic, end) {
        (None, false, None) => None,
        (Some(0), ..) => return Err(RunError::bad_option(
            "-t is 0: give a concurrency of at least 1 (-t is the start of --concurrency-range).",
        )),
        (start, dynamic, end) => {
            let start = start.unwrap_or(1);
            let end = end.unwrap_or(if dynamic { 0 } else { start });
            Some(match start == end {
                true => start.to_string(),
                false => format!("{start}:{end}"),
            })
        }
    };
    match (&args.concurrency_range, old) {
        (Some(_), Some(_)) => Err(RunError::bad_option(
            "--concurrency-range and the old -t/-c/-d flags both set concurrency: keep --concurrency-range.",
        )),
        (Some(range), None) => Ok(Some(range.clone())),
        (None, old) => Ok(old),
    }
}

/// Parses `--periodic-concurrency-range START:END:STEP` (whole numbers, START and STEP at
/// least 1, END at least START) and `--request-period`.
fn parse_periodic(text: &str, period: Option<u64>) -> RunResult<PeriodicRange> {
    let bad = || {
        RunError::bad_option(format!(
            "--periodic-concurrency-range '{text}' is not START:END:STEP with whole numbers, START and STEP at least 1 and END at least START (e.g. 10:100:30)."
        ))
    };
    let (start, end, step) = crate::config::whole_range(text).ok_or_else(bad)?;
    if start == 0 || step == 0 || end < start {
        return Err(bad());
    }
    if end > MAX_PERIODIC {
        return Err(RunError::bad_option(format!(
            "--periodic-concurrency-range '{text}': at most {MAX_PERIODIC} requests in all (each holds a stream open)."
        )));
    }
    let period = match period {
        None => DEFAULT_REQUEST_PERIOD,
        Some(n) if (1..=u32::MAX as u64).contains(&n) => n as u32,
        Some(n) => {
            return Err(RunError::bad_option(format!(
                "--request-period {n} must be a number of answers, at least 1."
            )))
        }
    };
    Ok(PeriodicRange {
        start,
        end,
        step,
        period,
    })
}

/// Parses `start[:end[:step]]` of positive rates; with only a start, end = start.
pub fn parse_rate_range(text: &str) -> RunResult<RateRange> {
    let bad = || {
        RunError::bad_option(format!(
            "--request-rate-range '{text}' is not start[:end[:step]] in requests per second (e.g. 100 or 100:1000:100)."
        ))
    };
    let parts: Vec<&str> = text.split(':').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(bad());
    }
    // Each part a rate (the end may be 0: no end), named by its place.
    let names = ["start", "end", "step"];
    let mut rates = [0.0; 3];
    for (i, part) in parts.iter().enumerate() {
        let what = format!("--request-rate-range '{text}': the {}", names[i]);
        let value = part.trim().parse::<f64>().map_err(|_| bad())?;
        rates[i] = match (i, value) {
            (1, 0.0) => 0.0,
            (_, v) => crate::config::bounds::rate(v, &what)?,
        };
    }
    let (start, end, step) = match parts.len() {
        1 => (rates[0], rates[0], 1.0),
        2 => (rates[0], rates[1], 1.0),
        _ => (rates[0], rates[1], rates[2]),
    };
    if end != 0.0 && end < start {
        return Err(RunError::bad_option(format!(
            "--request-rate-range '{text}': the end is below the start."
        )));
    }
    Ok(RateRange { start, end, step })
}

/// The longest gap of `--request-intervals`, µs: a day.
const MAX_GAP_US: f64 = 86_400e6;

/// Reads `--request-intervals`: one gap in microseconds per line (blank lines ignored).
fn read_intervals(path: &Path) -> RunResult<Vec<Duration>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        RunError::bad_option(format!(
            "--request-intervals {}: cannot read the file ({e}).",
            path.display()
        ))
    })?;
    let mut gaps = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let what = format!(
            "--request-intervals {} line {}: the gap",
            path.display(),
            index + 1
        );
        let micros = inferperf_wire::number::parse_within(&what, line, 0.0, MAX_GAP_US, "µs")?;
        gaps.push(inferperf_wire::number::saturating_secs(micros / 1e6));
    }
    if gaps.is_empty() || gaps.iter().all(Duration::is_zero) {
        return Err(RunError::bad_option(format!(
            "--request-intervals {}: the file has no gaps above 0 microseconds.",
            path.display()
        )));
    }
    Ok(gaps)
}
