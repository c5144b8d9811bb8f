//! How open-loop requests arrive and which of them the client cancels: perf_analyzer's
//! `--request-distribution` beside AIPerf's `--arrival-pattern` and `--arrival-smoothness`
//! (gamma arrivals), and AIPerf's `--request-cancellation-rate` and
//! `--request-cancellation-delay`. This exists so that the rules on how these flags combine
//! sit in one place, read once into an [`ArrivalPattern`] and a [`RequestCancellation`].

use std::time::Duration;

use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

/// Gaps between open-loop requests (`--request-distribution`, `--arrival-pattern`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalPattern {
    Constant,
    Poisson,
    /// Gamma gaps of this shape (`--arrival-smoothness`) and the rate's mean.
    Gamma {
        smoothness: f64,
    },
}

impl ArrivalPattern {
    /// The pattern's name, as the flags and the results file say it.
    pub fn name(&self) -> &'static str {
        match self {
            ArrivalPattern::Constant => "constant",
            ArrivalPattern::Poisson => "poisson",
            ArrivalPattern::Gamma { .. } => "gamma",
        }
    }

    /// Gamma's shape, for the pattern that has one.
    pub fn smoothness(&self) -> Option<f64> {
        match self {
            ArrivalPattern::Gamma { smoothness } => Some(*smoothness),
            _ => None,
        }
    }
}

/// Requests the client closes on purpose (`--request-cancellation-rate`): each send is
/// picked with `percent`% probability from `seed`, and a picked one is closed `delay`
/// after it was sent unless its answer came first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestCancellation {
    /// Percent of requests cancelled, above 0 and at most 100.
    pub percent: f64,
    /// From the send to the cancellation.
    pub delay: Duration,
    /// `--random-seed`: the same seed picks the same sends.
    pub seed: u64,
}

/// The longest `--request-cancellation-delay`: a day.
const MAX_CANCELLATION_DELAY_S: f64 = 86_400.0;

/// The gaps between open-loop requests: `--request-distribution` (perf_analyzer's, which
/// takes gamma too) or `--arrival-pattern` (AIPerf's; they must agree when both are given),
/// and gamma's shape `--arrival-smoothness`, which implies gamma as in AIPerf.
pub(in crate::config) fn parse_distribution(args: &ProfileArgs) -> RunResult<ArrivalPattern> {
    let perf_analyzer = args.request_distribution.as_deref();
    let aiperf = args.aiperf.arrival_pattern.as_deref();
    let smoothness = args.aiperf.arrival_smoothness;
    if let (Some(pa), Some(ai)) = (perf_analyzer, aiperf) {
        if pa != ai {
            return Err(RunError::bad_option(format!(
                "--request-distribution {pa} and --arrival-pattern {ai} name different arrivals: give one of them."
            )));
        }
    }
    let pattern = match (aiperf.or(perf_analyzer), smoothness) {
        (None, Some(_)) => "gamma",
        (None, None) => "constant",
        (Some(pattern), _) => pattern,
    };
    let flag = match aiperf {
        Some(_) => "--arrival-pattern",
        None => "--request-distribution",
    };
    match (pattern, smoothness) {
        ("constant", None) => Ok(ArrivalPattern::Constant),
        ("poisson", None) => Ok(ArrivalPattern::Poisson),
        ("gamma", given) => Ok(ArrivalPattern::Gamma {
            smoothness: parse_smoothness(given.unwrap_or(1.0))?,
        }),
        ("constant" | "poisson", Some(_)) => Err(RunError::bad_option(format!(
            "--arrival-smoothness shapes gamma arrivals, but {flag} is {pattern}: use --arrival-pattern gamma, or drop --arrival-smoothness."
        ))),
        (other, _) => Err(RunError::bad_option(format!(
            "{flag} '{other}' is unknown: use constant, poisson or gamma."
        ))),
    }
}

/// `--arrival-smoothness`: a finite shape above 0.
fn parse_smoothness(value: f64) -> RunResult<f64> {
    if value.is_finite() && value > 0.0 && value <= 1e6 {
        return Ok(value);
    }
    Err(RunError::bad_option(format!(
        "--arrival-smoothness is {value}: give a gamma shape above 0 (1 is Poisson, below 1 burstier, above 1 smoother), at most 1e6."
    )))
}

/// `--request-cancellation-rate` and `--request-cancellation-delay`; `None` when no
/// request is to be cancelled (a rate of 0, as in AIPerf).
pub(in crate::config) fn parse_cancellation(
    args: &ProfileArgs,
) -> RunResult<Option<RequestCancellation>> {
    let (rate, delay) = (
        args.aiperf.request_cancellation_rate,
        args.aiperf.request_cancellation_delay,
    );
    let Some(percent) = rate else {
        return match delay {
            Some(_) => Err(RunError::bad_option(
                "--request-cancellation-delay times the cancellations of --request-cancellation-rate: add --request-cancellation-rate PERCENT, or drop the delay.",
            )),
            None => Ok(None),
        };
    };
    if !(0.0..=100.0).contains(&percent) {
        return Err(RunError::bad_option(format!(
            "--request-cancellation-rate is {percent}: give a percent of requests from 0 to 100."
        )));
    }
    let seconds = delay.unwrap_or(0.0);
    if !(0.0..=MAX_CANCELLATION_DELAY_S).contains(&seconds) {
        return Err(RunError::bad_option(format!(
            "--request-cancellation-delay is {seconds}: give seconds from 0 to {MAX_CANCELLATION_DELAY_S}."
        )));
    }
    Ok((percent > 0.0).then(|| RequestCancellation {
        percent,
        delay: inferperf_wire::number::saturating_secs(seconds),
        seed: args.seed.unwrap_or(0),
    }))
}

#[cfg(test)]
#[path = "arrival_tests.rs"]
mod tests;
