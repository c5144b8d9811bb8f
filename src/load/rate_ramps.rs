//! AIPerf's rate ramp and `--request-rate-series` as the segments of a [`RateCurve`]: a
//! rate ramp starts at rate·0.1/duration and is moved every 0.1 s to where the line from
//! there to the rate is; a series is moved every 0.1 s to its points' line, from the end of
//! any rate ramp, and holds its last rate. The open-loop schedule places requests along
//! them with the run's arrival pattern.

use std::time::Duration;

use super::curve::RateCurve;
use super::schedule::Schedule;
use crate::config::rate_series::RateSeries;
use crate::config::{ArrivalPattern, LoadConfig, LoadMode, Segment};

/// AIPerf's interval between two moves of a rate (`RATE_RAMP_UPDATE_INTERVAL`).
pub const RATE_UPDATE_S: f64 = 0.1;
/// How long the last rate is held: longer than any measurement (a day at most).
pub(super) const HOLD: Duration = Duration::from_secs(3 * 24 * 3600);

/// The segments of a rate of `rate` requests per second with AIPerf's ramp over `ramp`
/// and then `series` (else the rate), the last rate held.
pub fn rate_segments(
    rate: f64,
    ramp: Option<Duration>,
    series: Option<&RateSeries>,
) -> Vec<Segment> {
    let mut segments = Vec::new();
    if let Some(ramp) = ramp {
        let secs = ramp.as_secs_f64();
        let start = rate * RATE_UPDATE_S / secs;
        staircase(&mut segments, secs, |t| start + (rate - start) * t / secs);
    }
    let last = match series {
        Some(series) => {
            staircase(&mut segments, series.end_s(), |t| series.qps_at(t));
            series.qps_at(series.end_s())
        }
        None => rate,
    };
    segments.push(Segment {
        from: last,
        to: last,
        duration: HOLD,
    });
    segments
}

/// Steps of 0.1 s over `secs` (the last one cut at `secs`), each at `value` of its start.
fn staircase(segments: &mut Vec<Segment>, secs: f64, value: impl Fn(f64) -> f64) {
    let steps = ((secs / RATE_UPDATE_S) - 1e-9).ceil().max(0.0) as u64;
    for k in 0..steps {
        let from = k as f64 * RATE_UPDATE_S;
        let to = ((k + 1) as f64 * RATE_UPDATE_S).min(secs);
        let v = value(from);
        segments.push(Segment {
            from: v,
            to: v,
            duration: inferperf_wire::number::saturating_secs(to - from),
        });
    }
}

/// The schedule of a rate level with AIPerf's rate ramp or series (`None`: neither).
pub fn shaped_schedule(load: &LoadConfig, rate: f64) -> Option<Schedule> {
    let modes = &load.modes;
    let series = modes.rate_series.as_ref();
    if modes.run.rate_ramp.is_none() && series.is_none() {
        return None;
    }
    let LoadMode::RequestRate { distribution, .. } = load.mode else {
        return None;
    };
    let segments = rate_segments(rate, modes.run.rate_ramp, series);
    Some(Schedule::Curve(match distribution {
        ArrivalPattern::Constant => RateCurve::new(segments, None),
        ArrivalPattern::Poisson => RateCurve::new(segments, Some(load.seed)),
        ArrivalPattern::Gamma { smoothness } => RateCurve::gamma(segments, smoothness, load.seed),
    }))
}
