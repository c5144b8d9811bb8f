//! The warm-up before the first level: what bounds it (requests, seconds, sessions — the
//! first reached ends it, as in AIPerf), what load it applies (the first level's, or
//! AIPerf's `--warmup-concurrency` / `--warmup-request-rate`), and how long its last answers
//! are waited for. Its requests are sent by a driver of their own and forgotten, so no
//! warm-up request is in any window whatever the load mode.

use std::time::Duration;

use super::arrival::ArrivalPattern;
use super::levels::{LoadMode, RateRange};
use crate::cli::ProfileArgs;
use crate::config::ConcurrencyRange;
use inferperf_wire::error::{RunError, RunResult};

/// The warm-up of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct WarmUp {
    /// `--warmup-request-count`: requests sent, then the warm-up ends.
    pub requests: Option<u64>,
    /// `--warmup-duration`: the warm-up sends for this long at most.
    pub duration: Option<Duration>,
    /// `--num-warmup-sessions`: multi-turn sessions played whole.
    pub sessions: Option<u64>,
    pub shape: WarmUpShape,
    /// How long the answers still due after the last warm-up send are waited for (`None`:
    /// until every one is answered, at most the request timeout).
    pub grace: Option<Duration>,
}

/// The load the warm-up applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WarmUpShape {
    /// Keep this many requests (or sessions) in flight.
    Concurrency(u32),
    /// Send at this rate, at most `cap` in flight.
    Rate {
        rate: f64,
        distribution: ArrivalPattern,
        cap: Option<u32>,
    },
}

/// The warm-up the flags ask for (`None`: none). `mode` and `concurrency` are the run's
/// load, whose first level a warm-up without a shape of its own applies.
pub(in crate::config) fn parse(
    args: &ProfileArgs,
    mode: &LoadMode,
    concurrency: &ConcurrencyRange,
) -> RunResult<Option<WarmUp>> {
    let flags = &args.aiperf_load;
    let requests = (args.warmup_request_count > 0)
        .then(|| crate::config::bounds::warmup_requests(args.warmup_request_count))
        .transpose()?;
    let duration = flags
        .warmup_duration
        .map(|s| crate::config::bounds::seconds_flag("--warmup-duration", s, 0.001))
        .transpose()?;
    let sessions = flags.num_warmup_sessions.filter(|&n| n > 0);
    if requests.is_none() && duration.is_none() && sessions.is_none() {
        return refuse_shape_without_bound(args).map(|_| None);
    }
    let grace = match &flags.warmup_grace_period {
        Some(_) if duration.is_none() => {
            return Err(RunError::bad_option(
                "--warmup-grace-period is the wait after a timed warm-up's last send: add --warmup-duration SECONDS, or drop it.",
            ))
        }
        Some(text) => grace_period(text, "--warmup-grace-period")?,
        None => None,
    };
    Ok(Some(WarmUp {
        requests,
        duration,
        sessions,
        shape: shape(args, mode, concurrency)?,
        grace,
    }))
}

/// The warm-up's load: a rate when one is given for it or the run's first level is one,
/// else a concurrency (its own, the first level's, or 1).
fn shape(
    args: &ProfileArgs,
    mode: &LoadMode,
    concurrency: &ConcurrencyRange,
) -> RunResult<WarmUpShape> {
    let flags = &args.aiperf_load;
    let (run_rate, run_distribution) = match mode {
        LoadMode::RequestRate {
            range: RateRange { start, .. },
            distribution,
        } => (Some(*start), *distribution),
        _ => (None, ArrivalPattern::Poisson),
    };
    if let Some(rate) = flags.warmup_request_rate.or(run_rate) {
        crate::config::bounds::rate(rate, "--warmup-request-rate")?;
        let distribution = match &flags.warmup_arrival_pattern {
            Some(pattern) => pattern_named(pattern)?,
            None => run_distribution,
        };
        let cap = flags.warmup_concurrency.or(args.max_concurrency);
        return Ok(WarmUpShape::Rate {
            rate,
            distribution,
            cap,
        });
    }
    if flags.warmup_arrival_pattern.is_some() {
        return Err(RunError::bad_option(
            "--warmup-arrival-pattern shapes the gaps of a warm-up rate: add --warmup-request-rate R (or --request-rate), or drop it.",
        ));
    }
    let run_concurrency = match mode {
        LoadMode::Concurrency => concurrency.start,
        _ => 1,
    };
    let n = flags.warmup_concurrency.unwrap_or(run_concurrency);
    if n == 0 {
        return Err(RunError::bad_option(
            "--warmup-concurrency 0 keeps no request in flight: give 1 or more.",
        ));
    }
    Ok(WarmUpShape::Concurrency(n))
}

/// AIPerf's warm-up patterns (gamma with the run's smoothness, or 1).
fn pattern_named(pattern: &str) -> RunResult<ArrivalPattern> {
    match pattern.trim().replace('_', "-").as_str() {
        "constant" => Ok(ArrivalPattern::Constant),
        "poisson" | "concurrency-burst" => Ok(ArrivalPattern::Poisson),
        "gamma" => Ok(ArrivalPattern::Gamma { smoothness: 1.0 }),
        other => Err(RunError::bad_option(format!(
            "--warmup-arrival-pattern '{other}' is unknown: use constant, poisson or gamma."
        ))),
    }
}

/// A warm-up shape without a warm-up: one sentence rather than a flag that does nothing.
fn refuse_shape_without_bound(args: &ProfileArgs) -> RunResult<()> {
    let flags = &args.aiperf_load;
    let given = [
        ("--warmup-concurrency", flags.warmup_concurrency.is_some()),
        ("--warmup-request-rate", flags.warmup_request_rate.is_some()),
        (
            "--warmup-arrival-pattern",
            flags.warmup_arrival_pattern.is_some(),
        ),
        ("--warmup-grace-period", flags.warmup_grace_period.is_some()),
    ];
    match given.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(RunError::bad_option(format!(
            "{flag} shapes a warm-up, and none is asked: add --warmup-request-count N, --warmup-duration SECONDS or --num-warmup-sessions N."
        ))),
        None => Ok(()),
    }
}

/// A grace period in seconds, or `inf` (`None`: wait for every answer).
pub(in crate::config) fn grace_period(text: &str, flag: &str) -> RunResult<Option<Duration>> {
    let text = text.trim();
    if matches!(text.to_ascii_lowercase().as_str(), "inf" | "infinity") {
        return Ok(None);
    }
    let seconds: f64 = text.parse().map_err(|_| {
        RunError::bad_option(format!(
            "{flag} '{text}' is not a number of seconds: give one such as 30, or inf."
        ))
    })?;
    if seconds == 0.0 {
        return Ok(Some(Duration::ZERO));
    }
    crate::config::bounds::seconds_flag(flag, seconds, 0.0).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_periods_are_seconds_or_inf() {
        assert_eq!(grace_period("inf", "--g").unwrap(), None);
        assert_eq!(
            grace_period("2.5", "--g").unwrap(),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(grace_period("0", "--g").unwrap(), Some(Duration::ZERO));
        let err = grace_period("1m", "--g").unwrap_err().to_string();
        assert!(err.contains("not a number of seconds"), "{err}");
    }

    #[test]
    fn patterns_take_dashes_or_underscores() {
        assert_eq!(pattern_named("constant").unwrap(), ArrivalPattern::Constant);
        assert_eq!(
            pattern_named("concurrency_burst").unwrap(),
            ArrivalPattern::Poisson
        );
        assert!(pattern_named("bursty").is_err());
    }
}
